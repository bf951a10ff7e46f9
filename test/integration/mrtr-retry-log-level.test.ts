// A modern client's MRTR retry through the legacy bridge is a request of its own: its log level, not the
// first request's, decides which log messages it gets. Spec: 2026-07-28/server/utilities/logging.mdx
// §Per-request log level (without `logLevel` the server MUST NOT send notifications/message for that
// request); 2026-07-28/basic/patterns/mrtr.mdx §Client Requirements (the retry is a new request, new id);
// GATEWAY-REQUIREMENTS §16.1 (`_meta`: filter notifications/message per request).
// Upstream: a real v1 SDK legacy server whose tool asks for a name, then logs, then answers.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { startV1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const up = await startV1HttpServer(
  (server) => {
    server.registerTool('ask-then-log', { description: 'Asks a name, logs, greets' }, async (extra) => {
      const answer = await extra.sendRequest({ method: 'elicitation/create', params: { message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } }, ElicitResultSchema);
      await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'logged after the answer' } });
      return { content: [{ type: 'text', text: `hello ${String(answer.content?.name)}` }] };
    });
  },
  { logging: {} },
);
const gw = await startGateway({ upstreams: [{ name: 'legacy', url: up.url, era: 'legacy' }] });
after(async () => {
  await gw.close();
  await up.close();
});

/** Every JSON-RPC message of an answer, JSON or SSE. */
function messagesOf(text: string): Array<Record<string, any>> {
  if (text.startsWith('{')) return [JSON.parse(text) as Record<string, any>];
  return text.split('\n').filter((l) => l.startsWith('data:') && l.length > 5).map((l) => JSON.parse(l.slice(5)) as Record<string, any>);
}

const FORM = { elicitation: { form: {} } };

async function call(id: number, logLevel: string | undefined, extra: Record<string, unknown> = {}) {
  const meta: Record<string, unknown> = { 'io.modelcontextprotocol/clientCapabilities': FORM };
  if (logLevel !== undefined) meta['io.modelcontextprotocol/logLevel'] = logLevel;
  const req = modernRequest(id, 'tools/call', { name: 'ask-then-log', arguments: {}, ...extra, _meta: meta });
  const res = await post(gw.url, req.body, req.headers);
  assert.equal(res.status, 200, res.text);
  const messages = messagesOf(res.text);
  const final = messages.find((m) => m.id === id);
  assert.ok(final, `an answer to request ${id}: ${res.text}`);
  return { final: final as Record<string, any>, logs: messages.filter((m) => m.method === 'notifications/message') };
}

/** Runs the first request with `firstLevel`, answers the question in a retry with `retryLevel`. */
async function askedThenRetried(firstLevel: string | undefined, retryLevel: string | undefined, ids: [number, number]) {
  const first = await call(ids[0], firstLevel);
  assert.equal(first.final.result?.resultType, 'input_required', JSON.stringify(first.final));
  const [key] = Object.keys(first.final.result.inputRequests);
  const retry = await call(ids[1], retryLevel, { requestState: first.final.result.requestState, inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } } });
  assert.equal(retry.final.result?.content?.[0]?.text, 'hello Ada', JSON.stringify(retry.final));
  return retry;
}

test('logging.mdx §Per-request log level: a retry without logLevel gets no log message, though its first request asked for debug', async () => {
  const retry = await askedThenRetried('debug', undefined, [1, 2]);
  assert.deepEqual(retry.logs, [], 'the retry named no logLevel: no notifications/message for it');
});

test('logging.mdx §Per-request log level: a retry that asks for info gets the info message its first request did not ask for', async () => {
  const retry = await askedThenRetried(undefined, 'info', [3, 4]);
  assert.equal(retry.logs.length, 1, 'the info message, at the retry\'s level');
  assert.equal(retry.logs[0]!.params.data, 'logged after the answer');
});

test('logging.mdx §Per-request log level: a retry that asks for error gets no info message, though its first request asked for debug', async () => {
  const retry = await askedThenRetried('debug', 'error', [5, 6]);
  assert.deepEqual(retry.logs, [], 'info is below error');
});
