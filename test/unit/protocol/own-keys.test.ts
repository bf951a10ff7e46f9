// Tables and merges keyed by names from the wire see only their own members (src/protocol/own-keys.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ownValue, setOwn, wireTable } from '../../../src/protocol/own-keys.js';
import { mergeCapabilities } from '../../../src/catalog/capabilities.js';
import { NAME_FIELD } from '../../../src/protocol/methods.js';
import { paramShapeProblem } from '../../../src/protocol/param-shapes.js';

const INHERITED = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__lookupGetter__'];

test('a wire table finds its own entries only, and cannot be changed', () => {
  const table = wireTable({ 'tools/call': 'name' });
  assert.equal(table['tools/call'], 'name');
  for (const name of INHERITED) assert.equal(table[name], undefined, name);
  assert.throws(() => ((table as Record<string, string>).x = 'y'));
  for (const name of INHERITED) assert.equal(NAME_FIELD[name], undefined, `NAME_FIELD.${name}`);
});

test('a message whose method is an inherited name has no field shapes to break on', () => {
  for (const method of INHERITED) {
    assert.equal(paramShapeProblem('request', { jsonrpc: '2.0', id: 1, method, params: { name: 'x' } }), undefined, method);
    assert.equal(paramShapeProblem('request', { jsonrpc: '2.0', id: 1, method }), undefined, method);
  }
});

test('ownValue ignores what an object inherits; setOwn keeps __proto__ as a member', () => {
  const target: Record<string, unknown> = {};
  assert.equal(ownValue(target, 'constructor'), undefined);
  assert.equal(ownValue(target, '__proto__'), undefined);
  setOwn(target, '__proto__', { a: 1 });
  setOwn(target, 'b', 2);
  assert.equal(Object.getPrototypeOf(target), Object.prototype, 'the prototype is not replaced');
  assert.deepEqual(ownValue(target, '__proto__'), { a: 1 });
  assert.equal(JSON.stringify(target), '{"__proto__":{"a":1},"b":2}');
});

test('capabilities named like inherited members merge as members, and Object.prototype is untouched', () => {
  const odd = JSON.parse('{"__proto__":{"polluted":true},"constructor":{"listChanged":true},"tools":{"listChanged":true}}') as Record<string, unknown>;
  const merged = mergeCapabilities([{ tools: {} }, odd, JSON.parse('{"__proto__":{"more":true}}') as Record<string, unknown>]);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(({} as Record<string, unknown>).more, undefined);
  assert.equal(JSON.stringify(merged), '{"tools":{"listChanged":true},"__proto__":{"polluted":true,"more":true},"constructor":{"listChanged":true}}');
});
