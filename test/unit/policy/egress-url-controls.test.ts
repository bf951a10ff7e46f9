// The WHATWG URL parser, which browsers and fetch use, drops C0 controls and spaces at either end of a URL and
// every tab and newline inside it (URL Standard §4.4 basic URL parser, steps 1–3): `java\tscript:alert(1)`,
// `\x01javascript:…` and `data\r:text/html,…` are javascript: and data: URLs to a browser tool. Until
// 5 December the egress check read a whole string by patterns that stop at such a character, found no URL
// in them, and an https-only allow passed them to a browser tool; so did `fi\tle:///etc/passwd` (a file:
// URL), and `ht\ttp://internal.example.com/` dodged a deny of http for that host. A whole string is now read
// as the parser reads it. (The hostless-URL rule is 66a463c's; docs/configuration.md egress[].allow.schemes.)

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { destinationsIn } from '../../../src/policy/egress/destinations.js';
import { EgressPolicy } from '../../../src/policy/egress/egress-policy.js';
import type { Principal } from '../../../src/pipeline/principal.js';
import type { Route } from '../../../src/pipeline/context.js';

const resolver = async (host: string) => {
  if (host.endsWith('example.com')) return ['93.184.216.34'];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};
const ALICE: Principal = { subject: 'alice', scopes: [], groups: [], via: 'api_key', keyId: 'alice' };
const route = (ref: string): Route => ({ kind: 'tools', ref, publicName: ref.split('/')[1]!, original: ref.split('/')[1]!, upstream: ref.split('/')[0]!, listed: true, params: [] });
const policy = new EgressPolicy(
  [
    { id: 'https-only', tools: ['web/*'], allow: { hosts: ['*.example.com'], schemes: ['https'] } },
    { id: 'no-plain-http-inside', tools: ['ops/*'], deny: { hosts: ['internal.example.com'], schemes: ['http'] } },
  ],
  resolver,
);

async function verdict(ref: string, args: unknown): Promise<string> {
  const rule = policy.ruleFor(ALICE, route(ref));
  const blocks = await Promise.all(destinationsIn(args, undefined).found.map((d) => policy.check(d, rule)));
  return blocks.find((b) => b !== undefined)?.reason ?? 'passed';
}

test('a javascript:, data: or file: URL with a tab, a newline or a control character in it is still judged by its scheme', async () => {
  for (const url of ['java\tscript:alert(1)', 'java\nscript:fetch("//169.254.169.254/")', '\x01javascript:alert(1)', '\x00data:text/html,<script>1</script>', 'data\r:text/html,x', 'javascript:alert(1)\x1f', 'fi\tle:///etc/passwd']) {
    assert.equal(new URL(url).protocol.length > 0, true, 'the WHATWG parser reads a URL in it');
    assert.match(await verdict('web/open', { url }), /rule "https-only" does not allow it/, JSON.stringify(url));
  }
});

test('a URL with an authority is read through the same characters', async () => {
  assert.match(await verdict('ops/fetch', { url: 'ht\ttp://internal.example.com/' }), /rule "no-plain-http-inside" denies it/);
  assert.match(await verdict('ops/fetch', { url: '\x02http://internal.example.com/' }), /rule "no-plain-http-inside" denies it/);
  assert.equal(await verdict('ops/fetch', { url: 'ht\ttps://internal.example.com/' }), 'passed');
  assert.equal(await verdict('web/open', { url: 'https://api.example.com/\n' }), 'passed');
});
