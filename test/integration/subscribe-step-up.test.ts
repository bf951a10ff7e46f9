// A resources/subscribe is judged by the access rules as a resources/read is: a caller that may read a
// resource only with more scopes (a rule's `onMissingScopes: challenge`) is answered 403 insufficient_scope
// naming them (2025-11-25/basic/authorization.mdx §Runtime Insufficient Scope Errors); a modern client's
// subscriptions/listen, which has no such answer, leaves it out of the acknowledgment (2026-07-28
// basic/patterns/subscriptions.mdx §Acknowledgment), so no update about it reaches the caller. Until
// 5 December the subscribe went on unjudged, and the catalog counted a resource the caller could step up to
// as one it may use: subscribed to, and its updates relayed, for a caller that could not read it. Real
// gateway, real JWKS issuer; upstreams: the v2 SDK's modern server, and the v1 SDK's (legacy era), which
// honours every subscription; raw HTTP, to read the 403, its challenge and the acknowledgment.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AuthServer } from '../helpers/auth-server.js';
import type { TestGateway } from '../helpers/gateway.js';
import { request } from 'undici';
import { SubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway } from '../helpers/gateway.js';
import { legacySession, LEGACY_HEADERS, modernRequest, post, rpc } from '../helpers/http.js';
import { startScopeChallengeGateway, type ScopeChallengeGateway } from '../helpers/scope-challenge-gateway.js';

const PUBLIC_URL = 'https://mcp.example.test/mcp';
const REPORT = 'file:///reports/q3';

let as: AuthServer;
let gw: TestGateway;
let setup: ScopeChallengeGateway | undefined;
const REPORTS_RULE = { id: 'reports', scopes: ['reports:read'], onMissingScopes: 'challenge', access: 'allow', resources: ['file:///reports/*'] };
/** A legacy upstream that honours every subscription, and a gateway in front of it with the same rules. */
let files: V1HttpServer;
let gwFiles: TestGateway;

before(async () => {
  setup = await startScopeChallengeGateway(PUBLIC_URL, ['mcp:tools', 'reports:read'], [REPORTS_RULE, { id: 'tools', access: 'allow', tools: ['m/*'] }]);
  ({ as, gw } = setup);
  files = await startV1HttpServer((server) => {
    server.registerResource('q3', REPORT, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: REPORT, text: 'q3' }] }));
    server.server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
  }, { resources: { subscribe: true } });
  gwFiles = await startGateway({
    listen: { publicUrl: PUBLIC_URL },
    upstreams: [{ name: 'files', url: files.url }],
    auth: { failureLimit: { attempts: 0 }, oauth: { issuer: as.issuer, jwksUri: as.jwksUri, audience: PUBLIC_URL, scopesSupported: ['mcp:tools', 'reports:read'] } },
    policy: { rules: [REPORTS_RULE, { id: 'tools', access: 'allow', tools: ['files/*'] }] },
  });
});

after(async () => {
  await gwFiles?.close();
  await files?.close();
  await setup?.close();
});

/** A legacy session of a caller holding `scope`, and the headers its requests carry. */
async function sessionWith(scope: string): Promise<Record<string, string>> {
  const authorization = `Bearer ${await as.sign({ sub: 'alice', aud: PUBLIC_URL, scope })}`;
  const id = await legacySession(gw.url, { authorization });
  return { ...LEGACY_HEADERS, authorization, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
}

test('a legacy resources/subscribe of a resource the caller may read only after a step-up is a 403 naming the scopes, as its read is', async () => {
  const headers = await sessionWith('mcp:tools');
  const read = await post(gw.url, rpc(1, 'resources/read', { uri: REPORT }), headers);
  const subscribe = await post(gw.url, rpc(2, 'resources/subscribe', { uri: REPORT }), headers);
  assert.equal(read.status, 403);
  assert.equal(subscribe.status, 403, subscribe.text);
  const challenge = String(subscribe.headers['www-authenticate']);
  assert.match(challenge, /error="insufficient_scope"/);
  assert.match(challenge, /scope="mcp:tools reports:read"/);
  assert.equal(challenge.replace('resources/subscribe', 'X'), String(read.headers['www-authenticate']).replace('resources/read', 'X'), 'the same challenge as the read\'s');
});

test('with the scopes, the subscribe passes the access rules', async () => {
  const headers = await sessionWith('mcp:tools reports:read');
  const subscribe = await post(gw.url, rpc(3, 'resources/subscribe', { uri: REPORT }), headers);
  assert.notEqual(subscribe.status, 403, subscribe.text);
});

/** The resource subscriptions a modern listen of REPORT, by a caller holding `scope`, is acknowledged with. */
async function honouredFor(scope: string): Promise<unknown> {
  const token = await as.sign({ sub: 'alice', aud: PUBLIC_URL, scope });
  const listen = modernRequest(4, 'subscriptions/listen', { notifications: { resourceSubscriptions: [REPORT] } });
  const ac = new AbortController();
  try {
    const res = await request(gwFiles.url, { method: 'POST', headers: { ...listen.headers, authorization: `Bearer ${token}` }, body: listen.body, signal: ac.signal });
    assert.equal(res.statusCode, 200);
    let text = '';
    // The acknowledgment is the listen's first message (subscriptions.mdx §Acknowledgment); at most 50 chunks.
    for await (const chunk of res.body) {
      text += String(chunk);
      const line = text.split('\n').find((l) => l.startsWith('data:') && l.includes('subscriptions/acknowledged'));
      if (line !== undefined) return (JSON.parse(line.slice(5)) as { params: { notifications: { resourceSubscriptions?: unknown } } }).params.notifications.resourceSubscriptions;
      if (text.length > 100_000) break;
    }
    return assert.fail(`no acknowledgment: ${text}`);
  } finally {
    ac.abort();
  }
}

test('a modern listen leaves out a resource the caller may read only after a step-up, and names it once the caller holds the scopes', async () => {
  assert.deepEqual(await honouredFor('mcp:tools reports:read'), [REPORT], 'the upstream honours it for a caller that may read it');
  assert.equal(await honouredFor('mcp:tools'), undefined, 'not honoured for a caller without the scopes');
});
