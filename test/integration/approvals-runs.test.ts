// What an approved run is worth (issue 14): a run that a later stage refuses, before anything reaches the
// upstream, is given back, so the approved call can still run; and an approved run that the upstream
// interrupts to ask the client for input (MRTR, 2026-07-28/basic/patterns/mrtr.mdx) goes on when the client
// retries with its answers, once, without a second approval; answers alone open nothing.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { request } from 'undici';
import type { CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startModernMatrixServer, type ModernMatrixServer } from '../fixtures/upstreams/modern-matrix-server.js';
import { startGatewayOverCountingUpstream } from '../helpers/counting-gateway.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ADMIN = 'admin-token-0123456789abcdef';
type Result = { isError?: boolean; content: Array<{ text?: string }>; structuredContent?: { error?: { code: string } }; _meta?: Record<string, unknown>; resultType?: string; requestState?: string; inputRequests?: Record<string, unknown> };

async function approve(gw: TestGateway, id: string): Promise<void> {
  const res = await request(`${gw.gateway.adminUrl}/approvals/${id}/approve`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(res.statusCode, 200);
  await res.body.dump();
}

describe('a run refused after approval is given back', () => {
  let up: CountingUpstream;
  let gw: TestGateway;
  before(async () => {
    ({ up, gw } = await startGatewayOverCountingUpstream({
      admin: { enabled: true, port: 0, token: ADMIN },
      policy: { approvals: [{ id: 'writes', annotations: { destructiveHint: true } }] },
      idempotency: { requireKeys: true },
    }));
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  test('approved, then refused for a missing idempotency key: the retry with the key still runs, once', async () => {
    let n = 0;
    const call = async (meta: Record<string, unknown> = {}) => {
      const req = modernRequest(++n, 'tools/call', { name: 'record', arguments: { item: 'keyed' }, _meta: meta });
      const body = JSON.parse(req.body) as { params: { _meta: Record<string, unknown> } };
      body.params._meta = { ...body.params._meta, ...meta };
      return (await post(gw.url, JSON.stringify(body), req.headers)).json().result as Result;
    };
    const pending = await call();
    assert.equal(pending.structuredContent?.error?.code, 'approval_pending');
    await approve(gw, pending._meta!['dev.gatehouse/approval_id'] as string);
    assert.equal((await call()).structuredContent?.error?.code, 'idempotency_key_required');
    const ran = await call({ idempotencyKey: 'order-0001-keyed' });
    assert.equal(ran.isError, undefined, JSON.stringify(ran));
    assert.equal(up.executions.filter((e) => e.item === 'keyed').length, 1);
    // The one run is used now: the same call needs a new approval.
    assert.equal((await call({ idempotencyKey: 'order-0002-keyed' })).structuredContent?.error?.code, 'approval_pending');
  });
});

describe('an approved run that the upstream interrupts for input', () => {
  let up: ModernMatrixServer;
  let gw: TestGateway;
  before(async () => {
    up = await startModernMatrixServer();
    gw = await startGateway({
      upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
      admin: { enabled: true, port: 0, token: ADMIN },
      policy: { approvals: [{ id: 'asks', tools: ['up/trigger-elicitation-request'] }] },
    });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  test('a v2 SDK client answers the upstream\'s question and its retry runs without a second approval', async () => {
    const client = new V2Client({ name: 'approvals-mrtr', version: '1' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    let asked = 0;
    client.setRequestHandler('elicitation/create', async () => {
      asked++;
      return { action: 'accept', content: { name: 'Ada', check: true } };
    });
    await client.connect(new V2Transport(new URL(gw.url)));
    try {
      const pending = (await client.callTool({ name: 'trigger-elicitation-request', arguments: {} })) as Result;
      assert.equal(pending.structuredContent?.error?.code, 'approval_pending');
      assert.equal(asked, 0, 'nothing reached the upstream, so nobody was asked');
      await approve(gw, pending._meta!['dev.gatehouse/approval_id'] as string);
      const ran = (await client.callTool({ name: 'trigger-elicitation-request', arguments: {} })) as Result;
      assert.equal(ran.isError, undefined, JSON.stringify(ran));
      assert.equal(asked, 1);
      assert.match(ran.content.map((c) => c.text ?? '').join('\n'), /Ada/);
    } finally {
      await client.close();
    }
  });

  test('answers to the upstream\'s question continue the interrupted run once; they open nothing else', async () => {
    let n = 0;
    const call = async (params: Record<string, unknown>) => {
      const req = modernRequest(++n, 'tools/call', { name: 'trigger-elicitation-request', arguments: {}, ...params });
      const body = JSON.parse(req.body) as { params: { _meta: Record<string, unknown> } };
      body.params._meta['io.modelcontextprotocol/clientCapabilities'] = { elicitation: { form: {} } };
      return (await post(gw.url, JSON.stringify(body), req.headers)).json().result as Result;
    };
    const pending = await call({});
    const id = pending._meta!['dev.gatehouse/approval_id'] as string;
    // Answers sent before the approved run was ever interrupted continue nothing.
    assert.equal((await call({ inputResponses: {} })).structuredContent?.error?.code, 'approval_pending');
    await approve(gw, id);
    const interrupted = await call({});
    assert.equal(interrupted.resultType, 'input_required', JSON.stringify(interrupted));
    const key = Object.keys(interrupted.inputRequests ?? {})[0]!;
    const answers = { inputResponses: { [key]: { action: 'accept', content: { name: 'Grace', check: true } } } };
    const done = await call(answers);
    assert.equal(done.isError, undefined, JSON.stringify(done));
    assert.match(done.content.map((c) => c.text ?? '').join('\n'), /Grace/);
    // The run is over: the same answers again are a new call, which needs a new approval.
    const again = await call(answers);
    assert.equal(again.structuredContent?.error?.code, 'approval_pending');
    assert.notEqual(again._meta!['dev.gatehouse/approval_id'], id);
  });
});
