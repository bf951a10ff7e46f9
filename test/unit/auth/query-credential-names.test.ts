// Which query parameter names are refused as credentials (auth/credential-locations.ts): the built-in
// names, which the config schema's description of auth.queryCredentialNames lists for operators, and the
// configured ones, which only add. Message members are judged by the short list only: a `_meta` key
// `io.example/signature` or a `params.key` is no credential's name.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { compileQueryCredentialCheck, credentialInMessage, credentialInQuery } from '../../../src/auth/credential-locations.js';
import { validateConfigObject } from '../../../src/config/load.js';

const schema = JSON.parse(readFileSync(new URL('../../../config/gatehouse.schema.json', import.meta.url), 'utf8')) as {
  properties: { auth: { properties: { queryCredentialNames: { description: string } } } };
};

test('every built-in name the config reference lists is refused, in any spelling of case, - and _', () => {
  const description = schema.properties.auth.properties.queryCredentialNames.description;
  const listed = /besides the built-in ones: ([^.]+)\./.exec(description)?.[1]?.split(', ') ?? [];
  assert.ok(listed.length >= 30, description);
  for (const name of listed) {
    assert.equal(credentialInQuery(`/mcp?${name}=v`), name);
    const other = name.toUpperCase().replace(/_/g, '-');
    assert.equal(credentialInQuery(`/mcp?x=1&${other}=v`), other);
  }
});

test('names commonly used for credentials are refused; look-alikes and the SSE session are not', () => {
  for (const name of ['key', 'sig', 'signature', 'X-Amz-Signature', 'X-Amz-Security-Token', 'X-Goog-Signature', 'subscription-key', 'private_token', 'password', 'secret', 'auth_token', 'apiToken', 'jwt']) {
    assert.equal(credentialInQuery(`/mcp?${name}=v`), name);
  }
  for (const url of ['/mcp?keyword=x', '/mcp?monkey=1', '/sse/messages?session=abc', '/mcp?cursor=c&sigma=2', '/mcp', undefined]) assert.equal(credentialInQuery(url), undefined, url);
});

test('configured names add to the built-in ones and never take any away', () => {
  const check = compileQueryCredentialCheck(['circle-token', 'ACCESS_TOKEN']);
  assert.equal(check('/mcp?circle_token=v'), 'circle_token');
  assert.equal(check('/mcp?CircleToken=v'), 'CircleToken');
  assert.equal(check('/mcp?key=v'), 'key');
  assert.equal(check('/mcp?access_token=v'), 'access_token');
  assert.equal(credentialInQuery('/mcp?circle_token=v'), undefined, 'a configured name belongs to its config only');
});

test('message members keep the short list: an extension\'s signature or a params.key is no credential', () => {
  assert.equal(credentialInMessage({ jsonrpc: '2.0', id: 1, method: 'x', params: { key: 'k', _meta: { 'io.example/signature': 's' } } }), undefined);
  assert.equal(credentialInMessage({ jsonrpc: '2.0', id: 1, method: 'x', params: { api_key: 'k' } }), 'params.api_key');
});

test('auth.queryCredentialNames: names a query string can carry, checked at load', () => {
  const config = (names: unknown) => validateConfigObject({ upstreams: [{ name: 'u', url: 'http://127.0.0.1:1/mcp' }], auth: { anonymous: true, queryCredentialNames: names } }, 'test');
  assert.deepEqual(config(['circle-token', 'X-Api_Token', 'auth[token]']).auth.queryCredentialNames, ['circle-token', 'X-Api_Token', 'auth[token]']);
  for (const bad of ['', '-', 'a=b', 'a&b', 'has space', 'x'.repeat(65)]) assert.throws(() => config([bad]), /queryCredentialNames/, JSON.stringify(bad));
});
