// A deny listing only schemes that name no network destination (`deny: { schemes: [file] }`, the "no files"
// rule docs/configuration.md describes; or javascript, data) is about URLs of those schemes. Until 5 December
// it also matched every destination that has no scheme at all: a bare host in an argument
// ({"host": "api.example.com"}, {"url": "api.example.com"}) and every CONNECT tunnel through the egress
// proxy were refused "rule denies it", since the scheme dimension was skipped for them and the deny named no
// hosts to narrow it. Such a deny now leaves scheme-less destinations to the rest of the rule; a deny that
// lists a network scheme (http) still matches them, as either may carry it. Real egress proxy and target on
// 127.0.0.1 for the tunnel (GATEWAY-REQUIREMENTS.md §SSRF: the proxy applies the same rules).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import type { EgressRule } from '../../../src/config/schema.generated.js';
import { createLogger } from '../../../src/log/logger.js';
import { destinationsIn } from '../../../src/policy/egress/destinations.js';
import { EgressPolicy } from '../../../src/policy/egress/egress-policy.js';
import { EgressProxy } from '../../../src/policy/egress/proxy.js';
import type { Principal } from '../../../src/pipeline/principal.js';

const resolver = async (host: string): Promise<string[]> => {
  if (host === 'api.example.com') return ['93.184.216.34'];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};
const ALICE: Principal = { subject: 'alice', scopes: [], groups: [], via: 'api_key', keyId: 'alice' };
const NO_FILES: EgressRule = { id: 'no-files', deny: { schemes: ['file'] } };
const NO_SCRIPT: EgressRule = { id: 'no-script', deny: { schemes: ['javascript', 'data'] } };
const NO_PLAIN_HTTP: EgressRule = { id: 'no-plain-http', deny: { schemes: ['http'], hosts: ['api.example.com'] } };

/** Every refusal among the destinations of `args` under the one rule (one line each), or 'passed'. */
async function verdict(rule: EgressRule, args: unknown): Promise<string> {
  const policy = new EgressPolicy([rule], resolver);
  const compiled = policy.ruleFor(ALICE, undefined);
  const blocks = await Promise.all(destinationsIn(args, undefined).found.map((d) => policy.check(d, compiled)));
  const reasons = blocks.flatMap((b) => (b === undefined ? [] : [b.reason]));
  return reasons.length === 0 ? 'passed' : reasons.join('\n');
}

test('a deny of file: or script schemes passes a bare host and a URL of another scheme', async () => {
  for (const rule of [NO_FILES, NO_SCRIPT]) {
    for (const args of [{ host: 'api.example.com' }, { url: 'api.example.com' }, { host: 'api.example.com', port: 443 }, { url: 'https://api.example.com/' }]) {
      assert.equal(await verdict(rule, args), 'passed', `${rule.id} ${JSON.stringify(args)}`);
    }
  }
});

test('it still refuses URLs of its schemes, with or without a host', async () => {
  for (const url of ['file:///etc/passwd', 'file://api.example.com/share']) assert.match(await verdict(NO_FILES, { url }), /rule "no-files" denies it/, url);
  for (const url of ['javascript:alert(1)', 'data:text/html,hi']) assert.match(await verdict(NO_SCRIPT, { url }), /rule "no-script" denies it/, url);
});

test('a deny naming a network scheme still matches a bare host of its hosts (either may carry it)', async () => {
  assert.match(await verdict(NO_PLAIN_HTTP, { host: 'api.example.com' }), /rule "no-plain-http" denies it/);
  assert.equal(await verdict(NO_PLAIN_HTTP, { url: 'https://api.example.com/' }), 'passed');
});

let target: Server;
let proxy: EgressProxy;
let proxyPort: number;
let policy = new EgressPolicy([], resolver);
before(async () => {
  target = createServer((s) => s.end('hello'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  proxy = new EgressProxy(() => policy, () => 'up', createLogger('error', () => {}));
  proxyPort = Number(new URL(await proxy.listen('127.0.0.1', 0)).port);
});
after(async () => {
  await proxy.close();
  target.close();
});

test('through the egress proxy, a CONNECT under a deny of file: is tunnelled', async () => {
  policy = new EgressPolicy([{ id: 'loopback-no-files', allow: { cidrs: ['127.0.0.1/32'] }, deny: { schemes: ['file'] } }], resolver);
  const authority = `127.0.0.1:${(target.address() as AddressInfo).port}`;
  const answer = await new Promise<string>((resolve, reject) => {
    const s = connect(proxyPort, '127.0.0.1', () => s.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`));
    let got = '';
    s.on('data', (d) => (got += String(d)));
    s.on('error', reject);
    s.on('close', () => resolve(got));
    s.setTimeout(5_000, () => reject(new Error('no answer')));
  });
  assert.equal(answer, 'HTTP/1.1 200 Connection Established\r\n\r\nhello');
});
