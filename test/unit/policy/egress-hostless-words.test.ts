// A destination field holding `word:text` (a note, a label, a URN: "note:hello", "TODO: fix",
// "urn:isbn:0451450523") is no URL a client reaches. Until 5 December every such value was judged by its
// "scheme" under an allow listing schemes, so an https-only rule refused a tool call whose `url` or
// `target` field held a label: a false refusal the model could not act on. Only schemes a client acts on
// without a host (javascript:, data:, blob:, mailto:, file: ...) are judged by scheme now; a URL with an
// authority is judged as before (GATEWAY-REQUIREMENTS.md §SSRF: block what reaches a destination), and a
// deny naming a scheme still refuses it whatever it is.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { destinationsIn } from '../../../src/policy/egress/destinations.js';
import { EgressPolicy } from '../../../src/policy/egress/egress-policy.js';
import type { Principal } from '../../../src/pipeline/principal.js';
import type { Route } from '../../../src/pipeline/context.js';

const resolver = async (host: string) => {
  if (host === 'api.example.com') return ['93.184.216.34'];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};
const ALICE: Principal = { subject: 'alice', scopes: [], groups: [], via: 'api_key', keyId: 'alice' };
const route = (ref: string): Route => ({ kind: 'tools', ref, publicName: ref.split('/')[1]!, original: ref.split('/')[1]!, upstream: ref.split('/')[0]!, listed: true, params: [] });
const policy = new EgressPolicy(
  [
    { id: 'https-only', tools: ['web/*'], allow: { hosts: ['*.example.com'], schemes: ['https'] } },
    { id: 'no-notes', tools: ['strict/*'], deny: { schemes: ['note'] } },
  ],
  resolver,
);

/** The first refusal among the destinations of `{ [field]: value }`, or 'passed'. */
async function verdict(ref: string, field: string, value: string): Promise<string> {
  const rule = policy.ruleFor(ALICE, route(ref));
  const { found } = destinationsIn({ [field]: value }, undefined);
  const blocks = await Promise.all(found.map((d) => policy.check(d, rule)));
  return blocks.find((b) => b !== undefined)?.reason ?? 'passed';
}

test('a word and a colon in a destination field is not a URL: an https-only allow passes it', async () => {
  for (const value of ['note:hello', 'TODO: fix the link', 'urn:isbn:0451450523', 'see:below', 'Summary: nothing to fetch']) {
    for (const field of ['url', 'target', 'callbackUrl']) {
      assert.equal(await verdict('web/open', field, value), 'passed', `${field}: ${value}`);
    }
  }
});

test('schemes a client acts on without a host are still refused by an https-only allow', async () => {
  for (const value of ["javascript:fetch('//169.254.169.254/')", 'vbscript:msgbox(1)', 'data:text/html,<script>1</script>', 'blob:https://api.example.com/0b5c', 'mailto:ops@api.example.com', 'file:///etc/passwd', 'view-source:https://api.example.com/']) {
    assert.match(await verdict('web/open', 'url', value), /rule "https-only" does not allow it/, value);
  }
});

test('URLs with an authority are judged as before, whatever their scheme', async () => {
  assert.equal(await verdict('web/open', 'url', 'https://api.example.com/x'), 'passed');
  for (const value of ['http://api.example.com/x', 'note://api.example.com/x', 'gopher://api.example.com/', 'https://evil.test/']) {
    assert.match(await verdict('web/open', 'url', value), /rule "https-only" does not allow it/, value);
  }
});

test('a deny naming a scheme refuses a value of that scheme, known or not', async () => {
  assert.match(await verdict('strict/open', 'url', 'note:hello'), /rule "no-notes" denies it/);
  assert.equal(await verdict('strict/open', 'url', 'memo:hello'), 'passed');
});
