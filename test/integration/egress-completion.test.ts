// Egress rules on completion/complete (server/utilities/completion.mdx). A server's completion handler may
// fetch what it completes (the pages under a URL being typed, the databases of a host) or what the arguments
// chosen before it name (`context.arguments`); until 5 December neither was judged, so
// `completion/complete { argument: { name: "url", value: "http://169.254.169.254/latest/" } }` reached a
// handler that fetches it. Now `argument.value` and `context.arguments` are judged as a prompt's arguments
// are (fetched schemes and bare hosts; a custom scheme is the server's identifier), under the rule of the
// prompt named (`ref/prompt`) or of the upstream that listed the resource template named (`ref/resource`),
// and refused -32602 with `data.code` egress_blocked, as a prompts/get is. The value being typed is partial:
// a word under a name like `url` is not yet a host, so it is read as free text (URLs, addresses, dotted
// names). Upstreams: two v2 SDK servers (`web`, `other`) recording what they receive, through the catalog.
// Clients: the v1 SDK's (legacy era, bridged) and the v2 SDK's (modern era).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { completable, McpServer, ResourceTemplate } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { refusalOf as refusalOfWork, startRecordingUpstream, stubResolver, withClient, type RecordingUpstream } from '../helpers/egress-judged.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const { resolveHost } = stubResolver();
const METADATA = 'http://169.254.169.254/latest/';
const INSIDE = 'http://inside.attacker.test/admin';
const PARTNER = 'https://docs.partner.example/a';
const ELSEWHERE = 'https://www.elsewhere.example/';
/** The resource template `web` lists, whose `page` argument it completes. */
const TEMPLATE = 'web://read/{page}';

/** An upstream with a prompt whose `url` and `lang` arguments complete, and a resource template. */
function server(name: string): McpServer {
  const s = new McpServer({ name, version: '1.0.0' });
  s.registerPrompt('fetch-page', { description: 'Summarize the page at url', argsSchema: z.object({ url: completable(z.string(), (v) => [`${v}/docs`]), lang: completable(z.string(), () => ['en', 'fr']) }) }, ({ url }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Summarize ${url}` } }],
  }));
  s.registerResource('read', new ResourceTemplate(TEMPLATE.replace('web:', `${name}:`), { list: undefined, complete: { page: (v) => [`${v}#top`] } }), { mimeType: 'text/plain' }, async (uri) => ({ contents: [{ uri: uri.href, text: 'page' }] }));
  return s;
}

let web: RecordingUpstream;
let other: RecordingUpstream;
let gw: TestGateway;
before(async () => {
  web = await startRecordingUpstream(() => server('web'));
  other = await startRecordingUpstream(() => server('other'));
  gw = await startGateway(
    {
      upstreams: [
        { name: 'web', url: web.url, era: 'modern' },
        { name: 'other', url: other.url, era: 'modern' },
      ],
      metrics: { enabled: true, port: 0 },
      // Covers the web upstream whole: its prompts by ref, its resource templates as an upstream's.
      policy: { egress: [{ id: 'partner-only', tools: ['web/*'], allow: { hosts: ['*.partner.example'], schemes: ['https'] } }] },
    },
    { resolveHost },
  );
});
after(async () => {
  await gw?.close();
  await web?.close();
  await other?.close();
});

const refusalOf = (work: Promise<unknown>) => refusalOfWork(work, 'the completion');
/** How many completion/complete requests `up` received whose params hold `value`. */
const reached = (up: RecordingUpstream, value: string) => up.requests.filter((r) => r.method === 'completion/complete' && JSON.stringify(r.params).includes(JSON.stringify(value))).length;
/** The catalog's public names: a prompt both upstreams offer is prefixed by its upstream. */
const prompt = (upstream: 'web' | 'other') => ({ type: 'ref/prompt' as const, name: `${upstream}_fetch-page` });

describe('egress rules on completion/complete (server/utilities/completion.mdx)', () => {
  for (const era of ['v1', 'v2'] as const) {
    test(`${era} client: a value being completed that names an inside address is refused -32602 egress_blocked; the upstream never sees it`, async () => {
      await withClient(era, gw.url, async (client) => {
        const names = await client.complete({ ref: prompt('other'), argument: { name: 'lang', value: 'e' } }).catch((err: Error) => err);
        assert.ok(!(names instanceof Error), `the catalog names the prompt ${prompt('other').name}: ${String(names)}`);
        const err = await refusalOf(client.complete({ ref: prompt('other'), argument: { name: 'url', value: METADATA } }));
        assert.equal(err.code, -32602);
        assert.equal(err.data?.code, 'egress_blocked');
        assert.equal(err.data?.argument, 'argument.value');
        assert.equal(err.data?.value, METADATA);
        assert.equal(err.data?.rule, 'default');
        assert.equal(err.data?.addressClass, 'metadata');
        assert.match(err.message, /Prompt "other_fetch-page": the argument "argument\.value" names .*metadata/);
        assert.equal(reached(other, METADATA), 0);
      });
    });

    test(`${era} client: an argument chosen before (context.arguments) is judged as a prompt's argument is`, async () => {
      await withClient(era, gw.url, async (client) => {
        const err = await refusalOf(client.complete({ ref: prompt('other'), argument: { name: 'lang', value: 'e' }, context: { arguments: { url: INSIDE } } }));
        assert.equal(err.data?.code, 'egress_blocked');
        assert.equal(err.data?.argument, 'url');
        assert.match(err.message, /inside\.attacker\.test" resolves to 10\.0\.0\.9/);
        assert.equal(reached(other, INSIDE), 0);
      });
    });

    test(`${era} client: a partial value, a public URL and a custom scheme complete as before`, async () => {
      await withClient(era, gw.url, async (client) => {
        // A word being typed under `url` is not yet a host: it is not resolved, nor refused.
        assert.deepEqual((await client.complete({ ref: prompt('other'), argument: { name: 'url', value: 'htt' } })).completion.values, ['htt/docs']);
        assert.deepEqual((await client.complete({ ref: prompt('other'), argument: { name: 'url', value: PARTNER } })).completion.values, [`${PARTNER}/docs`]);
        assert.deepEqual((await client.complete({ ref: prompt('web'), argument: { name: 'lang', value: 'f' }, context: { arguments: { url: 'test://example-resource' } } })).completion.values, ['en', 'fr']);
      });
    });

    test(`${era} client: the rule of the prompt named, or of the upstream whose resource template is named, applies`, async () => {
      await withClient(era, gw.url, async (client) => {
        const byPrompt = await refusalOf(client.complete({ ref: prompt('web'), argument: { name: 'url', value: ELSEWHERE } }));
        assert.deepEqual([byPrompt.data?.code, byPrompt.data?.rule], ['egress_blocked', 'partner-only']);
        const byTemplate = await refusalOf(client.complete({ ref: { type: 'ref/resource', uri: TEMPLATE }, argument: { name: 'page', value: ELSEWHERE } }));
        assert.deepEqual([byTemplate.code, byTemplate.data?.code, byTemplate.data?.rule, byTemplate.data?.argument], [-32602, 'egress_blocked', 'partner-only', 'argument.value']);
        assert.match(byTemplate.message, /Resource "web:\/\/read\/\{page\}": the argument "argument\.value" names/);
        assert.equal(reached(web, ELSEWHERE), 0, 'web never received them');
        // The same value for the other upstream's prompt and template: the partner rule is not theirs.
        assert.deepEqual((await client.complete({ ref: prompt('other'), argument: { name: 'url', value: ELSEWHERE } })).completion.values, [`${ELSEWHERE}/docs`]);
        assert.deepEqual((await client.complete({ ref: { type: 'ref/resource', uri: 'other://read/{page}' }, argument: { name: 'page', value: ELSEWHERE } })).completion.values, [`${ELSEWHERE}#top`]);
        assert.deepEqual((await client.complete({ ref: { type: 'ref/resource', uri: TEMPLATE }, argument: { name: 'page', value: PARTNER } })).completion.values, [`${PARTNER}#top`]);
      });
    });
  }

  // Neither a prompt nor a resource template: judged under the rules that name no tools (the defaults here),
  // rather than read for a uri it does not have (a TypeError, answered -32603, before this).
  test('a reference of another type is judged too, as a URI no upstream holds', async () => {
    const req = modernRequest(1, 'completion/complete', { ref: { type: 'ref/other' }, argument: { name: 'url', value: METADATA } });
    const answer = (await post(gw.url, req.body, req.headers)).json() as { error?: { code: number; data?: { code?: string; addressClass?: string } } };
    assert.deepEqual([answer.error?.code, answer.error?.data?.code, answer.error?.data?.addressClass], [-32602, 'egress_blocked', 'metadata'], JSON.stringify(answer));
    assert.equal(reached(web, METADATA) + reached(other, METADATA), 0);
  });
});
