// Reviewers see a call's arguments through the log redactor (README "Human approval": "Arguments are
// shown through the log redactor"), so a credential in them stays hidden from the admin API, its CLI and
// the inbox page. But the API also showed `argumentsSha256`, the SHA-256 of the UNREDACTED canonical
// arguments, and the `binding` and approval id derived from it and from what the view shows (caller,
// upstream, tool, policy version): a low-entropy value redacted from the preview (a PIN, a one-time code)
// fell to trying every candidate. The digests reviewers see are now keyed with a per-gateway key kept in
// the store (HMAC-SHA256), which keeps what they are for: the identical call (the same caller, tool,
// arguments and policy) finds its approval again, on every replica and after a restart; calls differing
// only in a redacted value are told apart; the same arguments from two callers show the same digest.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { principalKey } from '../../src/pipeline/principal.js';
import { canonicalJson } from '../../src/protocol/canonical-json.js';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { runCli } from '../helpers/cli.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
const BOB = 'gh_bob_0123456789abcdefghijklmnopqrstuvwx';
const ADMIN = 'admin-token-0123456789abcdef';

let up: CountingUpstream;
const gateways: TestGateway[] = [];
const config = (storePath: string) => ({
  upstreams: [{ name: 'up', url: up.url, era: 'modern' }],
  auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }] },
  store: { kind: 'sqlite', path: storePath },
  admin: { enabled: true, port: 0, token: ADMIN },
  policy: { approvals: [{ id: 'lookups', tools: ['up/lookup'] }] },
});
async function start(storePath: string): Promise<TestGateway> {
  const gw = await startGateway(config(storePath));
  gateways.push(gw);
  return gw;
}
const newStore = () => join(mkdtempSync(join(tmpdir(), 'gatehouse-approvals-digest-')), 'gatehouse.db');

before(async () => {
  up = await startCountingUpstream('modern');
});
after(async () => {
  for (const gw of gateways) await gw.close().catch(() => {});
  await up.close();
});

let n = 0;
/** Asks for the lookup; answers the id of the approval it waits on. */
async function ask(gw: TestGateway, token: string, item: string): Promise<string> {
  const req = modernRequest(++n, 'tools/call', { name: 'lookup', arguments: { item } });
  const res = await post(gw.url, req.body, { ...req.headers, authorization: `Bearer ${token}` });
  const result = res.json().result as { structuredContent?: { error?: { code: string } }; _meta?: Record<string, unknown> };
  assert.equal(result.structuredContent?.error?.code, 'approval_pending', res.text);
  return result._meta?.['dev.gatehouse/approval_id'] as string;
}
async function view(gw: TestGateway, id: string): Promise<Record<string, any>> {
  const res = await request(`${gw.gateway.adminUrl}/approvals/${id}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(res.statusCode, 200);
  return ((await res.body.json()) as { approval: Record<string, any> }).approval;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
/** A one-time code a caller sends in a bearer credential: redacted in the preview, 10 000 candidates. */
const CODE = '4821';
const item = (code: string) => `Bearer ${code}`;

/**
 * What a reviewer holding `shown` (the API's view, or the CLI's output) learns by trying every 4-digit code:
 * the codes whose SHA-256 of the canonical arguments, binding (caller, upstream, tool, arguments, policy
 * version, as the book derived it) or approval id (binding and generation) is found in what was shown.
 */
function bruteForce(approval: Record<string, any>, shown: string): string[] {
  const found: string[] = [];
  for (let i = 0; i < 10_000; i++) {
    const code = String(i).padStart(4, '0');
    const args = sha256(canonicalJson({ item: item(code) }));
    const binding = sha256(canonicalJson({ caller: principalKey(approval.caller), upstream: approval.upstream, ref: approval.toolRef, arguments: args, policy: approval.policyVersion }));
    const id = `ap_${sha256(`${binding}:${approval.generation ?? 0}`).slice(0, 24)}`;
    if (shown.includes(args) || shown.includes(binding) || shown.includes(id)) found.push(code);
  }
  return found;
}

test('the admin API and the CLI show nothing that gives a redacted value away to a reviewer trying every candidate', async () => {
  const gw = await start(newStore());
  const id = await ask(gw, ALICE, item(CODE));
  const approval = await view(gw, id);
  assert.equal(approval.preview.item, 'Bearer [redacted]', 'the preview hides the code');
  assert.deepEqual(bruteForce(approval, JSON.stringify(approval)), [], 'the API view gives no code away');
  const cli = await runCli(['approvals', 'show', id, '--json', '--url', gw.gateway.adminUrl!, '--token', ADMIN]);
  assert.equal(cli.code, 0, cli.stderr);
  assert.deepEqual(bruteForce(approval, cli.stdout), [], 'nor does `gatehouse approvals show --json`');
  const list = await runCli(['approvals', 'list', '--json', '--url', gw.gateway.adminUrl!, '--token', ADMIN]);
  assert.deepEqual(bruteForce(approval, list.stdout), [], 'nor `approvals list --json`');
  assert.match(approval.argumentsDigest, /^[0-9a-f]{64}$/, 'reviewers are shown a keyed digest of the arguments instead');
});

test('the digest still tells calls apart, binds the identical call, and is the same on every replica and after a restart', async () => {
  const storePath = newStore();
  let gw = await start(storePath);
  const first = await ask(gw, ALICE, item(CODE));
  // The identical call finds the same approval.
  assert.equal(await ask(gw, ALICE, item(CODE)), first);
  // Another code, hidden the same way in the preview: another approval, and another digest.
  const other = await ask(gw, ALICE, item('1111'));
  assert.notEqual(other, first);
  const [a, b] = [await view(gw, first), await view(gw, other)];
  assert.equal(a.previewSha256, b.previewSha256, 'the previews are the same');
  assert.notEqual(a.argumentsDigest, b.argumentsDigest, 'the digests tell the calls apart');
  // The same arguments from another caller: its own approval, with the same digest of the arguments.
  const bobs = await view(gw, await ask(gw, BOB, item(CODE)));
  assert.notEqual(bobs.id, first);
  assert.equal(bobs.argumentsDigest, a.argumentsDigest);
  // A restart on the same store (the key is kept there, as a replica sharing it would read it).
  await gw.close();
  gw = await start(storePath);
  assert.equal(await ask(gw, ALICE, item(CODE)), first, 'the identical call finds its approval after a restart');
  assert.equal((await view(gw, first)).argumentsDigest, a.argumentsDigest);
  // Another gateway (its own store, so its own key): the same arguments, another digest.
  const elsewhere = await start(newStore());
  assert.notEqual((await view(elsewhere, await ask(elsewhere, ALICE, item(CODE)))).argumentsDigest, a.argumentsDigest);
});
