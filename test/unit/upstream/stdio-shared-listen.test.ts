// The shared child of a modern stdio server takes every caller's requests under ids of Gatehouse's
// (stdio-messages.ts remapForShared). A listen the server ends gracefully closes with a result that names
// the listen (2026-07-28 subscriptions.mdx §Graceful Closure): the client must see its own id there, not
// Gatehouse's. The channel is scripted; the id mapping is what is under test.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateConfigObject } from '../../../src/config/load.js';
import type { StdioUpstreamConfig } from '../../../src/config/types.js';
import { createLogger } from '../../../src/log/logger.js';
import type { JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../../../src/protocol/jsonrpc.js';
import type { MessageChannel } from '../../../src/upstream/channel.js';
import { StdioMessages } from '../../../src/upstream/stdio-messages.js';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

/** A channel whose server ends every listen at once with the result the spec asks for. */
function endingListens(): MessageChannel {
  return {
    start: async () => {},
    request: async (msg: JsonRpcRequest): Promise<JsonRpcResponse> => ({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: msg.id } } }),
    hold: () => {},
    resume: () => {},
    abandon: () => {},
    send: () => {},
    stop: async () => {},
    onMessage: () => {},
    onExit: () => {},
    alive: true,
    pid: undefined,
    stoppedOnPurpose: false,
  };
}

test("a listen's closing result names the client's listen id, not Gatehouse's", async () => {
  const config = validateConfigObject({ upstreams: [{ name: 's', command: ['true'] }] }).upstreams[0] as StdioUpstreamConfig;
  const messages = new StdioMessages(config, createLogger('error', () => {}), undefined, { channel: endingListens });
  try {
    const principal = { subject: 'alice', scopes: [], groups: [], via: 'api_key' as const };
    const reply = await messages.post({ jsonrpc: '2.0', id: 7, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } }, {}, undefined, principal);
    const got: JsonRpcMessage[] = [];
    for await (const m of reply.messages) got.push(m);
    assert.deepEqual(got, [{ jsonrpc: '2.0', id: 7, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: 7 } } }]);
  } finally {
    await messages.close();
  }
});
