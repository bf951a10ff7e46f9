// Confirmation by the user (issue 14 item 4, `by: user`): Gatehouse asks the person at the client through
// elicitation, with a form that shows the exact call. A modern client (v2 SDK, 2026-07-28) gets an
// InputRequiredResult and answers on its retry, which the SDK does by itself; a legacy client (v1 SDK) gets
// `elicitation/create` on the call's SSE stream. The call is forwarded only when the user accepts; decline
// or cancel answers approval_rejected; a client without the capability falls back to a reviewer.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { request } from 'undici';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { connectV1 } from '../helpers/v1-everything.js';

const ADMIN = 'admin-token-0123456789abcdef';
const APPROVALS = [{ id: 'confirm-record', tools: ['up/record'], by: 'user' }];

interface Result {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: { error?: { code: string; reason?: string } };
  _meta?: Record<string, unknown>;
}
type Answer = { action: 'accept'; content: { confirm: boolean } } | { action: 'decline' } | { action: 'cancel' };

async function v2Client(url: string, answer: () => Answer, seen: string[], elicitation = true): Promise<V2Client> {
  const client = new V2Client({ name: 'approvals-user-v2', version: '1' }, { capabilities: elicitation ? { elicitation: { form: {} } } : {}, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  if (elicitation) {
    client.setRequestHandler('elicitation/create', async (req) => {
      seen.push((req.params as { message: string }).message);
      return answer();
    });
  }
  await client.connect(new V2Transport(new URL(url)));
  return client;
}

for (const upstreamEra of ['modern', 'legacy'] as const) {
  describe(`by: user, ${upstreamEra} upstream`, () => {
    let up: CountingUpstream;
    let gw: TestGateway;
    before(async () => {
      up = await startCountingUpstream(upstreamEra);
      gw = await startGateway({ upstreams: [{ name: 'up', url: up.url }], admin: { enabled: true, port: 0, token: ADMIN }, policy: { approvals: APPROVALS } });
    });
    after(async () => {
      await gw.close();
      await up.close();
    });
    const executed = (item: string) => up.executions.filter((e) => e.item === item).length;

    test('v2 SDK client (modern): the user sees the exact call; accept runs it once, decline and cancel answer approval_rejected', async () => {
      const seen: string[] = [];
      let answer: Answer = { action: 'accept', content: { confirm: true } };
      const client = await v2Client(gw.url, () => answer, seen);
      try {
        const ok = (await client.callTool({ name: 'record', arguments: { item: `m-yes-${upstreamEra}` } })) as Result;
        assert.equal(ok.isError, undefined, JSON.stringify(ok));
        assert.match(ok.content[0]!.text!, new RegExp(`recorded m-yes-${upstreamEra}`));
        assert.equal(executed(`m-yes-${upstreamEra}`), 1);
        assert.equal(seen.length, 1);
        assert.match(seen[0]!, /up\/record/);
        assert.match(seen[0]!, new RegExp(`"item": "m-yes-${upstreamEra}"`));

        answer = { action: 'decline' };
        const no = (await client.callTool({ name: 'record', arguments: { item: `m-no-${upstreamEra}` } })) as Result;
        assert.equal(no.isError, true);
        assert.equal(no.structuredContent?.error?.code, 'approval_rejected');
        assert.match(no.content[0]!.text!, /declined/);
        answer = { action: 'cancel' };
        const cancelled = (await client.callTool({ name: 'record', arguments: { item: `m-cancel-${upstreamEra}` } })) as Result;
        assert.equal(cancelled.structuredContent?.error?.code, 'approval_rejected');
        answer = { action: 'accept', content: { confirm: false } };
        const unchecked = (await client.callTool({ name: 'record', arguments: { item: `m-unchecked-${upstreamEra}` } })) as Result;
        assert.equal(unchecked.structuredContent?.error?.code, 'approval_rejected');
        assert.equal(executed(`m-no-${upstreamEra}`) + executed(`m-cancel-${upstreamEra}`) + executed(`m-unchecked-${upstreamEra}`), 0);
        // The upstream never saw Gatehouse's requestState or the user's answer.
        assert.ok(up.received.every((b) => !b.includes('gatehouse-approval:') && !b.includes('dev.gatehouse/confirm')), 'retry fields stripped');
      } finally {
        await client.close();
      }
    });

    test('v1 SDK client (legacy): elicitation/create arrives on the call\'s stream; accept runs the call once, decline refuses it', async () => {
      const seen: string[] = [];
      let accept = true;
      const { client } = await connectV1(gw.url, {
        name: 'approvals-user-v1',
        timeoutMs: 10_000,
        elicitation: (req) => {
          seen.push(req.params.message);
          return accept ? { action: 'accept', content: { confirm: true } } : { action: 'decline' };
        },
      });
      try {
        const ok = (await client.callTool({ name: 'record', arguments: { item: `l-yes-${upstreamEra}` } })) as Result;
        assert.equal(ok.isError, undefined, JSON.stringify(ok));
        assert.equal(executed(`l-yes-${upstreamEra}`), 1);
        assert.match(seen[0]!, new RegExp(`"item": "l-yes-${upstreamEra}"`));
        accept = false;
        const no = (await client.callTool({ name: 'record', arguments: { item: `l-no-${upstreamEra}` } })) as Result;
        assert.equal(no.structuredContent?.error?.code, 'approval_rejected');
        assert.equal(executed(`l-no-${upstreamEra}`), 0);
        assert.ok(up.received.every((b) => !b.includes('gatehouse-confirm-')), 'the answer to Gatehouse\'s question never reached the upstream');
      } finally {
        await client.close();
      }
    });

    test('a client without the elicitation capability falls back to a reviewer', async () => {
      const client = await v2Client(gw.url, () => ({ action: 'cancel' }), [], false);
      try {
        const pending = (await client.callTool({ name: 'record', arguments: { item: `fallback-${upstreamEra}` } })) as Result;
        assert.equal(pending.structuredContent?.error?.code, 'approval_pending');
        const id = pending._meta?.['dev.gatehouse/approval_id'] as string;
        const res = await request(`${gw.gateway.adminUrl}/approvals/${id}/approve`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
        assert.equal(res.statusCode, 200);
        await res.body.dump();
        const ran = (await client.callTool({ name: 'record', arguments: { item: `fallback-${upstreamEra}` } })) as Result;
        assert.equal(ran.isError, undefined);
        assert.equal(executed(`fallback-${upstreamEra}`), 1);
      } finally {
        await client.close();
      }
    });
  });
}
