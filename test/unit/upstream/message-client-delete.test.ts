// The DELETE that ends a legacy upstream session carries MCP-Protocol-Version only for revisions that have
// the header: it was introduced in 2025-06-18 (GATEWAY-REQUIREMENTS §0; 2025-11-25/basic/transports.mdx
// §Protocol Version Header), and 2025-03-26 and 2024-11-05 servers never saw it. The session's other
// requests already follow that rule (legacy-client-sessions.ts headersFor); the DELETE must match them.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Pool } from 'undici';
import { MessageClient } from '../../../src/upstream/message-client.js';
import { fixedLimits } from '../../../src/upstream/http-tunables.js';
import type { UpstreamCredentials } from '../../../src/upstream/credentials.js';
import { startFakeUpstream, type FakeUpstream } from '../../fixtures/upstreams/fake-upstream.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const noCredentials: UpstreamCredentials = { current: () => ({}), headers: async () => ({}), invalidate: () => {}, close: () => {} };

async function clientOf(): Promise<{ up: FakeUpstream; client: MessageClient }> {
  const up = await startFakeUpstream((_req, res) => void res.writeHead(200).end(), { handshake: false });
  const pool = new Pool(new URL(up.url).origin);
  cleanups.push(() => up.close(), () => pool.close());
  return { up, client: new MessageClient(fixedLimits(pool), '/mcp', noCredentials, 'up') };
}

test('DELETE of a 2025-03-26 or 2024-11-05 session carries no MCP-Protocol-Version; of a 2025-06-18 or later session it does', async () => {
  const { up, client } = await clientOf();
  for (const version of ['2025-03-26', '2024-11-05', '2025-06-18', '2025-11-25']) await client.deleteSession(`s-${version}`, version);
  const sent = up.requests.map((r) => [r.method, r.headers['mcp-session-id'], r.headers['mcp-protocol-version']]);
  assert.deepEqual(sent, [
    ['DELETE', 's-2025-03-26', undefined],
    ['DELETE', 's-2024-11-05', undefined],
    ['DELETE', 's-2025-06-18', '2025-06-18'],
    ['DELETE', 's-2025-11-25', '2025-11-25'],
  ]);
});
