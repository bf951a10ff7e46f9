// canonicalJson: the same text for values that differ only in key order, and a text that is the JSON of
// the value (what a digest of it must be, and what the audit chain hashes). Properties over random JSON.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalJson } from '../../../src/protocol/canonical-json.js';

/** The same value with every object's keys in reverse order. */
function reordered(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reordered);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.keys(v).reverse().map((k) => [k, reordered((v as Record<string, unknown>)[k])]));
  return v;
}

test('parses back to the value, whatever the key order, and is independent of it', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const text = canonicalJson(v);
      assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(v)));
      assert.equal(canonicalJson(reordered(v)), text);
    }),
    { numRuns: 500 },
  );
});

test('sorts keys at every depth; leaves out undefined members as JSON does', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }), '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  assert.equal(canonicalJson({ a: undefined, b: 2 }), '{"b":2}');
  assert.equal(canonicalJson([undefined, 1]), '[null,1]');
  assert.equal(canonicalJson(undefined), 'null');
  assert.equal(canonicalJson('é"\n'), JSON.stringify('é"\n'));
  assert.equal(canonicalJson({ t: new Date(0) }), '{"t":"1970-01-01T00:00:00.000Z"}');
});
