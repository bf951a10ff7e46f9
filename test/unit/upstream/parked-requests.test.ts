// Parked MRTR calls (2026-07-28 mrtr.mdx §Server Requirements 4–5, §Security Considerations): a
// requestState is HMAC-signed, single-use, bound to the method and name it was issued for, and to the
// caller: another caller presenting it gets nothing, and it stays redeemable by its owner.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_PARKED, MAX_PARKED_PER_OWNER, ParkedRequests } from '../../../src/upstream/parked-requests.js';

interface Call {
  method: string;
  name: unknown;
  owner: string;
  expire(): void;
}

const call = (owner: string): Call => ({ method: 'tools/call', name: 'ask', owner, expire: () => {} });

describe('ParkedRequests', () => {
  it('redeems once, for the same method and name only', () => {
    const parked = new ParkedRequests<Call>(60_000);
    const state = parked.park(call('alice'));
    assert.equal(parked.take(state, 'prompts/get', 'ask'), undefined);
    assert.equal(parked.take(state, 'tools/call', 'other'), undefined);
    assert.equal(parked.take(state, 'tools/call', 'ask')?.owner, 'alice');
    assert.equal(parked.take(state, 'tools/call', 'ask'), undefined, 'single use');
    parked.clear();
  });

  it('a call parked again keeps its first deadline: empty retries cannot hold it past its wait', (t) => {
    // The clock is moved, not waited for: the expiry is judged against the deadlines themselves, however
    // slow the machine (slept retries ran late under load, and a retry late past 400 ms found it expired).
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    const parked = new ParkedRequests<Call>(400);
    let expired = 0;
    const value: Call = { method: 'tools/call', name: 'ask', owner: 'alice', expire: () => void expired++ };
    let state = parked.park(value);
    for (let i = 0; i < 3; i++) {
      t.mock.timers.tick(100);
      const taken = parked.take(state, 'tools/call', 'ask');
      assert.equal(taken, value);
      state = parked.park(taken!); // the retry lacked its answer: asked again
    }
    // 300 ms after the first park: its deadline is 100 ms away; the last park's own would be 400 ms away.
    t.mock.timers.tick(99);
    assert.equal(expired, 0, 'not before the first deadline');
    t.mock.timers.tick(1);
    assert.equal(expired, 1, 'expired 400 ms after the first park, not 400 ms after the last one (700 ms)');
    assert.equal(parked.take(state, 'tools/call', 'ask'), undefined);
  });

  it('refuses a forged signature', () => {
    const parked = new ParkedRequests<Call>(60_000);
    const state = parked.park(call('alice'));
    const forged = `${state.slice(0, state.indexOf('.'))}.${'A'.repeat(state.length - state.indexOf('.') - 1)}`;
    assert.equal(parked.take(forged, 'tools/call', 'ask'), undefined);
    parked.clear();
  });

  it("another caller cannot redeem or burn it; its owner still can", () => {
    const parked = new ParkedRequests<Call>(60_000);
    const state = parked.park(call('alice'));
    assert.equal(parked.take(state, 'tools/call', 'ask', (c) => c.owner === 'mallory'), undefined);
    assert.equal(parked.take(state, 'tools/call', 'ask', (c) => c.owner === 'alice')?.owner, 'alice');
    parked.clear();
  });

  it('bounds what one caller parks, giving up its oldest; others keep theirs', () => {
    // Each parked call holds an upstream request open for the whole wait while its client holds nothing:
    // until 3 December a caller could park any number.
    const parked = new ParkedRequests<Call>(60_000);
    const expired: string[] = [];
    const tracked = (owner: string, label: string): Call => ({ ...call(owner), expire: () => void expired.push(label) });
    const bobs = parked.park(tracked('bob', 'bob-0'));
    const states = Array.from({ length: MAX_PARKED_PER_OWNER + 3 }, (_, i) => parked.park(tracked('mallory', `mallory-${i}`)));
    assert.deepEqual(expired, ['mallory-0', 'mallory-1', 'mallory-2']);
    assert.equal(parked.size, MAX_PARKED_PER_OWNER + 1);
    assert.equal(parked.take(states[0]!, 'tools/call', 'ask', (c) => c.owner === 'mallory'), undefined, 'the one given up is refused as expired');
    assert.equal(parked.take(states.at(-1)!, 'tools/call', 'ask', (c) => c.owner === 'mallory')?.owner, 'mallory');
    assert.equal(parked.take(bobs, 'tools/call', 'ask', (c) => c.owner === 'bob')?.owner, 'bob');
    parked.clear();
  });

  it(`bounds what everyone parks together at ${MAX_PARKED}, giving up the oldest`, () => {
    const parked = new ParkedRequests<Call>(60_000);
    let expired = 0;
    for (let i = 0; i < MAX_PARKED + 10; i++) parked.park({ ...call(`caller-${i}`), expire: () => void expired++ });
    assert.equal(parked.size, MAX_PARKED);
    assert.equal(expired, 10);
    parked.clear();
  });
});

