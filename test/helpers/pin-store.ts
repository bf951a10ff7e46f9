// The pin book's store port over a real Store, for tests that build a PinBook by hand: what pinStore() in
// src/gateway.ts makes, without the store guard (a failure reaches the book as it is). A test that counts
// or slices one operation spreads this and overrides it. And the routes such a book pins.

import { createHash } from 'node:crypto';
import type { PinStore } from '../../src/approvals/pins.js';
import type { Route } from '../../src/pipeline/context.js';
import type { Store } from '../../src/store/store.js';

/** The route of tool `up/<name>` whose definition has this description. */
export function toolRoute(name: string, description: string): Route {
  const definition = { name, description };
  const definitionSha256 = createHash('sha256').update(JSON.stringify(definition)).digest('hex');
  return { kind: 'tools', ref: `up/${name}`, publicName: name, original: name, upstream: 'up', listed: true, params: [], definition, definitionSha256 };
}

export function pinStoreOver(s: Store): PinStore {
  return {
    get: (id) => s.getApproval(id),
    put: (id, doc, ttlMs) => s.putPin(id, doc, ttlMs),
    page: (after, limit) => s.listPinPage(after, limit),
    scan: (cursor, count) => s.scanApprovals(cursor, count),
    unindexedSince: (since) => s.unindexedPins(since),
    index: (id) => s.indexPin(id),
    claim: (key, digest, owner, leaseMs, ttlMs) => s.claimIdempotency(key, digest, owner, leaseMs, ttlMs),
    read: (key) => s.readIdempotency(key),
    release: (key, owner) => s.releaseIdempotency(key, owner),
    complete: (key, owner, response, ttlMs) => s.completeIdempotency(key, owner, response, ttlMs),
    audit: (entry) => s.appendAudit(entry),
  };
}
