// What Gatehouse has written to a stdio child that the child has not read waits in Gatehouse's memory, and
// that backlog is bounded by the upstream's `maxMessageBytes` (docs/configuration.md: "It also bounds what
// waits for a stdio child that is not reading its stdin"), a number of bytes. Until 4 December it was
// counted in the UTF-16 units of the strings written (a pipe's writableLength counts a string's length), so
// requests of 3-byte characters (€, most CJK) queued up to 3 times the bytes configured. A real child (the
// stdio fake, deaf: it stops reading its stdin), a real StdioProcess.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { GatewayError } from '../../../src/errors.js';
import { createLogger } from '../../../src/log/logger.js';
import { StdioProcess } from '../../../src/upstream/stdio-process.js';
import type { JsonRpcRequest } from '../../../src/protocol/jsonrpc.js';
import { waitUntil } from '../../helpers/stdio-children.js';

const FAKE = fileURLToPath(new URL('../../fixtures/upstreams/stdio-fake.mjs', import.meta.url));
const MAX = 1024 * 1024;
/** What the pipe and the child's own read buffer take before anything waits in Gatehouse (64 KiB each on Linux), with room to spare. */
const ABSORBED = 256 * 1024;
/** One request: 100 000 × "€", 300 000 bytes of UTF-8, 100 000 UTF-16 units. */
const PAD = '€'.repeat(100_000);

test(`requests of 3-byte characters queued for a child that reads nothing stop at maxMessageBytes (${MAX}) of bytes, not of UTF-16 units`, { timeout: 30_000 }, async () => {
  const logs: Array<Record<string, unknown>> = [];
  const proc = new StdioProcess({ upstream: 'fake', command: [process.execPath, FAKE], env: {}, requestTimeoutMs: 20_000, maxLineBytes: MAX }, createLogger('info', (l) => void logs.push(JSON.parse(l) as Record<string, unknown>)));
  await proc.start();
  const waiting: Array<Promise<unknown>> = [];
  try {
    waiting.push(proc.request({ jsonrpc: '2.0', id: 'deaf', method: 'tools/call', params: { name: 'deaf' } }).catch(() => {}));
    // The child reads no more once it says so on stderr.
    assert.ok(await waitUntil(() => logs.some((l) => l.msg === 'stdio upstream stderr' && l.line === 'deaf'), 5_000), 'the child never went deaf');
    let accepted = 0;
    let refused: GatewayError | undefined;
    for (let i = 0; i < 40 && refused === undefined; i++) {
      const msg: JsonRpcRequest = { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { pad: PAD } } };
      const answer = proc.request(msg);
      // A refusal is at once; a request written waits for an answer that does not come.
      const now = await Promise.race([answer.then(() => 'answered', (err: unknown) => err), new Promise((r) => setImmediate(() => r('waiting')))]);
      if (now instanceof GatewayError) refused = now;
      else {
        waiting.push(answer.catch(() => {}));
        accepted += Buffer.byteLength(JSON.stringify(msg) + '\n');
      }
    }
    assert.equal(refused?.code, 'GW_ERR_UPSTREAM_OVERLOADED', 'a request is refused once the backlog is past the bound');
    assert.ok(accepted <= ABSORBED + MAX + Buffer.byteLength(PAD) + 200, `bytes written for a child that reads nothing: ${accepted}, bound ${MAX} (+ what the pipe holds, + one request)`);
    const warned = logs.find((l) => l.msg === 'stdio upstream is not reading its input; nothing more is written to it until it does');
    assert.ok(warned !== undefined && (warned.waitingBytes as number) >= MAX && (warned.waitingBytes as number) <= MAX + Buffer.byteLength(PAD) + 200, JSON.stringify(warned));
  } finally {
    await proc.stop(500);
    await Promise.all(waiting);
  }
});
