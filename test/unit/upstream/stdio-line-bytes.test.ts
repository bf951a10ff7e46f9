// A stdio child's stdout line is bounded by its upstream's `maxMessageBytes` (docs/configuration.md: "one
// stdio line"), a number of bytes; the line is UTF-8 (2026-07-28/basic/transports/stdio.mdx: "Messages ...
// MUST be encoded in UTF-8"). Until 4 December the bound counted UTF-16 units of the decoded text, so a
// line of 3-byte characters (€, most CJK) was held up to 3 times the bytes configured. A real child (the
// stdio fake), a real StdioProcess.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { GatewayError } from '../../../src/errors.js';
import { createLogger } from '../../../src/log/logger.js';
import { StdioProcess } from '../../../src/upstream/stdio-process.js';

const FAKE = fileURLToPath(new URL('../../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const MAX = 65_536;

async function withChild(maxLineBytes: number, run: (proc: StdioProcess, logs: Array<Record<string, unknown>>) => Promise<void>): Promise<void> {
  const logs: Array<Record<string, unknown>> = [];
  const proc = new StdioProcess({ upstream: 'fake', command: [process.execPath, FAKE], env: {}, requestTimeoutMs: 10_000, maxLineBytes }, createLogger('info', (l) => void logs.push(JSON.parse(l) as Record<string, unknown>)));
  await proc.start();
  try {
    await run(proc, logs);
  } finally {
    await proc.stop(500);
  }
}

let n = 0;
function wide(proc: StdioProcess, count: number, char: string) {
  return proc.request({ jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name: 'wide-answer', arguments: { count, char } } });
}

test(`a line of 3-byte characters past ${MAX} bytes but not past ${MAX} UTF-16 units is dropped, and the call it answers fails at once`, async () => {
  await withChild(MAX, async (proc, logs) => {
    // 30 000 × "€" is 90 000 bytes of UTF-8 (30 000 UTF-16 units): over the bound.
    await assert.rejects(wide(proc, 30_000, '€'), (err: GatewayError) => err.code === 'GW_ERR_UPSTREAM_BAD_RESPONSE' && /maxMessageBytes \(65536\)/.test(err.message));
    assert.ok(logs.some((l) => l.msg === 'stdio upstream wrote an oversized line; dropped' && l.maxLineBytes === MAX));
    // 4-byte characters (2 UTF-16 units each): 12 000 × "😀" is 48 000 bytes, within the bound; 20 000 is 80 000, past it.
    const within = await wide(proc, 12_000, '😀');
    assert.equal((within.result as { content: Array<{ text: string }> }).content[0]!.text, '😀'.repeat(12_000));
    await assert.rejects(wide(proc, 20_000, '😀'), (err: GatewayError) => err.code === 'GW_ERR_UPSTREAM_BAD_RESPONSE');
    // The child is still read: the next line within the bound is answered.
    const after = await wide(proc, 21_000, '€');
    assert.equal((after.result as { content: Array<{ text: string }> }).content[0]!.text, '€'.repeat(21_000), '63 000 bytes, within the bound');
  });
});

test('a long line of multi-byte characters read in many pieces is whole: none is cut where a piece ends', async () => {
  await withChild(4 * 1024 * 1024, async (proc) => {
    for (const char of ['€', '😀', 'é']) {
      const answer = await wide(proc, 500_000, char);
      const text = (answer.result as { content: Array<{ text: string }> }).content[0]!.text;
      assert.equal(text.length, char.length * 500_000);
      assert.ok(text === char.repeat(500_000), `the ${char} line came back whole`);
    }
  });
});

test('a line of exactly maxMessageBytes is read; one byte more is dropped', async () => {
  await withChild(MAX, async (proc) => {
    // {"jsonrpc":"2.0","id":N,"result":{"content":[{"type":"text","text":"…"}]}} around count × "€".
    const id = n + 1;
    const frame = Buffer.byteLength(JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: '' }] } }));
    const fill = MAX - frame; // bytes of text that make the line exactly MAX bytes
    const threes = Math.floor(fill / 3);
    const ones = fill - threes * 3;
    const exact = await proc.request({ jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name: 'wide-answer', arguments: { count: 1, char: '€'.repeat(threes) + 'a'.repeat(ones) } } });
    assert.equal(Buffer.byteLength(JSON.stringify(exact)), MAX);
    const over = proc.request({ jsonrpc: '2.0', id: id + 1, method: 'tools/call', params: { name: 'wide-answer', arguments: { count: 1, char: '€'.repeat(threes) + 'a'.repeat(ones + 1) } } });
    n = id + 1;
    await assert.rejects(over, (err: GatewayError) => err instanceof GatewayError && err.code === 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  });
});
