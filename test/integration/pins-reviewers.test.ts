// Who may accept a changed tool definition (tools.pinningReviewers; DESIGN.md §7, the admin contract). A
// pin is what every call of a tool is judged by, and a tool's description and annotations are untrusted
// unless they come from a trusted server (2026-07-28 index.mdx §Tool Safety; server/tools.mdx §Tool), so
// accepting a change is a review limited per tool, as an approval decision is per rule (`reviewers`).
// Until 5 December any admin (admin.token, or any member of any admin.groups) was shown every changed
// tool and could accept it: a member of team A's admin group accepted a rewritten description of a tool
// only team B reviews. Now the first entry whose globs match the ref decides who is shown it (GET /pins,
// `gatehouse pins list`, the inbox page) and who may accept it (403 forbidden otherwise, audited and
// logged as a refused decision is); a ref no entry matches is any admin's; the admin token may do all.
// Real parts: an authorization server on loopback minting the reviewers' tokens, the running gateway, the
// admin API over HTTP, the inbox page over HTTP with a real session, the built CLI, real SQLite; the two
// upstreams are fakes, since they must change their tools without a word.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { validateConfigObject } from '../../src/config/load.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { runCli } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { adminRequest } from '../helpers/http.js';
import { inboxCookie } from '../helpers/inbox-session.js';
import { PIN_ADMIN_TOKEN as ADMIN, startPinReviewerGateway, type PinReviewerGateway } from '../helpers/pin-reviewer-gateway.js';

const REFS = ['other/lookup', 'other/record', 'up/lookup', 'up/record'];

let reviewers: PinReviewerGateway;
let gw: TestGateway;

before(async () => {
  // up/lookup: team-b only (the first entry decides, though the second names up/* too); up/record: rita
  // only; other/*: no entry, so any admin.
  reviewers = await startPinReviewerGateway(['up', 'other'], [
    { tools: ['up/lookup'], reviewers: { groups: ['team-b'] } },
    { tools: ['up/*'], reviewers: { subjects: ['rita'] } },
  ]);
  gw = reviewers.gw;
});
after(() => reviewers?.close());

const call = (name: string, item: string) => reviewers.call(name, item);
const received = (upstream: string, item: string) => reviewers.upstreams[upstream]!.received.filter((b) => b.includes(item)).length;
const tokenFor = (sub: string, groups: string[]) => reviewers.tokenFor(sub, groups);
const admin = (method: 'GET' | 'POST', path: string, bearer: string, body?: unknown) => adminRequest(gw.gateway.adminUrl!, method, path, { bearer, body });

interface PinJson {
  ref: string;
  state: string;
  pinned: { sha256: string; acceptedBy?: string };
  changed?: { sha256: string };
}
/** The pins GET /pins lists to this bearer, every page followed (bounded). */
async function listed(bearer: string): Promise<PinJson[]> {
  const pins: PinJson[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 10; i++) {
    const r = await admin('GET', `/pins?limit=1${cursor ? `&cursor=${cursor}` : ''}`, bearer);
    assert.equal(r.status, 200, r.text);
    pins.push(...(r.json.pins as PinJson[]));
    cursor = r.json.nextCursor as string | undefined;
    if (cursor === undefined) return pins;
  }
  assert.fail('GET /pins never came to its last page');
}
const refsOf = async (bearer: string) => (await listed(bearer)).map((p) => p.ref).sort();
/** The digest of the changed definition of `ref`, as the admin token sees it. */
const changedDigest = async (ref: string) => (await listed(ADMIN)).find((p) => p.ref === ref)!.changed!.sha256;

/** The inbox page as this reviewer's browser gets it: signed in with the token, then GET / with the session cookie. */
async function inboxPins(bearer: string): Promise<string[]> {
  const cookie = await inboxCookie(gw.gateway.adminUrl!, bearer);
  const page = await request(`${gw.gateway.adminUrl}/`, { headers: { cookie } });
  const html = await page.body.text();
  assert.equal(page.statusCode, 200);
  assert.match(html, /meta name="csrf-token"/, 'signed in');
  return [...html.matchAll(/data-pin="([^"]+)"/g)].map((m) => m[1]!).sort();
}

test('GET /pins lists to a reviewer only the tools they review (the first matching entry decides; no entry: any admin); the admin token sees all', async () => {
  assert.deepEqual(await refsOf(await tokenFor('ann', ['team-a'])), ['other/lookup', 'other/record']);
  assert.deepEqual(await refsOf(await tokenFor('bob', ['team-b'])), ['other/lookup', 'other/record', 'up/lookup']);
  assert.deepEqual(await refsOf(await tokenFor('rita', ['team-a'])), ['other/lookup', 'other/record', 'up/record']);
  assert.deepEqual(await refsOf(ADMIN), REFS);
  // Nothing of a hidden tool's change is in the answer.
  const ann = await admin('GET', '/pins', await tokenFor('ann', ['team-a']));
  assert.doesNotMatch(ann.text, /"up\//);
});

test('gatehouse pins list, run with a reviewer\'s access token, shows only the tools that reviewer reviews', async () => {
  const env = { ...process.env, GATEHOUSE_ADMIN_URL: gw.gateway.adminUrl!, GATEHOUSE_ADMIN_TOKEN: await tokenFor('ann', ['team-a']) };
  const shown = await runCli(['pins', 'list'], { env });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /other\/lookup\s+changed/);
  assert.doesNotMatch(shown.stdout, /up\/(lookup|record)/);
  // A tool hidden from them is reported as such, neither shown nor posted (the API would refuse it anyway).
  const hidden = await runCli(['pins', 'show', 'up/lookup'], { env });
  assert.equal(hidden.code, 3, hidden.stdout);
  assert.match(hidden.stderr, /no tool "up\/lookup" is pinned that you review \(tools\.pinningReviewers\)/);
  assert.ok(!hidden.stdout.includes('(lookup)'), hidden.stdout);
  const accept = await runCli(['pins', 'accept', 'up/lookup', '--digest', await changedDigest('up/lookup')], { env });
  assert.equal(accept.code, 3, accept.stdout);
  assert.match(accept.stderr, /that you review/);
  assert.equal((await listed(ADMIN)).find((p) => p.ref === 'up/lookup')?.state, 'changed');
});

test('the inbox page shows a reviewer only the changed tools they review', async () => {
  assert.deepEqual(await inboxPins(await tokenFor('ann', ['team-a'])), ['other/lookup', 'other/record']);
  assert.deepEqual(await inboxPins(await tokenFor('bob', ['team-b'])), ['other/lookup', 'other/record', 'up/lookup']);
  assert.deepEqual(await inboxPins(ADMIN), REFS);
});

test('accepting the change of a tool one does not review is 403 forbidden, audited and logged, and the change stays unaccepted', async () => {
  const digest = await changedDigest('up/lookup');
  // ann: another team; rita: named by the second entry, but the first one decides up/lookup.
  for (const who of ['ann', 'rita']) {
    const r = await admin('POST', `/pins/${encodeURIComponent('up/lookup')}/accept`, await tokenFor(who, ['team-a']), { digest });
    assert.equal(r.status, 403, r.text);
    assert.equal(r.json.error.code, 'forbidden');
  }
  const pin = (await listed(ADMIN)).find((p) => p.ref === 'up/lookup')!;
  assert.equal(pin.state, 'changed');
  assert.equal((await call('up_lookup', 'still-refused')).structuredContent?.error?.code, 'tool_changed');
  assert.equal(received('up', 'still-refused'), 0);

  const refusals = gw.logs.filter((l) => l.msg === 'tool definition acceptance refused');
  assert.deepEqual(refusals.map((l) => [l.ref, l.reviewer, l.refusal, l.level]), [['up/lookup', 'ann', 'forbidden', 'warn'], ['up/lookup', 'rita', 'forbidden', 'warn']]);
  const store = new SqliteStore(reviewers.storePath);
  try {
    const records = (await store.readAudit({ limit: 10_000 })).filter((r) => r.method === 'pin');
    const refused = records.filter((r) => r.outcome === 'refused');
    assert.deepEqual(refused.map((r) => [r.toolRef, r.reviewer, r.refusal]).sort(), [['up/lookup', 'ann', 'forbidden'], ['up/lookup', 'rita', 'forbidden']]);
    assert.ok(refused.every((r) => r.reason?.includes(digest)), JSON.stringify(refused));
    assert.equal(records.filter((r) => r.outcome === 'accepted').length, 0);
  } finally {
    await store.close();
  }
});

test('who may accept is judged before the body: a reviewer of another team is refused 403 (and audited) whatever they send; the tool\'s reviewer is told what is wrong with it', async () => {
  const ann = await tokenFor('ann', ['team-a']);
  const bob = await tokenFor('bob', ['team-b']);
  const path = `/pins/${encodeURIComponent('up/lookup')}/accept`;
  const malformed: Array<{ body: unknown; status: number; code: string }> = [
    { body: [1], status: 400, code: 'bad_request' },
    { body: {}, status: 400, code: 'digest_required' },
    { body: { digest: 'not-a-digest' }, status: 400, code: 'bad_request' },
    { body: { digest: 'a'.repeat(20_000) }, status: 413, code: 'body_too_large' },
  ];
  for (const { body, status, code } of malformed) {
    // Refused first: ann does not review up/lookup. Until 5 December she was told 400 (413) about her body, unrecorded.
    const refused = await admin('POST', path, ann, body);
    assert.equal(refused.status, 403, `${JSON.stringify(body).slice(0, 40)}: ${refused.text}`);
    assert.equal(refused.json.error.code, 'forbidden');
    // The other order: bob reviews it, so what is wrong with his body is what he hears, and nothing is accepted.
    const told = await admin('POST', path, bob, body);
    assert.equal(told.status, status, `${JSON.stringify(body).slice(0, 40)}: ${told.text}`);
    assert.equal(told.json.error.code, code);
  }
  assert.equal((await listed(ADMIN)).find((p) => p.ref === 'up/lookup')?.state, 'changed');
  const store = new SqliteStore(reviewers.storePath);
  try {
    const refused = (await store.readAudit({ limit: 10_000 })).filter((r) => r.method === 'pin' && r.outcome === 'refused' && r.reviewer === 'ann' && r.reason?.includes('no definition digest sent'));
    assert.equal(refused.length, malformed.length, 'each refusal is recorded, saying no digest came with it');
  } finally {
    await store.close();
  }
});

test('the tool\'s own reviewers accept its change, any admin one no entry names, and the admin token (break-glass) any', async () => {
  const bob = await tokenFor('bob', ['team-b']);
  const accepted = await admin('POST', `/pins/${encodeURIComponent('up/lookup')}/accept`, bob, { digest: await changedDigest('up/lookup') });
  assert.equal(accepted.status, 200, accepted.text);
  assert.equal(accepted.json.pin.pinned.acceptedBy, 'bob');
  assert.equal((await call('up_lookup', 'after-bob')).isError, undefined);

  // bob reviews up/lookup, not up/record (rita's): refused there.
  const notHis = await admin('POST', `/pins/${encodeURIComponent('up/record')}/accept`, bob, { digest: await changedDigest('up/record') });
  assert.equal(notHis.status, 403, notHis.text);

  const ann = await admin('POST', `/pins/${encodeURIComponent('other/lookup')}/accept`, await tokenFor('ann', ['team-a']), { digest: await changedDigest('other/lookup') });
  assert.equal(ann.status, 200, ann.text);

  const breakGlass = await admin('POST', `/pins/${encodeURIComponent('up/record')}/accept`, ADMIN, { digest: await changedDigest('up/record') });
  assert.equal(breakGlass.status, 200, breakGlass.text);
  assert.equal(breakGlass.json.pin.pinned.acceptedBy, 'admin-token');
  assert.equal((await call('up_record', 'after-admin')).isError, undefined);
});

test('a reload applies new pinningReviewers from the next request on', async () => {
  const ann = await tokenFor('ann', ['team-a']);
  assert.deepEqual(await refsOf(ann), ['other/lookup', 'other/record'], 'no entry names other/*');
  const running = reviewers.config.tools as { pinningReviewers: unknown[] };
  const tools = { ...running, pinningReviewers: [...running.pinningReviewers, { tools: ['other/*'], reviewers: { groups: ['team-b'] } }] };
  assert.deepEqual(await gw.gateway.reload(validateConfigObject({ ...reviewers.config, tools }, 'test')), []);
  assert.deepEqual(await refsOf(ann), []);
  const refused = await admin('POST', `/pins/${encodeURIComponent('other/record')}/accept`, ann, { digest: await changedDigest('other/record') });
  assert.equal(refused.status, 403, refused.text);
  assert.deepEqual(await refsOf(await tokenFor('bob', ['team-b'])), ['other/lookup', 'other/record', 'up/lookup']);
});

test('a reload naming a group none of admin.groups is applied, and logged as a warning naming the key and the group', async () => {
  // Not refused: a reviewer may hold an admin group (team-a) and this one. A typo is the likelier reading, so
  // the running gateway says so (check-config and doctor print the same, located).
  const running = reviewers.config.tools as { pinningReviewers: unknown[] };
  const tools = { ...running, pinningReviewers: [{ tools: ['up/*'], reviewers: { groups: ['team-bb'] } }] };
  assert.deepEqual(await gw.gateway.reload(validateConfigObject({ ...reviewers.config, tools }, 'test')), []);
  const warned = gw.logs.filter((l) => l.level === 'warn' && l.reviewer === 'team-bb');
  assert.equal(warned.length, 1, JSON.stringify(warned));
  assert.equal(warned[0]!.setting, 'tools.pinningReviewers[0].reviewers.groups[0]');
  assert.deepEqual(warned[0]!.adminGroups, ['team-a', 'team-b']);
  // And it reads as written: team-b's bob is no reviewer of up/* now; a token carrying team-bb and an admin group is.
  assert.deepEqual(await refsOf(await tokenFor('bob', ['team-b'])), ['other/lookup', 'other/record']);
  assert.deepEqual(await refsOf(await tokenFor('cleo', ['team-a', 'team-bb'])), REFS);
});
