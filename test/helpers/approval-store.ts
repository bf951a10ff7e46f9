// The approval book's store port over a real Store, for tests that build an ApprovalBook by hand: what
// approvalStore() in src/gateway.ts makes, without the store guard (a failure reaches the book as it is)
// and without `renew`. A test that makes one operation fail on purpose spreads this and overrides it.

import type { ApprovalStore } from '../../src/approvals/book.js';
import type { Store } from '../../src/store/store.js';

export function approvalStoreOver(s: Store): ApprovalStore {
  return {
    put: (id, doc, ttlMs, index) => s.putApproval(id, doc, ttlMs, index),
    get: (id) => s.getApproval(id),
    list: () => s.listApprovals(),
    scan: (cursor, count) => s.scanApprovals(cursor, count),
    index: (id, entry, ttlMs, doc) => s.indexApproval(id, entry, ttlMs, doc),
    expired: (now) => s.expiredApprovals(now),
    unindexedSince: (since) => s.unindexedApprovals(since),
    pendingOf: (caller) => s.pendingApprovalsOf(caller),
    page: (after, limit, pendingOnly) => s.listApprovalPage(after, limit, pendingOnly),
    countPending: () => s.countPendingApprovals(),
    claim: (key, digest, owner, leaseMs, ttlMs) => s.claimIdempotency(key, digest, owner, leaseMs, ttlMs),
    read: (key) => s.readIdempotency(key),
    release: (key, owner) => s.releaseIdempotency(key, owner),
    complete: (key, owner, response, ttlMs) => s.completeIdempotency(key, owner, response, ttlMs),
    audit: (entry) => s.appendAudit(entry),
  };
}
