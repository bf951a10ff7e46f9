// Egress rules on prompts/get arguments. A prompt's arguments are strings its server reads as it likes
// (server/prompts.mdx §Getting a Prompt: `arguments` "to customize the prompt"), and a server that fetches
// what a prompt names ("summarize this page") reaches the URL given there exactly as a tool does. Until
// 5 December only tools/call arguments were judged: `prompts/get { name: "fetch-page", arguments: { url:
// "http://169.254.169.254/latest/meta-data/" } }` reached the upstream, which fetched the cloud metadata
// service into the prompt it returned. Now the egress stage judges a prompt's arguments as it does a tool's,
// under the first egress rule that selects the prompt (its `tools` globs match the prompt's ref, as access
// rules' do). A prompts/get has no tool result to carry the refusal: it is a JSON-RPC error, -32602 (server/
// prompts.mdx §Error Handling: invalid params), whose `data` has the code `egress_blocked`, the argument,
// the value and the rule. The upstream is the v1 SDK's McpServer (recording every message it receives);
// the clients are the v1 SDK's (legacy era, pass-through) and the v2 SDK's (modern era, through the bridge).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { refusalOf as refusalOfWork, stubResolver, withClient } from '../helpers/egress-judged.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const { resolveHost } = stubResolver();

let up: V1HttpServer;
let gw: TestGateway;
before(async () => {
  up = await startV1HttpServer((server) => {
    server.registerPrompt('fetch-page', { description: 'Summarize the page at url', argsSchema: { url: z.string() } }, ({ url }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `Summarize ${url}` } }],
    }));
    server.registerPrompt('partner-page', { description: 'Summarize a partner page', argsSchema: { page: z.string() } }, ({ page }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `Partner ${page}` } }],
    }));
    server.registerPrompt('embedded', { description: 'A prompt naming one of the server\'s own resources', argsSchema: { resourceUri: z.string() } }, ({ resourceUri }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `Embedded ${resourceUri}` } }],
    }));
  });
  gw = await startGateway(
    {
      upstreams: [{ name: 'up', url: up.url }],
      metrics: { enabled: true, port: 0 },
      policy: { egress: [{ id: 'partner-only', tools: ['up/partner-page'], allow: { hosts: ['*.partner.example'], schemes: ['https'] } }] },
    },
    { resolveHost },
  );
});
after(async () => {
  await gw.close();
  await up.close();
});

/** How many prompts/get the upstream received naming `value` in its arguments. */
const reached = (value: string) => up.messages.filter((m) => m.method === 'prompts/get' && JSON.stringify(m.params?.arguments ?? {}).includes(JSON.stringify(value))).length;

const refusalOf = (work: Promise<unknown>) => refusalOfWork(work, 'the prompt');

describe('egress rules on prompts/get arguments (server/prompts.mdx §Error Handling)', () => {
  test('a v1 (legacy) SDK client gets -32602 egress_blocked for a metadata URL; the upstream never sees it', async () => {
    await withClient('v1', gw.url, async (client) => {
      const url = 'http://169.254.169.254/latest/meta-data/';
      const err = await refusalOf(client.getPrompt('fetch-page', { url }));
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, 'egress_blocked');
      assert.equal(err.data?.argument, 'url');
      assert.equal(err.data?.value, url);
      assert.equal(err.data?.rule, 'default');
      assert.equal(err.data?.addressClass, 'metadata');
      assert.match(err.message, /Prompt "fetch-page": the argument "url" names .*169\.254\.169\.254.*metadata/);
      assert.equal(reached(url), 0);
      const fine = await client.getPrompt('fetch-page', { url: 'https://docs.partner.example/a' });
      assert.match(JSON.stringify(fine.messages), /Summarize https:\/\/docs\.partner\.example\/a/, 'a public destination passes');
    });
  });

  test('a v2 (modern) SDK client gets the same refusal for a name that resolves inside', async () => {
    await withClient('v2', gw.url, async (client) => {
      const url = 'see http://inside.attacker.test/admin for details';
      const err = await refusalOf(client.getPrompt('fetch-page', { url }));
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, 'egress_blocked');
      assert.match(err.message, /inside\.attacker\.test" resolves to 10\.0\.0\.9/);
      assert.equal(reached(url), 0);
    });
  });

  test("a rule whose tool globs select the prompt's ref applies to it, and only to it", async () => {
    await withClient('v1', gw.url, async (client) => {
      const page = 'https://www.elsewhere.example/';
      const err = await refusalOf(client.getPrompt('partner-page', { page }));
      assert.equal(err.data?.code, 'egress_blocked');
      assert.equal(err.data?.rule, 'partner-only');
      assert.equal(reached(page), 0);
      const ok = await client.getPrompt('partner-page', { page: 'https://docs.partner.example/x' });
      assert.match(JSON.stringify(ok.messages), /Partner https:\/\/docs\.partner\.example\/x/);
      // The rule is the prompt's own: fetch-page, which it does not select, may name another public host.
      const other = await client.getPrompt('fetch-page', { url: page });
      assert.match(JSON.stringify(other.messages), /Summarize https:\/\/www\.elsewhere\.example\//);
    });
  });

  // The conformance suite's prompts-get-embedded-resource: `test://example-resource` is the server's own
  // identifier, not a place it fetches; judged as a destination, its unresolvable "host" refused the prompt.
  test('a custom-scheme resource URI in a prompt argument is not judged; a gopher: one is', async () => {
    await withClient('v1', gw.url, async (client) => {
      const got = await client.getPrompt('embedded', { resourceUri: 'test://example-resource' });
      assert.match(JSON.stringify(got.messages), /Embedded test:\/\/example-resource/);
      // A scheme curl-like clients fetch is no identifier (until 5 December it was taken for one).
      const gopher = 'gopher://10.0.0.9:6379/_INFO';
      const err = await refusalOf(client.getPrompt('embedded', { resourceUri: gopher }));
      assert.equal(err.data?.code, 'egress_blocked');
      assert.equal(err.data?.host, '10.0.0.9');
      assert.equal(reached(gopher), 0);
    });
  });

  test('the refusal is counted under its rule', async () => {
    const res = await fetch(gw.gateway.metricsUrl!);
    const text = await res.text();
    assert.match(text, /gatehouse_policy_refusals_total\{code="egress_blocked",rule="default"\} [1-9]/);
    assert.match(text, /gatehouse_policy_refusals_total\{code="egress_blocked",rule="partner-only"\} 1/);
  });
});
