// A javascript: URL whose script starts with a digit (`javascript:0;fetch('//169.254.169.254/')`,
// `javascript:1/alert(1)`) or a colon is run by a browser tool like any other. The egress check read a
// digit after the colon as a port (`localhost:6379` is a host and a port), so such a value was neither: its
// "port" is not digits, the host reading failed, and the hostless reading was skipped. Until 5 December
// it named no destination, and an https-only allow passed it (the hostless rule is 66a463c's). A scheme a
// client acts on without a host (javascript:, data:, …) is now read as such whatever follows its colon;
// `localhost:6379` and `api.example.com:443` stay hosts with ports. docs/configuration.md egress[].allow.schemes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { destinationsIn } from '../../../src/policy/egress/destinations.js';
import { EgressPolicy } from '../../../src/policy/egress/egress-policy.js';
import type { Principal } from '../../../src/pipeline/principal.js';

const resolver = async (host: string) => {
  if (host.endsWith('example.com')) return ['93.184.216.34'];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};
const ALICE: Principal = { subject: 'alice', scopes: [], groups: [], via: 'api_key', keyId: 'alice' };
const policy = new EgressPolicy([{ id: 'https-only', allow: { hosts: ['*.example.com'], schemes: ['https'], ports: [443] } }], resolver);

async function verdict(args: unknown): Promise<string> {
  const rule = policy.ruleFor(ALICE, undefined);
  const blocks = await Promise.all(destinationsIn(args, undefined).found.map((d) => policy.check(d, rule)));
  return blocks.find((b) => b !== undefined)?.reason ?? 'passed';
}

test('a javascript: or data: URL whose text starts with a digit or a colon is judged by its scheme', async () => {
  for (const url of ["javascript:0;fetch('//169.254.169.254/latest/meta-data/')", 'javascript:1/alert(1)', 'JAVASCRIPT:2+alert(1)', 'javascript::alert(1)', 'data:1,hi']) {
    assert.match(await verdict({ url }), /rule "https-only" does not allow it/, url);
  }
});

test('a host and a port stay a host and a port', async () => {
  assert.equal(await verdict({ host: 'api.example.com:443' }), 'passed');
  assert.match(await verdict({ host: 'api.example.com:22' }), /does not allow it$/);
});
