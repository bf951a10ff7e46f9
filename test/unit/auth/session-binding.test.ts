// The session binding on its own: ids are bound when issued and only then, each to one caller; ended
// bindings tell their owner why; caps and idle expiry never touch another caller's busy session.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SessionBinding } from '../../../src/auth/session-binding.js';
import type { Principal } from '../../../src/pipeline/principal.js';

const principal = (subject: string): Principal => ({ subject, scopes: [], groups: [], via: 'api_key', keyId: subject });
const alice = principal('key:alice');
const bob = principal('key:bob');

/** Each test closes its binding (the idle sweeper's timer). */
function binding(limits = { max: 10, idleTimeoutMs: 60_000 }): SessionBinding {
  return new SessionBinding(limits);
}

test('an id never issued is refused as unknown and is not remembered', () => {
  const b = binding();
  assert.deepEqual(b.admit('s-1', alice), { ok: false, reason: 'unknown' });
  assert.equal(b.size, 0);
  b.bind('s-1', alice);
  assert.equal(b.admit('s-1', alice).ok, true);
  b.close();
});

test('a bound id admits its owner only; others hear unknown, never that it exists', () => {
  const b = binding();
  b.bind('s-1', alice);
  assert.deepEqual(b.admit('s-1', bob), { ok: false, reason: 'unknown' });
  assert.equal(b.admit('s-1', alice).ok, true);
  b.end('s-1', 'client_closed');
  assert.deepEqual(b.admit('s-1', alice), { ok: false, reason: 'client_closed' });
  assert.deepEqual(b.admit('s-1', bob), { ok: false, reason: 'unknown' });
  b.close();
});

test('an id issued again belongs to whoever it was issued to last', () => {
  const b = binding();
  b.bind('s-1', alice);
  b.bind('s-1', bob);
  assert.equal(b.admit('s-1', bob).ok, true);
  assert.deepEqual(b.admit('s-1', alice), { ok: false, reason: 'unknown' });
  assert.equal(b.size, 1);
  b.close();
});

test('idle bindings end after the timeout unless a request or stream is open on them', () => {
  const b = binding({ max: 10, idleTimeoutMs: 1_000 });
  b.bind('idle', alice);
  b.bind('busy', alice);
  const leave = b.enter('busy', 'call');
  b.sweep(Date.now() + 5_000);
  assert.deepEqual(b.admit('idle', alice), { ok: false, reason: 'idle_timeout' });
  assert.equal(b.admit('busy', alice).ok, true);
  leave();
  b.sweep(Date.now() + 5_000);
  assert.deepEqual(b.admit('busy', alice), { ok: false, reason: 'idle_timeout' });
  b.close();
});

test("past sessions.max one caller's own oldest session ends, never another caller's", async () => {
  const b = binding({ max: 2, idleTimeoutMs: 60_000 });
  b.bind('bob-1', bob);
  for (const id of ['a-1', 'a-2', 'a-3']) {
    b.bind(id, alice);
    await new Promise((r) => setTimeout(r, 2));
  }
  assert.deepEqual(b.admit('a-1', alice), { ok: false, reason: 'session_cap' });
  assert.equal(b.admit('a-2', alice).ok, true);
  assert.equal(b.admit('a-3', alice).ok, true);
  assert.equal(b.admit('bob-1', bob).ok, true);
  b.close();
});

test('the owner is the whole caller: the same subject from another tenant or another kind of credential is someone else', () => {
  const b = binding();
  const token = (subject: string, tenant?: string): Principal => ({ subject, scopes: [], groups: [], via: 'jwt', ...(tenant !== undefined ? { tenant } : {}) });
  b.bind('s-1', token('u1', 'acme'));
  assert.deepEqual(b.admit('s-1', token('u1', 'globex')), { ok: false, reason: 'unknown' });
  assert.deepEqual(b.admit('s-1', token('u1')), { ok: false, reason: 'unknown' });
  assert.deepEqual(b.admit('s-1', { ...token('u1', 'acme'), via: 'introspection' }), { ok: false, reason: 'unknown' });
  assert.deepEqual(b.admit('s-1', token('u1', 'acme')), { ok: true, capabilities: {}, version: undefined });
  // Without a tenant on either side, the subject and the credential kind decide.
  b.bind('s-2', token('u2'));
  assert.equal(b.admit('s-2', token('u2')).ok, true);
  assert.equal(b.admit('s-2', token('u2', '')).ok, true, 'no tenant and an empty one are the same caller, as principalKey has it');
  b.close();
});

test("making room for a caller's next session ends an idle one, else one only listening, never one with a call in flight", async () => {
  const b = binding({ max: 2, idleTimeoutMs: 60_000 });
  const tick = () => new Promise((r) => setTimeout(r, 2));
  b.bind('bob-1', bob);
  b.bind('a-call', alice);
  b.enter('a-call', 'call');
  await tick();
  b.bind('a-stream', alice);
  b.enter('a-stream', 'stream');
  // Nothing of alice's is idle: the one only listening ends, the older busy one stays.
  const place = b.reserve(alice);
  assert.ok(place, 'room was made');
  assert.deepEqual(b.admit('a-stream', alice), { ok: false, reason: 'session_cap' });
  assert.equal(b.admit('a-call', alice).ok, true);
  // The place counts until the session it was held for is bound: a second initialize finds no room.
  assert.equal(b.reserve(alice), undefined);
  b.bind('a-new', alice);
  place();
  b.enter('a-new', 'call');
  // Every binding of alice's has a call in flight: refused, nothing ends; bob is untouched throughout.
  assert.equal(b.reserve(alice), undefined);
  assert.equal(b.admit('a-call', alice).ok, true);
  assert.equal(b.admit('a-new', alice).ok, true);
  assert.equal(b.admit('bob-1', bob).ok, true);
  assert.ok(b.reserve(bob), "another caller's own room is its own");
  b.close();
});

test("the version a session's initialize negotiated comes with its admissions, and an id issued again forgets it", () => {
  const b = binding();
  b.bind('s-1', alice);
  const before = b.admit('s-1', alice);
  assert.equal(before.ok && before.version, undefined);
  b.negotiated('s-1', '2025-06-18');
  const after = b.admit('s-1', alice);
  assert.equal(after.ok && after.version, '2025-06-18');
  // A new session under the same id negotiates anew.
  b.bind('s-1', alice);
  const again = b.admit('s-1', alice);
  assert.equal(again.ok && again.version, undefined);
  // An id no longer bound learns nothing.
  b.end('s-1', 'client_closed');
  b.negotiated('s-1', '2025-06-18');
  assert.deepEqual(b.admit('s-1', alice), { ok: false, reason: 'client_closed' });
  b.close();
});
