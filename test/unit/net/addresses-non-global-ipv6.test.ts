// IPv6 ranges the IANA special-purpose registry marks not globally reachable (RFC 6890 §2.2.3, as updated):
// the local-use IPv4/IPv6 translation prefix 64:ff9b:1::/48 (RFC 8215), which a site's own NAT64 turns into
// IPv4 addresses of its choosing, the metadata address and loopback among them; the documentation prefix
// 3fff::/20 (RFC 9637); and the SRv6 SID block 5f00::/16 (RFC 9602). Until 5 December they were classed as
// public, so under the default egress policy http://[64:ff9b:1::a9fe:a9fe]/ (169.254.169.254 through such a
// NAT64) passed, while http://[64:ff9b::a9fe:a9fe]/ (the well-known prefix) was blocked. They are now
// special, allowed only by an egress rule naming them by address (README "egress").

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classify } from '../../../src/net/addresses.js';
import { destinationsOfString } from '../../../src/policy/egress/destinations.js';
import { EgressPolicy } from '../../../src/policy/egress/egress-policy.js';

test('non-global IPv6 ranges are not public', () => {
  for (const address of ['64:ff9b:1::a9fe:a9fe', '64:ff9b:1:ffff::7f00:1', '3fff::1', '3fff:fff:ffff::1', '5f00::1']) {
    assert.notEqual(classify(address), 'public', address);
  }
  // Their neighbours stay public.
  for (const address of ['64:ff9b:2::1', '3ffe:ffff::1', '2a00:1450:4001::1', '5f01::1']) assert.equal(classify(address), 'public', address);
});

test('the default egress policy refuses a URL naming one, and an allow by cidrs passes it', async () => {
  const resolver = async (): Promise<string[]> => [];
  const blocked = async (policy: EgressPolicy, url: string) => {
    const rule = policy.ruleFor({ subject: 'alice', scopes: [], groups: [], via: 'anonymous' }, undefined);
    return (await Promise.all(destinationsOfString(url, false).map((d) => policy.check(d, rule)))).find((b) => b !== undefined)?.reason ?? 'passed';
  };
  assert.match(await blocked(new EgressPolicy([], resolver), 'http://[64:ff9b:1::a9fe:a9fe]/latest/meta-data/'), /only an egress rule naming it by address allows it/);
  assert.equal(await blocked(new EgressPolicy([{ id: 'nat64', allow: { cidrs: ['64:ff9b:1::/48'] } }], resolver), 'http://[64:ff9b:1::a00:1]/'), 'passed');
});
