// A modern client's multi round-trip call through the catalog, to a modern member (which answers with an
// InputRequiredResult itself) and to a legacy member (whose elicitation/create the bridge turns into one).
// Spec: 2026-07-28/basic/patterns/mrtr.mdx (§InputRequiredResult, §Client Requirements: the retry is a new
// request with inputResponses and the same requestState); GATEWAY-REQUIREMENTS §16.1 "MRTR ⇄
// server-initiated requests". Real parts: a v2 SDK client, a v2 SDK modern-only server, server-everything.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startEverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startModernMatrixServer } from '../fixtures/upstreams/modern-matrix-server.js';
import { startGateway } from '../helpers/gateway.js';

const modern = await startModernMatrixServer();
const legacy = await startEverythingHttp();
const gw = await startGateway({ upstreams: [{ name: 'm', url: modern.url, era: 'modern' }, { name: 'l', url: legacy.url, era: 'legacy' }] });
after(async () => {
  await gw.close();
  await modern.close();
  await legacy.close();
});

for (const [member, tool] of [['modern', 'm_trigger-elicitation-request'], ['legacy', 'l_trigger-elicitation-request']] as const) {
  test(`mrtr.mdx: the ${member} member's question reaches the v2 client, and its answer reaches the member`, { timeout: 30_000 }, async () => {
    const client = new Client({ name: 'catalog-mrtr', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(String((req.params as { message?: unknown }).message));
      return { action: 'accept', content: { name: `Ada via ${member}`, check: true } } as never;
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: 10_000 });
    try {
      const result = (await client.callTool({ name: tool, arguments: {} }, { timeout: 20_000 })) as { content: Array<{ text?: string }> };
      assert.deepEqual(asked, ['Please provide inputs for the following fields:'], 'asked once');
      const text = result.content.map((c) => c.text ?? '').join('\n');
      assert.match(text, new RegExp(`- Name: Ada via ${member}`), text);
    } finally {
      await client.close();
    }
  });
}
