// Gatehouse's own reads (lists) on a perSession child borrowed from a client's session go to that child
// under ids of Gatehouse's, among the client's own requests. Those ids were `gatehouse-guest-1`, `-2`, …: a
// client that sent such an id in its session collided with Gatehouse's list on its child (its request or
// the list refused as a duplicate id, or answered with the other's answer). They are now random.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateConfigObject } from '../../../src/config/load.js';
import type { StdioUpstreamConfig } from '../../../src/config/types.js';
import { createLogger } from '../../../src/log/logger.js';
import type { JsonRpcRequest } from '../../../src/protocol/jsonrpc.js';
import { StdioMessages } from '../../../src/upstream/stdio-messages.js';

test("Gatehouse's requests on a borrowed session take ids a client cannot guess, and the reply carries the caller's id", async () => {
  const config = validateConfigObject({ upstreams: [{ name: 's', command: ['true'] }] }).upstreams[0] as StdioUpstreamConfig;
  const messages = new StdioMessages(config, createLogger('error', () => {}));
  const seen: Array<string | number> = [];
  try {
    const lent = messages.lend({
      alive: () => true,
      request: async (m: JsonRpcRequest) => {
        seen.push(m.id);
        return { jsonrpc: '2.0', id: m.id, result: { tools: [] } };
      },
      send: () => {},
    });
    for (let i = 1; i <= 3; i++) {
      const reply = await messages.post({ jsonrpc: '2.0', id: i, method: 'tools/list', params: {} }, { 'mcp-session-id': lent });
      for await (const answer of reply.messages) assert.equal((answer as { id: unknown }).id, i);
    }
    assert.equal(seen.length, 3);
    assert.equal(new Set(seen).size, 3, 'each request its own id');
    for (const id of seen) {
      assert.equal(typeof id, 'string');
      assert.doesNotMatch(String(id), /^gatehouse-guest-\d+$/);
      // 122 random bits: nothing a client can send on purpose.
      assert.match(String(id), /^gatehouse-guest-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
  } finally {
    await messages.close();
  }
});
