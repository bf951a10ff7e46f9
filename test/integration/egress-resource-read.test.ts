// Egress rules on resources/read URIs (DESIGN.md §7: "resources: access and egress on the URI"). A server
// that serves a resource by fetching its URI (a web reader) reaches the host in it as a fetch tool does:
// until 5 December `resources/read { uri: "http://169.254.169.254/latest/meta-data/" }` reached such an
// upstream unjudged under any egress rule. Now the egress stage judges a URI of a fetched scheme (http,
// https, ws, wss, ftp, file) under the first egress rule that selects the caller and whose `tools` globs
// cover the whole upstream that reads it (`web/*`, `*`); a custom scheme (`demo://…`) is the server's
// identifier and passes unresolved. A resources/read has no tool result: the refusal is a JSON-RPC error
// -32602 (2026-07-28 server/resources.mdx §Error Handling: invalid params) with `data.code` egress_blocked,
// as a prompts/get's is. Upstreams: a v2 SDK server (`web`, modern era) that lists resources with
// network URIs and records every read it receives, and the reference server-everything (`everything`,
// legacy era, custom `demo://` URIs). Clients: the v1 SDK's (legacy era) and the v2 SDK's (modern era).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { McpServer } from '@modelcontextprotocol/server';
import { startEverythingHttp, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { refusalOf as refusalOfWork, startRecordingUpstream, stubResolver, withClient, type RecordingUpstream } from '../helpers/egress-judged.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { MAX_URL_NESTING } from '../../src/policy/egress/destinations.js';

/** Every host name the gateways asked to resolve is in `resolved`. */
const { resolveHost, resolved } = stubResolver();

const METADATA = 'http://169.254.169.254/latest/meta-data/';
const INSIDE = 'http://inside.attacker.test/admin';
const PARTNER = 'https://docs.partner.example/a';
const ELSEWHERE = 'https://www.elsewhere.example/';
const LOCAL_FILE = 'file:///etc/hostname';
/** Custom schemes: identifiers, never resolved nor blocked, even when they look like an address. */
const NOTE = 'demo://note/1';
const NOTE_LIKE_METADATA = 'demo://169.254.169.254/latest';
/** What curl-like clients fetch, and a jar: URI (its archive's URL is the destination). */
const GOPHER = 'gopher://10.0.0.9:6379/_INFO';
const LDAP_INSIDE = 'ldap://inside.attacker.test/dc=corp';
const JAR = 'jar:http://169.254.169.254/lib.jar!/META-INF/MANIFEST.MF';
/** The conformance suite's resource, read through Gatehouse: an identifier. */
const TEST_RESOURCE = 'test://example-resource';
const WEB_URIS = [METADATA, INSIDE, PARTNER, ELSEWHERE, LOCAL_FILE, NOTE, NOTE_LIKE_METADATA, GOPHER, LDAP_INSIDE, JAR, TEST_RESOURCE];

let web: RecordingUpstream;
let everything: EverythingHttp;
/** One upstream (no egress rules: the defaults alone). */
let gwOne: TestGateway;
/** Two upstreams through the catalog, a rule on the web upstream. */
let gwTwo: TestGateway;

before(async () => {
  web = await startRecordingUpstream(() => {
    const server = new McpServer({ name: 'web', version: '1.0.0' });
    for (const uri of WEB_URIS) server.registerResource(uri, uri, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri, text: `fetched ${uri}` }] }));
    return server;
  });
  const webUrl = web.url;
  everything = await startEverythingHttp();
  gwOne = await startGateway({ upstreams: [{ name: 'web', url: webUrl, era: 'modern' }], metrics: { enabled: true, port: 0 } }, { resolveHost });
  gwTwo = await startGateway(
    {
      metrics: { enabled: true, port: 0 },
      upstreams: [
        { name: 'web', url: webUrl, era: 'modern' },
        { name: 'everything', url: everything.url, uriPrefixes: ['demo://resource/', 'https://www.elsewhere.example/other/'] },
      ],
      policy: {
        egress: [
          // About one tool, not the upstream's resources: it does not select a read.
          { id: 'fetch-tool-only', tools: ['web/fetch'], deny: { hosts: ['docs.partner.example'] } },
          { id: 'partner-only', tools: ['web/*'], allow: { hosts: ['*.partner.example'], schemes: ['https'] } },
        ],
      },
    },
    { resolveHost },
  );
});
after(async () => {
  await gwTwo?.close();
  await gwOne?.close();
  await everything?.close();
  await web?.close();
});

const refusalOf = (work: Promise<unknown>) => refusalOfWork(work, 'the resource');

/** The URIs of the resources/read requests the web upstream received. */
const reads = () => web.requests.filter((r) => r.method === 'resources/read').map((r) => r.params?.uri);
const times = (uri: string) => reads().filter((u) => u === uri).length;

describe('egress rules on resources/read URIs (server/resources.mdx §Error Handling)', () => {
  for (const era of ['v1', 'v2'] as const) {
    test(`${era} client, one upstream: a metadata URI and a name resolving inside are refused -32602 egress_blocked before the upstream sees them`, async () => {
      await withClient(era, gwOne.url, async ({ readResource: read }) => {
        const before = { metadata: times(METADATA), inside: times(INSIDE) };
        const err = await refusalOf(read(METADATA));
        assert.equal(err.code, -32602);
        assert.equal(err.data?.code, 'egress_blocked');
        assert.equal(err.data?.argument, 'uri');
        assert.equal(err.data?.value, METADATA);
        assert.equal(err.data?.host, '169.254.169.254');
        assert.equal(err.data?.rule, 'default');
        assert.equal(err.data?.addressClass, 'metadata');
        assert.match(err.message, /Resource "http:\/\/169\.254\.169\.254\/latest\/meta-data\/": the URI names .*metadata/);
        const inside = await refusalOf(read(INSIDE));
        assert.equal(inside.data?.code, 'egress_blocked');
        assert.match(inside.message, /inside\.attacker\.test" resolves to 10\.0\.0\.9/);
        assert.deepEqual({ metadata: times(METADATA), inside: times(INSIDE) }, before, 'the upstream never received the blocked reads');
      });
    });

    test(`${era} client, one upstream: a public URI, a local file: URI and custom schemes pass; a custom scheme is never resolved`, async () => {
      await withClient(era, gwOne.url, async ({ readResource: read }) => {
        assert.equal((await read(PARTNER)).contents[0]!.text, `fetched ${PARTNER}`);
        assert.equal((await read(LOCAL_FILE)).contents[0]!.text, `fetched ${LOCAL_FILE}`, 'file: is judged by the rules’ schemes; none here');
        const resolvedBefore = resolved.length;
        assert.equal((await read(NOTE)).contents[0]!.text, `fetched ${NOTE}`);
        assert.equal((await read(NOTE_LIKE_METADATA)).contents[0]!.text, `fetched ${NOTE_LIKE_METADATA}`);
        assert.equal(resolved.length, resolvedBefore, 'nothing was resolved for a custom scheme');
      });
    });

    test(`${era} client, two upstreams: the rule whose tools globs cover the web upstream (web/*) judges its reads, a rule on one tool does not`, async () => {
      await withClient(era, gwTwo.url, async ({ readResource: read }) => {
        const before = times(ELSEWHERE);
        const err = await refusalOf(read(ELSEWHERE));
        assert.equal(err.code, -32602);
        assert.equal(err.data?.code, 'egress_blocked');
        assert.equal(err.data?.rule, 'partner-only');
        assert.equal(times(ELSEWHERE), before, 'the upstream never received it');
        const file = await refusalOf(read(LOCAL_FILE));
        assert.equal(file.data?.code, 'egress_blocked', 'an https-only allow refuses a file: URI');
        assert.match(file.message, /the server's own files/);
        // `fetch-tool-only` (tools: [web/fetch]) would deny this host: it is about that tool only.
        assert.equal((await read(PARTNER)).contents[0]!.text, `fetched ${PARTNER}`);
        assert.equal((await read(NOTE)).contents[0]!.text, `fetched ${NOTE}`, 'a custom scheme passes the https-only allow');
      });
    });

    test(`${era} client, two upstreams: server-everything's demo:// resources pass, and its reads are not judged by the web upstream's rule`, async () => {
      await withClient(era, gwTwo.url, async ({ readResource: read }) => {
        const text = (await read('demo://resource/dynamic/text/1')).contents[0]!.text;
        assert.match(String(text), /Resource 1/);
        // Routed to everything by its uriPrefixes: judged by the defaults (a public host), so it reaches
        // everything, which does not know it; web's https-only partner rule would have refused it.
        const other = await refusalOf(read('https://www.elsewhere.example/other/page'));
        assert.notEqual(other.data?.code, 'egress_blocked', other.message);
      });
    });
  }

  test('the refusals are counted under their rules', async () => {
    const line = async (gw: TestGateway, rule: string) => (await (await fetch(gw.gateway.metricsUrl!)).text()).split('\n').find((l) => l.startsWith(`gatehouse_policy_refusals_total{code="egress_blocked",rule="${rule}"}`));
    // Two blocked reads per client era on each gateway.
    assert.equal(await line(gwOne, 'default'), 'gatehouse_policy_refusals_total{code="egress_blocked",rule="default"} 4');
    assert.equal(await line(gwTwo, 'partner-only'), 'gatehouse_policy_refusals_total{code="egress_blocked",rule="partner-only"} 4');
  });

  // A reader that unwraps `?u=` fetches the URL inside; until 5 December only the outer host was judged.
  test('a URL nested in the URI (percent-encoded or not) is judged; one nested past the bounds is refused unread', async () => {
    await withClient('v2', gwOne.url, async ({ readResource: read }) => {
      const encoded = `${PARTNER}?u=${encodeURIComponent(METADATA)}`;
      const err = await refusalOf(read(encoded));
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, 'egress_blocked');
      assert.equal(err.data?.host, '169.254.169.254');
      assert.equal(err.data?.addressClass, 'metadata');
      const fragment = await refusalOf(read(`${PARTNER}#${INSIDE}`));
      assert.match(fragment.message, /inside\.attacker\.test" resolves to 10\.0\.0\.9/);
      const deep = `${PARTNER}?u=${'https://docs.partner.example/?u='.repeat(MAX_URL_NESTING)}${METADATA}`;
      const unread = await refusalOf(read(deep));
      assert.equal(unread.data?.code, 'egress_blocked');
      assert.match(unread.message, /URLs nested more than 4 deep, too many to check; read it another way/);
      assert.deepEqual([times(encoded), times(`${PARTNER}#${INSIDE}`), times(deep)], [0, 0, 0], 'the upstream never received them');
    });
  });

  // Until 5 December gopher:, ldap: and jar: were custom schemes here, passed unjudged to a server that may
  // read them with libcurl or a JVM.
  test('gopher:, ldap: and jar: URIs are judged like http ones; test://example-resource stays an identifier', async () => {
    await withClient('v1', gwOne.url, async ({ readResource: read }) => {
      const gopher = await refusalOf(read(GOPHER));
      assert.equal(gopher.code, -32602);
      assert.equal(gopher.data?.code, 'egress_blocked');
      assert.deepEqual([gopher.data?.host, gopher.data?.port, gopher.data?.addressClass], ['10.0.0.9', 6379, 'private']);
      const ldap = await refusalOf(read(LDAP_INSIDE));
      assert.match(ldap.message, /inside\.attacker\.test" resolves to 10\.0\.0\.9/);
      assert.equal(ldap.data?.port, 389);
      const jar = await refusalOf(read(JAR));
      assert.deepEqual([jar.data?.host, jar.data?.addressClass], ['169.254.169.254', 'metadata']);
      assert.deepEqual([times(GOPHER), times(LDAP_INSIDE), times(JAR)], [0, 0, 0], 'the upstream never received them');
      const resolvedBefore = resolved.length;
      assert.equal((await read(TEST_RESOURCE)).contents[0]!.text, `fetched ${TEST_RESOURCE}`);
      assert.equal(resolved.length, resolvedBefore, 'nothing was resolved for it');
    });
  });
});
