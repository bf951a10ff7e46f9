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

test('a hop written with a port is read as its address: a.b.c.d:port and [IPv6]:port', () => {
  const of = compileClientAddress(['10.0.0.0/8', 'fd00::/8']);
  assert.equal(of('10.1.2.3', '203.0.113.5:4711'), '203.0.113.5');
  assert.equal(of('10.1.2.3', '[2001:db8::1]:443'), '2001:db8:0:0::/64');
  assert.equal(of('10.1.2.3', '[2001:db8::1]'), '2001:db8:0:0::/64', 'brackets without a port');
  assert.equal(of('10.1.2.3', ' 203.0.113.5:4711 , 10.9.9.9:80'), '203.0.113.5', 'a trusted proxy written with a port is still passed over');
  assert.equal(of('10.1.2.3', '203.0.113.5:4711, [fd00::7]:8080'), '203.0.113.5');
  assert.equal(of('10.1.2.3', '[::ffff:203.0.113.5]:1'), '203.0.113.5');
  assert.equal(of('10.1.2.3', '198.51.100.1, 203.0.113.5:4711'), '203.0.113.5', 'the walk still stops at the first untrusted hop');
});

test('a hop that is not an address, with or without a port, stops the walk: nothing past it is believed', () => {
  const of = compileClientAddress(['10.0.0.0/8']);
  for (const bad of ['203.0.113.5:', '203.0.113.5:99999', '203.0.113.5:http', '2001:db8::1:443x', '[2001:db8::1]443', '[203.0.113.5]:80', '[2001:db8::1]:443:1', 'host.example:80', '[]:80', 'unknown', '']) {
    assert.equal(of('10.1.2.3', `198.51.100.1, ${bad}`), '10.1.2.3', `"${bad}"`);
    assert.equal(of('10.1.2.3', `198.51.100.1, ${bad}, 10.9.9.9`), '10.9.9.9', `"${bad}" behind a trusted hop`);
  }
});

test('config entries that are not addresses or CIDR ranges are reported', () => {
  assert.deepEqual(trustedProxyProblems(['10.0.0.0/8', '::1', 'fd00::/8']), []);
  assert.deepEqual(trustedProxyProblems(['10.0.0.0/33', 'proxy.local', '1.2.3.4/8/1']), [
    'listen.trustedProxies[0]: "10.0.0.0/33" is not an IP address or CIDR range',
    'listen.trustedProxies[1]: "proxy.local" is not an IP address or CIDR range',
    'listen.trustedProxies[2]: "1.2.3.4/8/1" is not an IP address or CIDR range',
  ]);
});
