// A stdio child's stderr goes to the log line by line (2026-07-28/basic/transports/stdio.mdx: "The server
// MAY write UTF-8 strings to its standard error (stderr) for logging purposes"). A program that ends its
// lines as Windows programs do (CRLF: a Python script with \r\n, a .NET server) had each line logged with
// a trailing carriage return until 4 December (`"line":"…\r"`), part of the line break, not of the line, so
// a search or an alert on the line's text missed it. A real child (the stdio fake), a real StdioProcess and
// logger.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../../src/log/logger.js';
import { StdioProcess } from '../../../src/upstream/stdio-process.js';

const FAKE = fileURLToPath(new URL('../../fixtures/upstreams/stdio-fake.mjs', import.meta.url));

test('stderr lines ending in \\r\\n are logged without the \\r, also when the \\n comes in a later write', async () => {
  const logs: Array<Record<string, unknown>> = [];
  const proc = new StdioProcess({ upstream: 'fake', command: [process.execPath, FAKE], env: {}, requestTimeoutMs: 10_000 }, createLogger('info', (l) => void logs.push(JSON.parse(l) as Record<string, unknown>)));
  await proc.start();
  try {
    const answer = await proc.request({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'crlf-stderr' } });
    assert.deepEqual(answer.result, { content: [{ type: 'text', text: 'written' }] });
  } finally {
    await proc.stop(500);
  }
  const lines = logs.filter((l) => l.msg === 'stdio upstream stderr').map((l) => l.line);
  assert.deepEqual(lines, ['stdio-fake ready', 'a windows line', 'another one', 'split at its end']);
});
