// Which address a request is counted under: the peer, unless the peer is a trusted proxy; IPv6 by /64.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileClientAddress, limitKey, trustedProxyProblems } from '../../../src/net/client-address.js';

test('IPv4 as it is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64', () => {
  assert.equal(limitKey('203.0.113.7'), '203.0.113.7');
  assert.equal(limitKey('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(limitKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  assert.equal(limitKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
  assert.equal(limitKey('2001:0db8:0001:0002::9'), '2001:db8:1:2::/64');
  assert.equal(limitKey('::1'), '0:0:0:0::/64');
  assert.equal(limitKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
});

test('without trusted proxies X-Forwarded-For is ignored', () => {
  const of = compileClientAddress([]);
  assert.equal(of('10.0.0.5', '203.0.113.7'), '10.0.0.5');
});

test('from a trusted proxy, the nearest hop that is not trusted is the client', () => {
  const of = compileClientAddress(['10.0.0.0/8', '192.0.2.1']);
  assert.equal(of('10.1.2.3', '203.0.113.7'), '203.0.113.7');
  assert.equal(of('10.1.2.3', '198.51.100.1, 203.0.113.7, 192.0.2.1'), '203.0.113.7', 'a client cannot prepend an address of its choice');
  assert.equal(of('10.1.2.3', ['198.51.100.1', '10.9.9.9']), '198.51.100.1');
  assert.equal(of('10.1.2.3', '10.2.2.2'), '10.2.2.2', 'only trusted hops: the farthest one');
  assert.equal(of('10.1.2.3', 'garbage, 203.0.113.7'), '203.0.113.7');
  assert.equal(of('10.1.2.3', '203.0.113.7, garbage'), '10.1.2.3', 'an unreadable hop stops the walk at the last address vouched for');
  assert.equal(of('10.1.2.3', undefined), '10.1.2.3');
  assert.equal(of('198.51.100.1', '203.0.113.7'), '198.51.100.1', 'an untrusted peer is the client');
  assert.equal(of('::ffff:10.1.2.3', '2001:db8::1'), '2001:db8:0:0::/64');
});

test('config entries that are not addresses or CIDR ranges are reported', () => {
  assert.deepEqual(trustedProxyProblems(['10.0.0.0/8', '::1', 'fd00::/8']), []);
  assert.deepEqual(trustedProxyProblems(['10.0.0.0/33', 'proxy.local', '1.2.3.4/8/1']), [
    'listen.trustedProxies[0]: "10.0.0.0/33" is not an IP address or CIDR range',
    'listen.trustedProxies[1]: "proxy.local" is not an IP address or CIDR range',
    'listen.trustedProxies[2]: "1.2.3.4/8/1" is not an IP address or CIDR range',
  ]);
});
