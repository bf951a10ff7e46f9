// The idempotency stage leaves nothing registered on a cancellation that outlives its call. An HTTP+SSE
// session's cancellation (an AbortSignal the session owns) is shared by every call on that session, so
// a listener left on it by each write call would pile up for as long as the session lives.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { Cancellation } from '../../../src/pipeline/cancellation.js';
import type { CallContext } from '../../../src/pipeline/context.js';
import { json } from '../../../src/pipeline/outcome.js';
import { compileIdempotencyStage, type IdempotencyStore } from '../../../src/policy/idempotency-stage.js';

/** Keys in memory: enough for the stage's happy path; the stores themselves have their contract suite. */
function memoryStore(): IdempotencyStore {
  const done = new Map<string, string>();
  return {
    kind: 'sqlite',
    claim: async () => ({ outcome: 'claimed' }),
    renew: async () => {},
    complete: async (key, _owner, response) => (done.set(key, response), true),
    release: async () => {},
    read: async () => undefined,
  };
}

test('a write call on a session leaves no abort listener on the session when it ends', async () => {
  const stage = compileIdempotencyStage({ requireKeys: true, ttlSeconds: 60, tools: [], exempt: [] }, memoryStore(), () => 1000);
  const session = new AbortController();
  for (let i = 0; i < 3; i++) {
    const ctx = {
      callId: `call-${i}`,
      method: 'tools/call',
      kind: 'request',
      message: { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'write', arguments: {}, _meta: { idempotencyKey: `key-0000000${i}` } } },
      principal: { subject: 'alice', scopes: [], groups: [], via: 'api_key' },
      route: { kind: 'tools', ref: 'crm/write', publicName: 'write', original: 'write', upstream: 'crm', listed: true, params: [], annotations: { readOnlyHint: false } },
      cancel: new Cancellation(session.signal),
      era: 'legacy',
    } as unknown as CallContext;
    assert.equal(stage.applies?.(ctx), true);
    const outcome = await stage.run(ctx, async () => json({ jsonrpc: '2.0', id: i, result: { content: [] } }));
    assert.equal(outcome.kind, 'json');
  }
  assert.equal(getEventListeners(session.signal, 'abort').length, 0);
});

test('an answer whose record was lost while it ran is withheld (503), not returned as if kept', async () => {
  // The README promises the answer is stored before it is returned; a store that finds the key no longer
  // this call's (its record expired, or another took it) says so, and the answer must not leave unkept.
  const lost: IdempotencyStore = { ...memoryStore(), complete: async () => false };
  const stage = compileIdempotencyStage({ requireKeys: true, ttlSeconds: 60, tools: [], exempt: [] }, lost, () => 1000);
  const ctx = {
    callId: 'call-lost',
    method: 'tools/call',
    kind: 'request',
    message: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'write', arguments: {}, _meta: { idempotencyKey: 'key-lost-0001' } } },
    principal: { subject: 'alice', scopes: [], groups: [], via: 'api_key' },
    route: { kind: 'tools', ref: 'crm/write', publicName: 'write', original: 'write', upstream: 'crm', listed: true, params: [], annotations: { readOnlyHint: false } },
    cancel: new Cancellation(),
    era: 'legacy',
  } as unknown as CallContext;
  const outcome = await stage.run(ctx, async () => json({ jsonrpc: '2.0', id: 1, result: { content: [] } }));
  assert.equal(outcome.kind, 'refused');
  assert.equal(outcome.kind === 'refused' && outcome.refusal.kind === 'failure' && outcome.refusal.error.code, 'GW_ERR_STATE_UNAVAILABLE');
});
