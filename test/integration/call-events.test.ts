// What the pipeline's events say about a call, as the request log and the metrics show it (issue 11 item 5):
// the outcome words are the metrics' own (`ok`, `refused`, `client_error`, `upstream_error`, `aborted`,
// `tool_error`); a tool result with isError is a tool error, not ok; prompts/get is logged as a prompt;
// a refusal names its stage and code. Events are also visible to any other subscriber.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import { request } from 'undici';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

const TOOLS = [
  { name: 'ok', inputSchema: { type: 'object' } },
  { name: 'fails', inputSchema: { type: 'object' } },
  { name: 'typed', inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } },
];
const up = await startFakeUpstream((_req, res, body) => {
  const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string } };
  if (msg.id === undefined) return void res.writeHead(202).end();
  const result =
    msg.method === 'tools/list'
      ? { tools: TOOLS }
      : msg.method === 'prompts/list'
        ? { prompts: [{ name: 'greeting' }] }
        : msg.method === 'prompts/get'
          ? { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] }
          : { content: [{ type: 'text', text: msg.params?.name ?? '' }], ...(msg.params?.name === 'fails' ? { isError: true } : {}) };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { ...result, resultType: 'complete' } }));
}, { handshake: 'modern' });
const gw = await startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'modern' }], metrics: { enabled: true, port: 0 } });
after(async () => {
  await gw.close();
  await up.close();
});

async function call(id: number, method: string, params: Record<string, unknown>) {
  const req = modernRequest(id, method, params);
  return post(gw.url, req.body, req.headers);
}

/** The request line of `callId`, waited for (bounded): the log goes out in batches of a few milliseconds. */
async function lineFor(callId: string, logs = gw.logs): Promise<Record<string, unknown>> {
  const find = () => logs.find((l) => l.msg === 'request' && l.callId === callId);
  await waitUntil(() => find() !== undefined, 5_000);
  const line = find();
  assert.ok(line, `a request line for ${callId}`);
  return line;
}

test('a tool result with isError is tool_error; a plain one ok; prompts/get is logged as a prompt', async () => {
  const ok = await call(1, 'tools/call', { name: 'ok', arguments: {} });
  const fails = await call(2, 'tools/call', { name: 'fails', arguments: {} });
  const prompt = await call(3, 'prompts/get', { name: 'greeting' });
  assert.deepEqual([(await lineFor(String(ok.headers['x-gatehouse-call-id']))).outcome, (await lineFor(String(fails.headers['x-gatehouse-call-id']))).outcome], ['ok', 'tool_error']);
  const promptLine = await lineFor(String(prompt.headers['x-gatehouse-call-id']));
  assert.equal(promptLine.prompt, 'greeting');
  assert.equal(promptLine.tool, undefined);
  const metrics = await (await request(gw.gateway.metricsUrl!)).body.text();
  assert.match(metrics, /gatehouse_tool_calls_total\{tool="fails",outcome="tool_error",error_code=""\} 1/);
  assert.match(metrics, /gatehouse_requests_total\{method="prompts\/get",era="modern",upstream="up",outcome="ok"\} 1/);
});

test('a refusal is logged as refused, with its stage and code, and published with them', async () => {
  const seen: Array<{ stage: string; code: string }> = [];
  const listener = (m: unknown): void => void seen.push(m as { stage: string; code: string });
  diagnostics.subscribe('gatehouse:call:refused', listener);
  try {
    const res = await call(4, 'tools/call', { name: 'typed', arguments: { n: 'x' } });
    assert.equal(res.json().result.structuredContent.error.code, 'invalid_arguments');
    const line = await lineFor(String(res.headers['x-gatehouse-call-id']));
    assert.deepEqual([line.outcome, line.refusal, line.stage], ['refused', 'invalid_arguments', 'arguments']);
    assert.ok(seen.some((e) => e.stage === 'arguments' && e.code === 'invalid_arguments'));
  } finally {
    diagnostics.unsubscribe('gatehouse:call:refused', listener);
  }
});

test('relayed bytes (audit off, nothing holds the answer): a tool result with isError is still tool_error, and an error answer brings its code to the end event', async () => {
  const errors = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string } };
    if (msg.id === undefined) return void res.writeHead(202).end();
    const answer =
      msg.method === 'tools/list'
        ? { result: { tools: [{ name: 'fails', inputSchema: { type: 'object' } }, { name: 'refuses', inputSchema: { type: 'object' } }], resultType: 'complete' } }
        : msg.params?.name === 'fails'
          ? { result: { content: [{ type: 'text', text: 'broke' }], isError: true, resultType: 'complete' } }
          : { error: { code: -32050, message: 'not today' } };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...answer }));
  }, { handshake: 'modern' });
  const relay = await startGateway({ upstreams: [{ name: 'up', url: errors.url, era: 'modern' }], audit: { enabled: false } });
  const ends: Array<{ callId: string; outcome: string; rpcCode?: number }> = [];
  const listener = (m: unknown): void => void ends.push(m as (typeof ends)[number]);
  diagnostics.subscribe('gatehouse:call:end', listener);
  try {
    const send = (id: number, name: string) => {
      const req = modernRequest(id, 'tools/call', { name, arguments: {} });
      return post(relay.url, req.body, req.headers);
    };
    const fails = await send(1, 'fails');
    assert.equal(fails.json().result.isError, true);
    const refuses = await send(2, 'refuses');
    assert.equal(refuses.json().error.code, -32050);
    const endOf = (res: { headers: Record<string, unknown> }) => ends.find((e) => e.callId === String(res.headers['x-gatehouse-call-id']));
    assert.equal(endOf(fails)?.outcome, 'tool_error');
    assert.equal(endOf(refuses)?.rpcCode, -32050);
    assert.equal(endOf(fails)?.rpcCode, undefined);
    const line = relay.logs.find((l) => l.msg === 'request' && l.callId === String(fails.headers['x-gatehouse-call-id']));
    assert.equal(line?.outcome, 'tool_error');
  } finally {
    diagnostics.unsubscribe('gatehouse:call:end', listener);
    await relay.close();
    await errors.close();
  }
});

test('an upstream that fails the call is an upstream_error, with its code and stage upstream; the breaker that then refuses is refused', async () => {
  // A port nothing listens on any more: every call to it is GW_ERR_UPSTREAM_UNREACHABLE.
  const gone = await startFakeUpstream((_req, res) => void res.writeHead(500).end(), { handshake: 'modern' });
  const url = gone.url;
  await gone.close();
  const down = await startGateway({
    upstreams: [{ name: 'down', url, era: 'modern' }],
    metrics: { enabled: true, port: 0 },
    policy: { breakers: [{ id: 'down-breaker', per: 'upstream', consecutiveFailures: 1, coolDownSeconds: 60 }] },
  });
  try {
    const send = (id: number) => {
      const req = modernRequest(id, 'tools/call', { name: 'anything', arguments: {} });
      return post(down.url, req.body, req.headers);
    };
    const failed = await send(1);
    assert.equal(failed.status, 502);
    const opened = await send(2);
    assert.equal(opened.json().result.structuredContent.error.code, 'upstream_unavailable');
    const failedLine = await lineFor(String(failed.headers['x-gatehouse-call-id']), down.logs);
    assert.deepEqual([failedLine.outcome, failedLine.refusal, failedLine.stage], ['upstream_error', 'upstream_unreachable', 'upstream']);
    const openedLine = await lineFor(String(opened.headers['x-gatehouse-call-id']), down.logs);
    assert.deepEqual([openedLine.outcome, openedLine.refusal, openedLine.stage], ['refused', 'upstream_unavailable', 'breaker']);
    const metrics = await (await request(down.gateway.metricsUrl!)).body.text();
    assert.match(metrics, /gatehouse_requests_total\{method="tools\/call",era="modern",upstream="down",outcome="upstream_error"\} 1/);
    assert.match(metrics, /gatehouse_requests_total\{method="tools\/call",era="modern",upstream="down",outcome="refused"\} 1/);
    assert.match(metrics, /gatehouse_tool_calls_total\{tool="[^"]*",outcome="upstream_error",error_code="upstream_unreachable"\} 1/);
  } finally {
    await down.close();
  }
});
