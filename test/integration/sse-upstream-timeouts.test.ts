// A tool call on an upstream of the 2024-11-05 HTTP+SSE transport has the time a Streamable HTTP upstream
// gives it: `timeouts.headersMs` bounds the wait for headers (for SSE, the POST's own), and the whole
// answer is bounded by `callMs` (or the tool's own limit), however long that is (docs/configuration.md).
// Until 3 December an SSE upstream's calls all ended at headersMs (60 s by default): a long-running tool
// that answered after its progress failed there, and behind a Streamable HTTP upstream it succeeded.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startEverythingSse } from '../fixtures/upstreams/everything-http.js';
import { startGateway } from '../helpers/gateway.js';
import { connectV1, textOf } from '../helpers/v1-everything.js';

async function longCall(timeouts: Record<string, unknown>): Promise<string> {
  const up = await startEverythingSse();
  const gw = await startGateway({ upstreams: [{ name: 'ev', url: up.url, transport: 'sse', era: 'legacy', timeouts }] });
  const { client } = await connectV1(gw.url, { name: 'sse-timeouts', timeoutMs: 20_000 });
  try {
    const r = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } }, undefined, { timeout: 20_000, onprogress: () => {}, resetTimeoutOnProgress: true });
    return `ok: ${textOf(r)}`;
  } catch (err) {
    return `error: ${(err as Error).message}`;
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await up.close();
  }
}

test('a 2 s tool call outlives a headersMs of 1 s on an SSE upstream', async () => {
  assert.match(await longCall({ headersMs: 1_000 }), /^ok: Long running operation completed/);
});

test('callMs and a tool limit still bound it', async () => {
  assert.match(await longCall({ headersMs: 1_000, callMs: 800 }), /^error: /);
  assert.match(await longCall({ headersMs: 10_000, tools: { 'trigger-long-running-operation': 800 } }), /^error: /);
});
