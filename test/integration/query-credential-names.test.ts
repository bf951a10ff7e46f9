// Credentials in the query string are refused 400 invalid_request before anything is forwarded
// (2026-07-28/basic/authorization/index.mdx §Token Requirements: "MUST NOT be included in the URI query
// string"). Until 5 December only nine names were known (access_token, api_key, token, ...): a client of an
// upstream that takes `?key=` (Google), `?sig=` (Azure SAS) or `?subscription-key=` had its secret taken in,
// logged with the URL by every proxy on the way, and the operator could not add the name. The built-in list
// now holds those, and auth.queryCredentialNames adds more (never fewer). Through the real server, in front
// of a real SDK upstream that records every message it receives.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { hashKey } from '../../src/auth/key-hash.js';
import { startV1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

const KEY = 'gh_query_names_key_0123456789abcdefghijklmn';
const upstream = await startV1HttpServer((server) => {
  server.registerTool('ping_tool', { description: 'answers pong' }, () => ({ content: [{ type: 'text', text: 'pong' }] }));
}, { tools: {} });
const gw = await startGateway({
  upstreams: [{ name: 'up', url: upstream.url }],
  auth: { anonymous: false, apiKeys: [{ id: 'ops', hash: hashKey(KEY) }], queryCredentialNames: ['circle-token'], failureLimit: { attempts: 0 } },
});
after(async () => {
  await gw.close();
  await upstream.close();
});

const headers = { ...LEGACY_HEADERS, authorization: `Bearer ${KEY}` };
const initialize = rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'query-names', version: '1' } });

test('a credential under a newly known or a configured name in the query string → 400 invalid_request, nothing forwarded', async () => {
  const before = upstream.messages.length;
  for (const name of ['key', 'sig', 'X-Amz-Signature', 'subscription-key', 'private_token', 'circle_token', 'Circle-Token', 'access_token']) {
    const res = await post(`${gw.url}?${name}=s3cr3t-value`, initialize, headers);
    assert.equal(res.status, 400, name);
    assert.match(String(res.headers['www-authenticate']), /error="invalid_request"/, name);
    const body = JSON.parse(res.text) as { error: { message: string } };
    assert.match(body.error.message, new RegExp(`found "${name}"`), name);
    assert.match(body.error.message, /Authorization header/);
  }
  assert.equal(upstream.messages.length, before, 'nothing reached the upstream');
});

test('other query parameters are not credentials: the request is served', async () => {
  const res = await post(`${gw.url}?keyword=x&monkey=1&session=abc`, initialize, headers);
  assert.equal(res.status, 200, res.text);
  assert.equal(upstream.messages.at(-1)?.method, 'initialize');
});
