// topLevelMemberValue finds where a relayed answer's `result` starts, so the run id can be inserted into the
// upstream's bytes. It must find the envelope's own member and nothing that only looks like it, and say
// "not sure" (-1) wherever JSON.parse and a first match could disagree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { topLevelMemberValue } from '../../../src/protocol/json-member.js';

const at = (text: string, name = 'result'): string | undefined => {
  JSON.parse(text); // the scanner is only given text JSON.parse accepted
  const i = topLevelMemberValue(text, name);
  return i < 0 ? undefined : text.slice(i, i + 8);
};

test('finds the top-level member in any order and spacing', () => {
  assert.equal(at('{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'), '{"conten');
  assert.equal(at('{"result":{},"jsonrpc":"2.0","id":1}'), '{},"json');
  assert.equal(at(' {\n  "id" : 1 ,\n  "result" :\t{ "a": 1 }\n}\n'), '{ "a": 1');
  assert.equal(at('{"id":"x","result":[1,2]}'), '[1,2]}');
});

test('nested members, keys and values that only look like it are not the member', () => {
  assert.equal(at('{"id":"\\"result\\":{","result":{"x":1}}'), '{"x":1}}', 'inside a string with escaped quotes');
  assert.equal(at('{"error":{"data":{"result":{"y":2}}},"id":1}'), undefined, 'only a nested one');
  assert.equal(at('{"id":1,"extra":{"result":{"no":1}},"result":{"yes":1}}'), '{"yes":1', 'the nested one comes first');
  assert.equal(at('{"id":"result","x":"result"}'), undefined, 'values named like the key');
  assert.equal(at('{"id":1,"result":{"text":"a \\\\"},"z":"}"}'), '{"text":', 'escaped backslash before a quote, braces in strings');
  assert.equal(at('{"id":1,"a":[{"result":1},"result"],"result":{}}'), '{}}', 'inside arrays');
  assert.equal(at('{"a":"no escape here","b":"x\\"y\\\\","c":"\\\\","result":{"k":"\\""}}'), '{"k":"\\"', 'escapes met in later strings, an escaped backslash closing a string');
  assert.equal(at(`{"xs":[${Array.from({ length: 1000 }, (_, i) => `"s${i}"`).join(',')}],"result":{}}`), '{}}', 'many strings, no escape anywhere');
});

test('where JSON.parse and a first match could disagree, it declines', () => {
  assert.equal(at('{"result":{"a":1},"result":{"b":2}}'), undefined, 'duplicate member: JSON.parse keeps the last');
  assert.equal(at('{"\\u0072esult":{"a":1},"id":1}'), undefined, 'an escaped key that spells the name');
  assert.equal(at('{"id":1,"re\\nsult":{},"result":{}}'), undefined, 'any escaped top-level key');
  assert.equal(at('[{"result":{}}]'), undefined, 'not an object');
  assert.equal(at('"result"'), undefined);
});

test('keys other than "result"', () => {
  assert.equal(at('{"jsonrpc":"2.0","id":7}', 'id'), '7}');
  assert.equal(at('{"jsonrpc":"2.0","id":7}', '_meta'), undefined);
});
