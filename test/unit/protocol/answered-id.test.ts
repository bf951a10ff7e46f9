// AnsweredIdScanner (src/protocol/answered-id.ts) reads which request a message answers from pieces of
// text it does not keep. Its answer must be JSON.parse's: the id of an object with `result` or `error`
// and no `method`, when that id is a string or a number; and nothing for text that is not such an object.
// Checked on generated messages cut into generated pieces, and on hand-picked shapes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AnsweredIdScanner } from '../../../src/protocol/answered-id.js';

/** What JSON.parse says the text answers. */
function oracle(text: string): unknown {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return undefined;
  const m = msg as Record<string, unknown>;
  if ('method' in m || !('result' in m || 'error' in m)) return undefined;
  return typeof m.id === 'string' || (typeof m.id === 'number' && Number.isFinite(m.id)) ? m.id : undefined;
}

function scan(pieces: string[]): unknown {
  const s = new AnsweredIdScanner();
  for (const p of pieces) s.feed(p);
  return s.answered();
}

/** `text` cut at the given places. */
function cut(text: string, at: number[]): string[] {
  const places = [...new Set(at.map((a) => a % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const p of places) {
    out.push(text.slice(from, p));
    from = p;
  }
  out.push(text.slice(from));
  return out;
}

const idValue = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string(), fc.string({ unit: 'grapheme' }), fc.constant(null), fc.boolean(), fc.constant({ nested: 1 }), fc.constant([1]));
const anyValue = fc.jsonValue({ maxDepth: 4 });
const member = fc.oneof(
  fc.tuple(fc.constant('id'), idValue),
  fc.tuple(fc.constant('result'), anyValue),
  fc.tuple(fc.constant('error'), anyValue),
  fc.tuple(fc.constant('method'), fc.string()),
  fc.tuple(fc.constant('jsonrpc'), fc.constant('2.0')),
  fc.tuple(fc.string(), anyValue),
);
/** An object written by hand so members may repeat (JSON.parse keeps the last), with optional white space and escaped names. */
const messageText = fc.tuple(fc.array(member, { maxLength: 6 }), fc.array(fc.constantFrom('', ' ', '\n', '\t', '  '), { minLength: 30, maxLength: 30 }), fc.boolean()).map(([members, ws, escapeNames]) => {
  const w = (i: number): string => ws[i % ws.length]!;
  const name = (n: string): string => (escapeNames && n === 'id' ? '"\\u0069d"' : JSON.stringify(n));
  return `${w(0)}{${w(1)}${members.map(([k, v], i) => `${name(k)}${w(i + 2)}:${w(i + 3)}${JSON.stringify(v)}${w(i + 4)}`).join(',')}}${w(5)}`;
});

test('the same answer as JSON.parse, on generated messages cut anywhere', () => {
  fc.assert(
    fc.property(messageText, fc.array(fc.nat(), { maxLength: 8 }), (text, at) => {
      assert.deepEqual(scan(cut(text, at)), oracle(text), text);
    }),
    { numRuns: 20_000 },
  );
});

// Nested values are stepped over, not checked, so of text broken inside them the scanner may still name the
// id of its top level; everywhere JSON.parse reads the text, and wherever it is cut short, they agree.
test('the same answer as JSON.parse on text cut short; on text with more after it, wherever JSON.parse reads it', () => {
  fc.assert(
    fc.property(messageText, fc.nat(), fc.string(), (text, n, junk) => {
      const shortened = text.slice(0, n % (text.length + 1));
      assert.deepEqual(scan([shortened]), oracle(shortened), shortened);
      const more = shortened + junk;
      let parses = true;
      try {
        JSON.parse(more);
      } catch {
        parses = false;
      }
      if (parses) assert.deepEqual(scan([more]), oracle(more), more);
    }),
    { numRuns: 20_000 },
  );
});

test('hand-picked shapes', () => {
  const cases: Array<[string, unknown]> = [
    ['{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}', 7],
    ['{"result":{"text":"} \\" { ] ["},"jsonrpc":"2.0","id":"call-1"}', 'call-1'],
    ['{"id":"a\\"b\\\\","error":{"code":-32603,"message":"x"}}', 'a"b\\'],
    ['{"id":7,"method":"sampling/createMessage","params":{"x":"y"}}', undefined],
    ['{"id":7,"params":{},"result":{},"method":"x"}', undefined],
    ['{"id":7}', undefined],
    ['{"id":7,"id":8,"result":1}', 8],
    ['{"id":{"nested":7},"result":1}', undefined],
    ['{"id":-1.5e3,"result":1}', -1500],
    ['{"id":true,"result":1}', undefined],
    ['[{"id":7,"result":1}]', undefined],
    ['{"id":7,"result":1}{"id":8,"result":1}', undefined],
    ['', undefined],
  ];
  for (const [text, expected] of cases) {
    assert.deepEqual(scan([text]), expected, text);
    assert.deepEqual(oracle(text), expected, `the oracle agrees on ${text}`);
    // One character at a time.
    assert.deepEqual(scan([...text]), expected, `${text}, a character at a time`);
  }
});

test('an answer of 20 MiB, its id at the end, is read without holding it', () => {
  const padding = 'x'.repeat(20 * 1024 * 1024);
  const s = new AnsweredIdScanner();
  s.feed('{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"');
  for (let i = 0; i < 20; i++) s.feed(padding.slice(i * 1024 * 1024, (i + 1) * 1024 * 1024));
  s.feed('"}]},"id":"the-call"}');
  assert.equal(s.answered(), 'the-call');
});
