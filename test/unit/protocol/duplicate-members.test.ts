// A member named twice in one object is found at any depth, however its names are written, and nothing else
// is taken for one: colons and quotes inside strings, `__proto__`, nesting past any recursion limit.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { namesAMemberTwice } from '../../../src/protocol/duplicate-members.js';

const twice = (text: string) => namesAMemberTwice(text, JSON.parse(text));

test('a member named twice, at the top or deep down, is found', () => {
  assert.equal(twice('{"jsonrpc":"2.0","id":1,"result":{},"result":{}}'), true);
  assert.equal(twice('{"id":1,"result":{"content":[],"isError":true,"isError":false}}'), true);
  assert.equal(twice('{"id":1,"result":{"structuredContent":{"rows":[{"ok":1},{"ok":1,"ok":2}]}}}'), true);
  // The same name written with an escape is the same name to JSON.parse.
  assert.equal(twice('{"id":1,"result":{"isError":true,"is\\u0045rror":false}}'), true);
  assert.equal(twice('{"__proto__":1,"__proto__":2}'), true);
});

test('well-formed answers are not: colons, quotes and escapes inside strings, empty objects, __proto__', () => {
  for (const text of [
    '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a: b, \\"c\\": {d: e}"}],"isError":false}}',
    '{"a:b":"c:d","\\":":"\\\\:","e":[{},[],{"f":null}],"g":{"h":{"i":{}}}}',
    '{"__proto__":{"x":1},"y":2}',
    '{ "spaced" : 1 , "out" : [ 1 , 2 ] }',
    '[{"a":1},{"a":1}]',
    '"a:b"',
    '{}',
  ]) assert.equal(twice(text), false, text);
});

test('an answer nested past any recursion limit is read (no stack overflow)', () => {
  const depth = 200_000;
  const deep = `{"id":1,"result":${'['.repeat(depth)}{"a":1,"b":2}${']'.repeat(depth)}}`;
  assert.equal(twice(deep), false);
  assert.equal(twice(deep.replace('"b":2', '"a":2')), true);
});
