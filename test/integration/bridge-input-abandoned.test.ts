// A legacy client in front of a modern upstream is asked the upstream's questions (elicitation, sampling, roots)
// as server-to-client requests on its call's SSE stream (GATEWAY-REQUIREMENTS §16.2 "MRTR ⇄ server-initiated
// requests"). Gatehouse waits for each answer at most sessions.inputTimeoutMs, and then gives up on it: the call
// ends with an error. It never told the client so: the client's handler (a form shown to its user, a sampling
// approval) went on waiting for an answer nothing would read, and the user answered into the void. A sender
// that stops waiting for a request SHOULD issue a cancellation notification for it (2025-11-25/basic/
// lifecycle.mdx §Timeouts; basic/utilities/cancellation.mdx), which the v1 SDK client turns into the abort of its
// handler's signal. Gatehouse now sends notifications/cancelled for its request before the call's error.
//
// Real parts: the v2 SDK modern server fixture (its ask-with-state tool elicits), the v1 SDK client.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/stdio-children.js';

/** What the client's elicitation handler saw: how often it was asked, and the reason its request was cancelled with. */
interface Asked {
  count: number;
  cancelledWith: unknown;
}

/**
 * A v1 SDK client of a gateway in front of the modern fixture, whose user is still looking at the form: its
 * elicitation handler ends only when the request is cancelled. Everything is closed after `body`.
 */
async function withSlowUser(name: string, inputTimeoutMs: number, body: (client: Client, asked: Asked) => Promise<void>): Promise<void> {
  const modern = await startModernServer();
  const gw = await startGateway({ upstreams: [{ name: 'm', url: modern.url }], sessions: { inputTimeoutMs } });
  const client = new Client({ name, version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const asked: Asked = { count: 0, cancelledWith: undefined };
  client.setRequestHandler(ElicitRequestSchema, (_req, extra) => {
    asked.count++;
    return new Promise((resolve) => {
      extra.signal.addEventListener('abort', () => {
        asked.cancelledWith = extra.signal.reason ?? 'aborted';
        resolve({ action: 'cancel' });
      });
    });
  });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)), { timeout: 10_000 });
    await body(client, asked);
  } finally {
    await client.close().catch(() => {});
    await gw.close();
    await modern.close();
  }
}

test('a question the legacy client did not answer within sessions.inputTimeoutMs is cancelled at the client, not left open', { timeout: 30_000 }, async () => {
  await withSlowUser('slow-user', 500, async (client, asked) => {
    // The call fails: the question went unanswered (GATEWAY-REQUIREMENTS §16.2: no inputResponses slot).
    await assert.rejects(client.callTool({ name: 'ask-with-state', arguments: {} }, undefined, { timeout: 10_000 }), /did not answer in time|no answer/i);
    assert.equal(asked.count, 1, 'the client was asked once');
    assert.ok(await waitUntil(() => asked.cancelledWith !== undefined, 3_000), 'the client was told Gatehouse no longer waits for its answer (notifications/cancelled)');
  });
});

test('a legacy client that cancels its call while it is being asked has the question cancelled too', { timeout: 30_000 }, async () => {
  await withSlowUser('changed-mind', 20_000, async (client, asked) => {
    const ac = new AbortController();
    // The v1 client sends notifications/cancelled for its tools/call (2025-11-25/basic/utilities/cancellation.mdx).
    const call = client.callTool({ name: 'ask-with-state', arguments: {} }, undefined, { timeout: 15_000, signal: ac.signal });
    assert.ok(await waitUntil(() => asked.count === 1, 10_000), 'the client was asked');
    ac.abort('the user closed the dialog');
    await assert.rejects(call);
    // The question belonged to the call: the client's handler learns that no answer is awaited any more.
    assert.ok(await waitUntil(() => asked.cancelledWith !== undefined, 3_000), 'the question was cancelled at the client');
  });
});
