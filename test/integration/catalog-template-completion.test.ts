// completion/complete on a resource template, through the catalog of several upstreams. The catalog routes a
// completion by its ref: `ref/prompt` by the prompt's public name, `ref/resource` by the URI, to the member
// that listed it. A `ref/resource` names a resource URI or a URI template (2026-07-28/server/utilities/
// completion.mdx §Reference Types, §Data Types: "for ResourceTemplateReference, uri is a URI or URI
// template"), but the catalog learnt only the URIs of resources/list: until 3 December completing an argument
// of a listed template was refused -32602 (server/resources.mdx §Error Handling), though the member offers
// completions for it. server-everything's templates `demo://resource/dynamic/{text,blob}/{resourceId}` complete.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const EVERYTHING = { name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] };
const TEXT_TEMPLATE = 'demo://resource/dynamic/text/{resourceId}';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A catalog of server-everything and a modern member with no resources of its own. */
async function gateway(config: Record<string, unknown> = {}): Promise<TestGateway> {
  const other = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id: unknown; method: string };
    const key = msg.method === 'resources/templates/list' ? 'resourceTemplates' : msg.method.split('/')[0]!;
    const result = msg.method.endsWith('/list') ? { [key]: [], ttlMs: 0, cacheScope: 'public' } : {};
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...result } }));
  }, { handshake: 'modern' });
  cleanups.push(() => other.close());
  const gw = await startGateway({ upstreams: [EVERYTHING, { name: 'other', url: other.url }], ...config });
  cleanups.push(() => gw.close());
  return gw;
}

async function complete(gw: TestGateway, uri: string, id: number) {
  const req = modernRequest(id, 'completion/complete', { ref: { type: 'ref/resource', uri }, argument: { name: 'resourceId', value: '1' } });
  return (await post(gw.url, req.body, req.headers)).json();
}

test('an argument of a listed resource template completes through the catalog, at the member that listed it', async () => {
  const gw = await gateway();
  const listReq = modernRequest(1, 'resources/templates/list');
  const templates = (await post(gw.url, listReq.body, listReq.headers)).json().result.resourceTemplates as Array<{ uriTemplate: string }>;
  assert.ok(templates.some((t) => t.uriTemplate === TEXT_TEMPLATE), JSON.stringify(templates));
  const answer = await complete(gw, TEXT_TEMPLATE, 2);
  assert.equal(answer.error, undefined, JSON.stringify(answer));
  assert.deepEqual(answer.result.completion.values, ['1']);
  // A template nobody listed is still unknown (server/resources.mdx §Error Handling).
  assert.equal((await complete(gw, 'demo://nobody/{resourceId}', 3)).error.code, -32602);
});

test('a template completed before any list: the catalog lists the templates once to find its member', async () => {
  const gw = await gateway();
  const answer = await complete(gw, TEXT_TEMPLATE, 1);
  assert.equal(answer.error, undefined, JSON.stringify(answer));
  assert.deepEqual(answer.result.completion.values, ['1']);
});

test('a legacy client (v1 SDK) completes a template argument through its bridged session', async () => {
  const gw = await gateway();
  const client = new Client({ name: 'legacy-completion-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  try {
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.ok(resourceTemplates.some((t) => t.uriTemplate === TEXT_TEMPLATE));
    const result = await client.complete({ ref: { type: 'ref/resource', uri: TEXT_TEMPLATE }, argument: { name: 'resourceId', value: '1' } });
    assert.deepEqual(result.completion.values, ['1']);
  } finally {
    await client.close();
  }
});

test('a template the access rules hide is completed like one nobody listed (-32602, the same words)', async () => {
  const gw = await gateway({ policy: { rules: [{ access: 'allow', resources: ['demo://resource/dynamic/text/*'] }] } });
  const listReq = modernRequest(1, 'resources/templates/list');
  const templates = (await post(gw.url, listReq.body, listReq.headers)).json().result.resourceTemplates as Array<{ uriTemplate: string }>;
  assert.deepEqual(templates.map((t) => t.uriTemplate), [TEXT_TEMPLATE], 'the blob template is hidden from the list');
  assert.deepEqual((await complete(gw, TEXT_TEMPLATE, 2)).result.completion.values, ['1']);
  const hidden = await complete(gw, 'demo://resource/dynamic/blob/{resourceId}', 3);
  const nobody = await complete(gw, 'demo://resource/dynamic/none/{resourceId}', 4);
  assert.equal(hidden.error.code, -32602, JSON.stringify(hidden));
  assert.equal(hidden.error.message.replace('blob', 'X'), nobody.error.message.replace('none', 'X'));
});
