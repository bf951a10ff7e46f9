// Egress checks on arguments (issue 13 item 1): the SSRF corpus (test/fixtures/ssrf-corpus.json, over 60
// bypass strings) is blocked by the default policy, benign destinations pass, and rules allow and deny by
// host, scheme, port and CIDR. Name resolution goes through a stand-in resolver: the corpus maps names an
// attacker controls to internal addresses, as their DNS would.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { EgressRule } from '../../../src/config/schema.generated.js';
import { classify, embeddedIpv4 } from '../../../src/net/addresses.js';
import { destinationsIn, destinationsOfString, MAX_JSON_TEXT_CHARS, MAX_JSON_TEXT_LEVELS } from '../../../src/policy/egress/destinations.js';
import { EgressPolicy } from '../../../src/policy/egress/egress-policy.js';
import type { Principal } from '../../../src/pipeline/principal.js';
import type { Route } from '../../../src/pipeline/context.js';

const corpus = JSON.parse(readFileSync(new URL('../../fixtures/ssrf-corpus.json', import.meta.url), 'utf8')) as { resolves: Record<string, string[]>; blocked: string[]; allowed: string[] };
const resolver = async (host: string) => {
  const found = corpus.resolves[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
};
const ALICE: Principal = { subject: 'alice', scopes: [], groups: [], via: 'api_key', keyId: 'alice' };
const route = (ref: string, annotations?: Record<string, unknown>): Route => ({ kind: 'tools', ref, publicName: ref.split('/')[1]!, original: ref.split('/')[1]!, upstream: ref.split('/')[0]!, listed: true, params: [], ...(annotations ? { annotations } : {}) });

/** The verdicts on every destination in a string: undefined when it may go. */
async function verdicts(policy: EgressPolicy, text: string, ref = 'web/fetch') {
  const rule = policy.ruleFor(ALICE, route(ref));
  return Promise.all(destinationsOfString(text, false).map((d) => policy.check(d, rule)));
}

describe('the SSRF corpus', () => {
  const policy = new EgressPolicy([], resolver);
  test(`holds at least 60 bypass strings`, () => {
    assert.ok(corpus.blocked.length >= 60, `${corpus.blocked.length} strings`);
  });
  for (const s of corpus.blocked) {
    test(`blocked: ${s}`, async () => {
      const found = await verdicts(policy, s);
      assert.ok(found.length > 0, 'a destination is found in it');
      assert.ok(found.some((v) => v !== undefined), `some reading is blocked: ${JSON.stringify(destinationsOfString(s, false))}`);
    });
  }
  for (const s of corpus.allowed) {
    test(`allowed: ${s}`, async () => {
      assert.deepEqual((await verdicts(policy, s)).filter((v) => v !== undefined), []);
    });
  }
});

describe('rules', () => {
  const rules: EgressRule[] = [
    { id: 'crm-api', tools: ['crm/*'], allow: { hosts: ['*.example.com'], schemes: ['https'], ports: [443] } },
    { id: 'lab-net', tools: ['lab/*'], allow: { cidrs: ['10.20.0.0/16'] } },
    { id: 'no-evil', tools: ['web/*'], deny: { hosts: ['evil.example'] } },
    { id: 'ops-local', keys: ['ops'], allow: { hosts: ['127.0.0.1'], ports: [9090] } },
    { id: 'https-only', tools: ['sec/*'], allow: { hosts: ['*.example.com'], schemes: ['https'] } },
    { id: 'plain-web', tools: ['plain/*'], allow: { hosts: ['127.0.0.1'], ports: [80] } },
    { id: 'loop-but-not-one', tools: ['loop/*'], allow: { cidrs: ['127.0.0.0/8'] }, deny: { hosts: ['127.0.0.1'] } },
    { id: 'no-files', tools: ['nofile/*'], deny: { schemes: ['file'] } },
    { id: 'web-and-files', tools: ['wf/*'], allow: { hosts: ['*.example.com'], schemes: ['https', 'file'] } },
    { id: 'files-of-one-host', tools: ['fh/*'], deny: { hosts: ['files.example.com'], schemes: ['file'] } },
    { id: 'no-script', tools: ['ns/*'], deny: { schemes: ['javascript', 'data'] } },
    { id: 'tls-port', tools: ['tls/*'], allow: { hosts: ['*.example.com'], ports: [443] } },
  ];
  const policy = new EgressPolicy(rules, resolver);
  const check = async (text: string, ref: string, who: Principal = ALICE) => {
    const rule = policy.ruleFor(who, route(ref));
    const out = await Promise.all(destinationsOfString(text, true).map((d) => policy.check(d, rule)));
    return out.find((v) => v !== undefined);
  };

  test('an allow lets through what it names, by host glob, scheme and port, and nothing else', async () => {
    assert.equal(await check('https://api.example.com/x', 'crm/create'), undefined);
    assert.match((await check('http://api.example.com/x', 'crm/create'))!.reason, /rule "crm-api" does not allow it/, 'scheme');
    assert.match((await check('https://api.example.com:8443/x', 'crm/create'))!.reason, /does not allow/, 'port');
    assert.match((await check('https://cdn.example.net/x', 'crm/create'))!.reason, /does not allow/, 'host');
    assert.equal((await check('https://example.com/', 'crm/create'))?.rule, 'crm-api', '*.example.com needs a label before it');
    // Scheme-relative: an http base would fetch it over http, which the rule does not allow (it once passed,
    // its scheme dropped and so never checked).
    assert.match((await check('//api.example.com/x', 'sec/fetch'))?.reason ?? 'passed', /rule "https-only" does not allow it/, 'scheme-relative');
    assert.equal(await check('https://api.example.com/x', 'sec/fetch'), undefined);
  });

  test('an allow by CIDR covers private addresses and names resolving into it; special ranges outside stay blocked', async () => {
    assert.equal(await check('http://10.20.3.4/', 'lab/probe'), undefined);
    assert.match((await check('http://10.0.0.7/', 'lab/probe'))!.reason, /does not allow/);
    assert.match((await check('http://internal.attacker.test/', 'lab/probe'))!.reason, /does not allow/);
  });

  test('a deny blocks what it names; the rest of the defaults still apply', async () => {
    assert.match((await check('http://evil.example/', 'web/fetch'))!.reason, /rule "no-evil" denies it/);
    assert.equal(await check('https://api.example.com/', 'web/fetch'), undefined);
    assert.match((await check('http://127.0.0.1/', 'web/fetch'))!.reason, /127\.0\.0\.1 is a loopback address/);
  });

  test('a deny naming an address by IP blocks it however it is reached: by a name resolving to it, in any IPv4 form', async () => {
    for (const url of ['http://127.0.0.1/', 'http://2130706433/', 'http://127.1/', 'http://localhost/', 'http://localtest.me/']) {
      assert.match((await check(url, 'loop/probe'))?.reason ?? 'passed', /rule "loop-but-not-one" denies it/, url);
    }
    assert.equal(await check('http://127.0.0.2/', 'loop/probe'), undefined, 'the rest of the allowed range passes');
  });

  test('a deny naming an IPv4 address by IP blocks it written as IPv6 that carries it, or with a zone id', async () => {
    // A dual-stack socket connects to [::ffff:127.0.0.1] at 127.0.0.1; a zone id names an interface, not
    // another host. Until 4 December these passed a deny naming 127.0.0.1 (a deny by cidrs caught them).
    for (const url of ['http://[::ffff:127.0.0.1]/', 'http://[::ffff:7f00:1]/', 'http://[::127.0.0.1]/', 'http://[64:ff9b::127.0.0.1]/']) {
      assert.match((await check(url, 'loop/probe'))?.reason ?? 'passed', /rule "loop-but-not-one" denies it/, url);
    }
    const rule = policy.ruleFor(ALICE, route('loop/probe'));
    for (const host of ['::ffff:127.0.0.1%lo', '::ffff:127.0.0.1%25eth0']) {
      const decided = await policy.decide({ host, port: 80 }, rule);
      assert.match('block' in decided ? decided.block.reason : 'passed', /rule "loop-but-not-one" denies it/, host);
    }
    assert.equal(await check('http://[::ffff:127.0.0.2]/', 'loop/probe'), undefined, 'the rest of the allowed range passes');
  });

  test('a port list is not escaped by leading zeros or a tab in the port', async () => {
    // Read as no port at all, these were judged on the scheme's default, 80, which the rule allows.
    assert.equal(await check('http://127.0.0.1/', 'plain/fetch'), undefined);
    assert.equal(await check('http://127.0.0.1:000080/', 'plain/fetch'), undefined);
    for (const url of ['http://127.0.0.1:0000006379/', 'http://127.0.0.1:63\t79/', 'http:127.0.0.1:6379/']) {
      assert.match((await check(url, 'plain/fetch'))?.reason ?? 'passed', /does not allow/, url);
    }
  });

  test('an allow listing ports refuses a URL whose scheme has no port Gatehouse knows and which names none', async () => {
    // memcached://host/ reaches port 11211, rtsp://host/ 554: not 443. Until 4 December a URL of a scheme
    // without a default port in the table was judged as having no port, and the port list did not apply.
    for (const url of ['memcached://api.example.com/', 'rtsp://api.example.com/stream', 'amqp://api.example.com/']) {
      assert.match((await check(url, 'tls/fetch'))?.reason ?? 'passed', /rule "tls-port" does not allow it/, url);
    }
    assert.equal(await check('https://api.example.com/', 'tls/fetch'), undefined);
    assert.equal(await check('amqp://api.example.com:443/', 'tls/fetch'), undefined, 'a port it names is judged');
    assert.equal(await check('api.example.com', 'tls/fetch'), undefined, 'a bare host names no scheme: the port is the tool\'s');
  });

  test('a bare host with its port in a sibling argument (host, port) is judged on that port', async () => {
    // Database, SSH and Redis tools take the two apart. Until 4 December the port argument was not read:
    // {"host": "api.example.com", "port": 22} passed an allow of port 443 alone.
    const rule = policy.ruleFor(ALICE, route('tls/connect'));
    const judged = async (args: unknown) => (await Promise.all(destinationsIn(args, undefined).found.map((d) => policy.check(d, rule)))).find((v) => v !== undefined);
    for (const args of [{ host: 'api.example.com', port: 22 }, { host: 'api.example.com', port: '22' }, { hostname: 'api.example.com', port: 6379 }, { servers: [{ host: 'api.example.com', port: 25 }] }, { hosts: ['api.example.com'], port: 22 }]) {
      assert.match((await judged(args))?.reason ?? 'passed', /rule "tls-port" does not allow it/, JSON.stringify(args));
    }
    assert.equal(await judged({ host: 'api.example.com', port: 443 }), undefined);
    assert.equal(await judged({ host: 'api.example.com' }), undefined, 'no port given: the tool\'s');
    assert.equal(await judged({ host: 'api.example.com:443', port: 22 }), undefined, 'a port in the host is the one judged');
  });

  test('a loopback address passes only when an allow names it by address; selectors pick the rule', async () => {
    const ops: Principal = { ...ALICE, subject: 'key:ops', keyId: 'ops' };
    assert.equal(await check('http://127.0.0.1:9090/metrics', 'any/tool', ops), undefined);
    assert.match((await check('http://127.0.0.1:9091/metrics', 'any/tool', ops))!.reason, /does not allow/);
    assert.match((await check('http://localhost:9090/', 'any/tool', ops))!.reason, /does not allow/, 'the name is not the literal the rule allows');
    assert.equal((await check('http://127.0.0.1:9090/metrics', 'any/tool'))?.rule, 'default', 'another caller: no rule, the defaults');
  });

  test('a file: URL naming no host is judged by its scheme: refused where allow.schemes omits file or deny.schemes names it', async () => {
    // It once named no destination at all, so an "https only" rule let a fetch tool read the server's files.
    // Read as free text: a field named like a destination adds a bare-host reading of its own.
    const check = async (text: string, ref: string) => {
      const rule = policy.ruleFor(ALICE, route(ref));
      const out = await Promise.all(destinationsOfString(text, false).map((d) => policy.check(d, rule)));
      return out.find((v) => v !== undefined);
    };
    for (const text of ['file:///etc/passwd', 'FILE:///etc/passwd', 'file:/etc/passwd', 'file:etc/passwd', 'see file:///etc/shadow now', 'file:////etc/passwd']) {
      assert.match((await check(text, 'crm/create'))?.reason ?? 'passed', /rule "crm-api" does not allow it \(its schemes do not include file\)/, text);
      assert.match((await check(text, 'nofile/read'))?.reason ?? 'passed', /rule "no-files" denies it/, text);
    }
    // file://localhost is a local file to the WHATWG parser; read as the host localhost too, as before.
    assert.equal((await check('file://localhost/etc/passwd', 'crm/create'))?.rule, 'crm-api');
    assert.equal((await check('file://localhost/etc/passwd', 'nofile/read'))?.rule, 'no-files');
    // No scheme rule: a local path passes, by default and under rules about hosts only (a filesystem server's paths).
    for (const ref of ['lab/probe', 'web/fetch', 'any/tool', 'wf/read', 'fh/read']) assert.equal(await check('file:///data/report.txt', ref), undefined, ref);
    // One naming a host is judged by the host as well: a UNC path reaches the network.
    assert.equal((await check('file:\\\\10.0.0.1\\share', 'any/tool'))?.address, '10.0.0.1');
    assert.equal((await check('file://10.0.0.1/share', 'wf/read'))?.rule, 'web-and-files');
    // Words that merely end in file: are not file: URLs.
    assert.deepEqual(destinationsOfString('profile:/x and file: later', false), []);
  });

  test('a URL naming no host in a destination field (data:, javascript:) is judged by its scheme, as a local file: URL is', async () => {
    // A browser tool navigating to either runs what it holds, fetches included (base64 hides their URLs from
    // the text scan). Until 4 December neither was a destination at all: an allow of https alone passed them.
    for (const text of ["javascript:fetch('//169.254.169.254/latest/meta-data/')", 'JaVaScRiPt:alert(1)', '  javascript:void(0)', 'javascript://%0aalert(1)', 'data:text/html;base64,PHNjcmlwdD5mZXRjaCgnaHR0cDovLzEwLjAuMC4xLycpPC9zY3JpcHQ+', 'blob:https://api.example.com/0b5c']) {
      assert.match((await check(text, 'crm/create'))?.reason ?? 'passed', /rule "crm-api" does not allow it/, text);
    }
    assert.match((await check('javascript:alert(1)', 'ns/open'))?.reason ?? 'passed', /rule "no-script" denies it/);
    assert.match((await check('data:,hi', 'ns/open'))?.reason ?? 'passed', /rule "no-script" denies it/);
    // Where no scheme rule applies they pass, as by default; a host:port is still a host, not a scheme.
    assert.equal(await check('data:text/plain,hi', 'any/tool'), undefined);
    assert.equal(await check('https://api.example.com/', 'ns/open'), undefined);
    assert.equal(await check('api.example.com:443', 'crm/create'), undefined);
    assert.match((await check('localhost:6379', 'crm/create'))?.reason ?? 'passed', /does not allow/);
    // Outside destination fields a word before a colon is prose, not a URL.
    assert.deepEqual(destinationsOfString('data:text/plain,hi', false), []);
    assert.deepEqual(destinationsOfString('note: javascript:alert(1)', false), []);
  });

  test('no rule selecting the call: public passes, special blocked, with rule "default"', async () => {
    assert.equal(await check('https://api.example.com/', 'other/tool'), undefined);
    assert.deepEqual(await check('http://169.254.169.254/', 'other/tool'), { rule: 'default', reason: '169.254.169.254 is a metadata address; only an egress rule naming it by address allows it', address: '169.254.169.254', addressClass: 'metadata' });
  });
});

describe('where destinations are found', () => {
  test('schema-declared and destination-named fields are read as hosts even when bare; other strings only when plainly addresses', () => {
    const schema = { type: 'object', properties: { server: { type: 'string' }, target: { type: 'string', format: 'hostname' }, note: { type: 'string' }, nested: { type: 'array', items: { type: 'object', properties: { href: { type: 'string', format: 'uri' } } } } } };
    const { found } = destinationsIn({ server: 'intranet', target: '127.1', note: 'version 1.2 see http://10.0.0.1/x', nested: [{ href: '//169.254.169.254/' }], other: { 'http://192.168.1.1/': true } }, schema);
    assert.deepEqual(
      found.map((d) => [d.path, d.host]),
      [
        ['server', 'intranet'],
        ['target', '127.0.0.1'],
        ['note', '10.0.0.1'],
        ['nested[0].href', '169.254.169.254'],
        ['nested[0].href', '169.254.169.254'],
        ['other.http://192.168.1.1/', '192.168.1.1'],
      ],
    );
  });

  test('words and sentences are passed over; anything with a host in it is still read', () => {
    // The shortcut for strings that cannot name a host must not hide the ones that do.
    for (const text of ['hello', 'a sentence with no address in it', 'x'.repeat(300), '']) assert.deepEqual(destinationsOfString(text, false), [], text);
    const hosts = (text: string, strict = false) => destinationsOfString(text, strict).map((d) => d.host);
    assert.deepEqual(hosts('localhost'), ['localhost']);
    assert.deepEqual(hosts('LOCALHOST:8080'), ['localhost']);
    assert.deepEqual(hosts('//localhost/admin'), ['localhost', 'localhost'], 'read as http and as https');
    assert.deepEqual(hosts('[::1]'), ['::1']);
    // IPv6 without brackets, and zone ids, which the WHATWG parser refuses and other clients connect to.
    assert.deepEqual(hosts('::1'), ['::1']);
    assert.deepEqual(hosts('fe80::1%eth0'), ['fe80::1']);
    assert.deepEqual(hosts('2001:db8:0:0:0:0:0:1'), ['2001:db8::1']);
    assert.deepEqual(hosts('::ffff:127.0.0.1', true), ['::ffff:7f00:1']);
    assert.deepEqual(hosts('http://[fe80::1%25eth0]:8080/x'), ['fe80::1']);
    assert.deepEqual(hosts('[fe80::1%25eth0]'), ['fe80::1']);
    for (const text of ['12:30:45', 'a:b:c', 'deadbeef:cafe']) assert.deepEqual(hosts(text), [], text);
    assert.deepEqual(hosts('see https://a.example.com/x and ftp://10.0.0.1/y'), ['a.example.com', '10.0.0.1']);
    // A field declared or named as a destination is read even as a bare word.
    assert.deepEqual(hosts('intranet', true), ['intranet']);
  });

  test('a special scheme names a host after any slashes, none included, as the WHATWG parser (and fetch) reads it', () => {
    // `new URL("http:127.0.0.1:9/")` has host 127.0.0.1, and undici connects there.
    const hosts = (text: string, strict = false) => destinationsOfString(text, strict).map((d) => `${d.scheme ?? ''}|${d.host}|${d.port ?? ''}`);
    for (const strict of [true, false]) {
      assert.deepEqual(hosts('http:127.0.0.1:9/', strict), ['http|127.0.0.1|9'], `strict ${strict}`);
      assert.deepEqual(hosts('http:169.254.169.254/latest/meta-data/', strict), ['http|169.254.169.254|80']);
      assert.deepEqual(hosts('HTTP:0x7f.1:6379', strict), ['http|127.0.0.1|6379']);
      assert.deepEqual(hosts('https:/127.0.0.1/', strict), ['https|127.0.0.1|443']);
      assert.deepEqual(hosts('http:\\\\127.0.0.1/', strict), ['http|127.0.0.1|80']);
      assert.deepEqual(hosts('ws:///127.0.0.1:81/', strict), ['ws|127.0.0.1|81']);
    }
    assert.deepEqual(hosts('fetch http:127.0.0.1:9/x now'), ['http|127.0.0.1|9']);
    // Other schemes have an authority only after `//`, as before.
    assert.deepEqual(hosts('mailto:someone@example.com'), []);
    assert.deepEqual(hosts('urn:isbn:0451450523'), []);
    assert.deepEqual(hosts('it is 12:30 now'), []);
    assert.deepEqual(hosts('use https: always'), []);
  });

  test('every URL in a string is read, also when the string starts with one; a scheme after a word character too', () => {
    const hosts = (text: string) => destinationsOfString(text, false).map((d) => d.host);
    assert.deepEqual(hosts('https://api.example.com/docs\nhttp://127.0.0.1:9/'), ['api.example.com', '127.0.0.1']);
    assert.deepEqual(hosts('https://a.example.com/ http://10.0.0.1/'), ['a.example.com', '10.0.0.1']);
    assert.deepEqual(hosts('see_http://127.0.0.1/'), ['127.0.0.1']);
  });

  test('a format inside anyOf, oneOf or allOf makes the field a destination (pydantic Optional[HttpUrl])', () => {
    const schema = { type: 'object', properties: { site: { anyOf: [{ type: 'string', format: 'uri' }, { type: 'null' }] }, peer: { oneOf: [{ type: 'string', format: 'hostname' }] }, note: { anyOf: [{ type: 'string' }, { type: 'null' }] } } };
    const found = destinationsIn({ site: 'intranet', peer: 'db1', note: 'intranet' }, schema).found.map((d) => [d.path, d.host]);
    assert.deepEqual(found, [['site', 'intranet'], ['peer', 'db1']]);
  });

  test('a scheme-relative URL is read with either scheme a base may give it', () => {
    const readings = destinationsOfString('//api.example.com/x', false).map((d) => `${d.scheme}|${d.host}|${d.port}`);
    assert.deepEqual(readings, ['http|api.example.com|80', 'https|api.example.com|443']);
  });

  test('a port is read as WHATWG reads it: leading zeros and tabs do not hide it', () => {
    const ports = (text: string) => destinationsOfString(text, false).map((d) => d.port);
    assert.deepEqual(ports('http://127.0.0.1:000041234/'), [41234]);
    // The text scan stops at the tab and reads port 4 as well: both readings are judged.
    assert.ok(ports('http://127.0.0.1:4\t1234/').includes(41234));
    assert.deepEqual(ports('http://127.0.0.1:00080/'), [80]);
  });

  test('camelCase names are destination fields too (baseUrl, targetHost, serverIP)', () => {
    const paths = (args: Record<string, string>) => destinationsIn(args, undefined).found.map((d) => [d.path, d.host]);
    assert.deepEqual(paths({ targetHost: '2130706433' }), [['targetHost', '127.0.0.1']]);
    assert.deepEqual(paths({ dbHost: 'metadata' }), [['dbHost', 'metadata']]);
    assert.deepEqual(paths({ baseUrl: '127.1' }), [['baseUrl', '127.0.0.1']]);
    assert.deepEqual(paths({ baseURL: '127.1', serverIP: '10.1.2.3', callbackUrl: 'intranet' }), [['baseURL', '127.0.0.1'], ['serverIP', '10.1.2.3'], ['callbackUrl', 'intranet']]);
    // Words that merely end in the same letters are not.
    assert.deepEqual(paths({ ghost: 'intranet', curl: 'intranet', slip: 'intranet' }), []);
  });

  test('arguments too deep or too many to read are reported unread, never passed as read', () => {
    let deep: unknown = 'http://127.0.0.1/';
    for (let i = 0; i < 1_001; i++) deep = [deep];
    assert.equal(destinationsIn({ data: deep }, undefined).unread, true);
    const many = [...Array.from({ length: 100_000 }, () => 'x'), 'http://127.0.0.1/'];
    assert.equal(destinationsIn({ data: many }, undefined).unread, true);
    // 33 levels, once past the walk's bound, are read now.
    let fine: unknown = 'http://127.0.0.1/';
    for (let i = 0; i < 33; i++) fine = [fine];
    const read = destinationsIn({ data: fine }, undefined);
    assert.equal(read.unread, false);
    assert.deepEqual(read.found.map((d) => d.host), ['127.0.0.1']);
  });

  test('JSON text inside a string is parsed and read: host fields, bare addresses, URLs, however often encoded', () => {
    // A server that decodes such a payload connects to the host in it; the text scan alone read only URLs.
    const found = (args: unknown) => destinationsIn(args, undefined).found.map((d) => [d.path, d.host]);
    assert.deepEqual(found({ payload: '{"host":"169.254.169.254"}' }), [['payload(JSON).host', '169.254.169.254']]);
    assert.deepEqual(found({ payload: ' {"a": {"endpoint": "metadata"}, "port": 6379} ' }), [['payload(JSON).a.endpoint', 'metadata']]);
    assert.deepEqual(found({ payload: '["10.0.0.1", "words"]' }), [['payload(JSON)[0]', '10.0.0.1']]);
    assert.deepEqual(found({ payload: JSON.stringify(JSON.stringify({ host: '127.1' })) }), [['payload(JSON)(JSON).host', '127.0.0.1']]);
    // Escapes the text scan cannot see through are decoded by the parse.
    assert.deepEqual(found({ payload: '{"target":"\\u0031\\u0030.0.0.1"}' }), [['payload(JSON).target', '10.0.0.1']]);
    // A JSON-encoded string in a destination field is still read as a host.
    assert.deepEqual(found({ host: '"intranet"' }).at(-1), ['host(JSON)', 'intranet']);
    // Text that only looks like JSON is read as text, as before.
    assert.deepEqual(found({ note: '[see http://10.0.0.1/ here]', other: '{not json}' }), [['note', '10.0.0.1']]);
    assert.equal(destinationsIn({ note: '{not json}' }, undefined).unread, false);
  });

  test('JSON text past its bounds (levels inside one another, characters parsed per call) is reported unread', () => {
    let text = JSON.stringify({ host: '10.0.0.1' });
    for (let i = 1; i < MAX_JSON_TEXT_LEVELS; i++) text = JSON.stringify(text);
    const within = destinationsIn({ payload: text }, undefined);
    assert.equal(within.unread, false);
    assert.deepEqual(within.found.map((d) => d.host), ['10.0.0.1']);
    assert.equal(destinationsIn({ payload: JSON.stringify(text) }, undefined).unread, true, 'one level more');
    const big = JSON.stringify({ filler: 'x'.repeat(MAX_JSON_TEXT_CHARS / 2) });
    assert.equal(destinationsIn({ a: big }, undefined).unread, false);
    assert.equal(destinationsIn({ a: big, b: big, c: '{"host":"10.0.0.1"}' }, undefined).unread, true, 'over the characters parsed per call');
  });

  test('an argument named like an inherited member (constructor, toString) is judged by the schema as any other', () => {
    // Its name once found Object.prototype's member in the schema's `properties`, a function that is no
    // schema: the argument escaped `additionalProperties`' format, and a bare host in it was not read.
    const schema = { type: 'object', properties: { note: { type: 'string' } }, additionalProperties: { type: 'string', format: 'hostname' } };
    const { found } = destinationsIn(JSON.parse('{"constructor":"metadata","toString":"redis","__proto__":"intranet","x":"vault"}'), schema);
    assert.deepEqual(found.map((d) => [d.path, d.host]), [['constructor', 'metadata'], ['toString', 'redis'], ['__proto__', 'intranet'], ['x', 'vault']]);
    // A scheme named like one has no default port (it once had Object itself as its port).
    const [odd] = destinationsOfString('constructor://10.0.0.1/', false);
    assert.equal(odd?.host, '10.0.0.1');
    assert.equal(odd?.port, undefined);
    assert.equal(destinationsOfString('ftp://10.0.0.1/', false)[0]?.port, 21);
  });

  test('IPv6 forms that carry IPv4 are judged by it', () => {
    assert.equal(embeddedIpv4('::ffff:7f00:1'), '127.0.0.1');
    assert.equal(embeddedIpv4('64:ff9b::a9fe:a9fe'), '169.254.169.254');
    assert.equal(embeddedIpv4('2002:c0a8:101::'), '192.168.1.1');
    assert.equal(classify('::ffff:a00:1'), 'private');
    assert.equal(classify('2606:4700::6810:84e5'), 'public');
  });
  test('a number in a field named for a host or an IP address is judged as the IPv4 address it writes (2130706433 is 127.0.0.1)', async () => {
    // A server that formats it into a URL (`http://${host}/`) reaches the address WHATWG reads in the
    // digits, as for the same digits in a string.
    const found = (args: unknown) => destinationsIn(args, undefined).found.map((d) => [d.path, d.host, d.value]);
    assert.deepEqual(found({ host: 2130706433 }), [['host', '127.0.0.1', '2130706433']]);
    assert.deepEqual(found({ ip: 3232235521 }), [['ip', '192.168.0.1', '3232235521']]);
    assert.deepEqual(found({ targetHost: 0, server_ip: 167772161, hosts: [2852039166] }), [['targetHost', '0.0.0.0', '0'], ['server_ip', '10.0.0.1', '167772161'], ['hosts[0]', '169.254.169.254', '2852039166']]);
    // Inside JSON text in a string too, by the key it has there.
    assert.deepEqual(found({ payload: '{"host": 2130706433}' }), [['payload(JSON).host', '127.0.0.1', '2130706433']]);
    assert.deepEqual(found({ payload: '[{"ip": 2852039166}]' }), [['payload(JSON)[0].ip', '169.254.169.254', '2852039166']]);
    // The default policy blocks them as it blocks the same digits written as a string.
    const policy = new EgressPolicy([], resolver);
    const rule = policy.ruleFor(ALICE, route('web/fetch'));
    for (const args of [{ host: 2130706433 }, { ip: 3232235521 }, { payload: '{"host":2130706433}' }]) {
      const [d] = destinationsIn(args, undefined).found;
      assert.ok(d !== undefined && (await policy.check(d, rule)) !== undefined, JSON.stringify(args));
    }
    // Not numbers elsewhere, nor ones no IPv4 address writes: a count, a port, a register address, a
    // fraction, a negative number, one past 2^32 - 1.
    assert.deepEqual(found({ count: 2130706433, port: 6379, target: 3, address: 40001, origin: 0, host: 1.5, ip: -1, hostIp: 4294967296 }), []);
    assert.deepEqual(found({ ip: 4294967295 }), [['ip', '255.255.255.255', '4294967295']]);
  });

});
