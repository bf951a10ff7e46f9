// What the reviewer sees, and what the approval binds, vs what the upstream runs, for numbers JavaScript
// cannot read exactly (README §Approvals: "An approval binds ... the SHA-256 of the canonical arguments";
// "Arguments are shown through the log redactor"). Gatehouse reads a call with JSON.parse, so the integer
// 9007199254740993 (2^53 + 1) becomes 9007199254740992 and 1e400 becomes Infinity (written `null`), while
// the upstream gets the bytes as they were sent and a server that reads integers exactly (Python's json,
// Go's json.Number, Java's BigInteger) runs the number written. I-JSON (RFC 7493 §2.2) says such numbers
// should not be sent; RFC 8259 §6 says parsers disagree on them. Until 4 December the reviewer was shown
// another number than the one that ran, and an approval of one account id ran a call on its neighbour.
// The upstream is a fake because it must read the bytes itself, as a non-JavaScript server does.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ADMIN = 'admin-token-0123456789abcdef';
type Result = { isError?: boolean; structuredContent?: { error?: { code: string; message?: string } }; _meta?: Record<string, unknown> };

let up: FakeUpstream;
let gw: TestGateway;
/** The raw text of each tools/call the upstream received. */
const calls: string[] = [];

before(async () => {
  const schema = { type: 'object', properties: { account: { type: 'number' }, note: { type: 'string' } }, required: ['account'] };
  up = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown; method: string };
    if (msg.method === 'tools/list') return jsonResult(res, body, { tools: [{ name: 'close_account', description: 'Closes an account', inputSchema: schema }], resultType: 'complete', ttlMs: 0, cacheScope: 'public' });
    if (msg.method === 'tools/call') {
      calls.push(body);
      return jsonResult(res, body, { content: [{ type: 'text', text: 'closed' }], resultType: 'complete' });
    }
    if (msg.id === undefined) return void res.writeHead(202).end();
    jsonResult(res, body, { resultType: 'complete' });
  }, { handshake: 'modern' });
  gw = await startGateway({
    upstreams: [{ name: 'bank', url: up.url, era: 'modern' }],
    admin: { enabled: true, port: 0, token: ADMIN },
    policy: { approvals: [{ id: 'closing', tools: ['bank/close_account'] }] },
  });
});
after(async () => {
  await gw.close();
  await up.close();
});

let n = 0;
/** Calls close_account with `account` written exactly as given (a JSON number literal). */
async function close(account: string, note = 'x'): Promise<Result> {
  const req = modernRequest(++n, 'tools/call', { name: 'close_account', arguments: { account: '@ACCOUNT@', note } });
  const res = await post(gw.url, req.body.replace('"@ACCOUNT@"', account), req.headers);
  assert.equal(res.status, 200, res.text);
  return res.json().result as Result;
}

async function show(id: string): Promise<{ preview: unknown }> {
  const res = await request(`${gw.gateway.adminUrl}/approvals/${id}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return ((await res.body.json()) as { approval: { preview: unknown } }).approval;
}

test('an approval of one account never runs a call on another that JavaScript reads as the same number', async () => {
  const pending = await close('9007199254740992', 'neighbour');
  assert.equal(pending.structuredContent?.error?.code, 'approval_pending');
  const id = pending._meta!['dev.gatehouse/approval_id'] as string;
  assert.deepEqual((await show(id)).preview, { account: 9007199254740992, note: 'neighbour' });
  const decided = await request(`${gw.gateway.adminUrl}/approvals/${id}/approve`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(decided.statusCode, 200);
  await decided.body.dump();

  // Account 2^53 + 1: another account to the upstream, the same number to JSON.parse.
  const other = await close('9007199254740993', 'neighbour');
  assert.ok(!calls.some((c) => c.includes('9007199254740993')), `the approval of account 9007199254740992 ran a call on account 9007199254740993: ${JSON.stringify(other)}`);
  assert.equal(other.isError, true);
  assert.equal(other.structuredContent?.error?.code, 'invalid_arguments', JSON.stringify(other));

  // The approved call itself still runs, once.
  const approved = await close('9007199254740992', 'neighbour');
  assert.equal(approved.isError, undefined, JSON.stringify(approved));
  assert.equal(calls.filter((c) => c.includes('9007199254740992')).length, 1);
});

test('a number Gatehouse cannot read exactly opens no approval a reviewer would see otherwise', async () => {
  for (const [literal, note] of [['12345678901234567891', 'big'], ['-9007199254740995', 'negative'], ['1e400', 'overflow']] as const) {
    const answer = await close(literal, note);
    assert.equal(answer.structuredContent?.error?.code, 'invalid_arguments', `${literal}: ${JSON.stringify(answer)}`);
    assert.match(answer.structuredContent?.error?.message ?? '', /as a string/);
    assert.equal(answer._meta?.['dev.gatehouse/approval_id'], undefined, `${literal}: an approval was opened, showing the reviewer ${JSON.stringify(answer)}`);
  }
  const listed = await request(`${gw.gateway.adminUrl}/approvals?state=pending`, { headers: { authorization: `Bearer ${ADMIN}` } });
  const approvals = ((await listed.body.json()) as { approvals: Array<{ preview: { note?: string } }> }).approvals;
  assert.deepEqual(approvals.filter((a) => ['big', 'negative', 'overflow'].includes(a.preview.note ?? '')), []);
  // Numbers it reads exactly, decimals among them, still ask for approval as before.
  for (const literal of ['9007199254740991', '-9007199254740991', '1e21', '0.1', '12.50', '-0']) {
    assert.equal((await close(literal, `exact ${literal}`)).structuredContent?.error?.code, 'approval_pending', literal);
  }
  assert.ok(!calls.some((c) => /12345678901234567891|9007199254740995|1e400/.test(c)));
});
