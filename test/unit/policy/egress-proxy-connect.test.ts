// The egress proxy judges a CONNECT's host as the argument check and its own plain-HTTP forwarding do:
// through the WHATWG parser, so `2130706433`, `127.1` and `0x7f000001` are 127.0.0.1, and a deny naming
// that address by IP applies to them and to a name resolving to it. Until 3 December a CONNECT's target
// was judged as written: the deny matched `127.0.0.1` only, and the other spellings were tunnelled.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { EgressPolicy } from '../../../src/policy/egress/egress-policy.js';
import { connectAnswer, proxyAndTarget } from '../../helpers/egress-proxy.js';

const resolver = async (host: string) => {
  if (host === 'localhost') return ['127.0.0.1'];
  // glibc's getaddrinfo reads numeric forms itself; the stand-in does too, for the spellings judged as given.
  if (host === '2130706433' || host === '127.1' || host === '0x7f000001') return ['127.0.0.1'];
  // And an IPv6 literal with a zone id, which the WHATWG parser refuses, it answers as given (zone kept).
  if (isIP(host) === 6) return [host];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};
const policy = new EgressPolicy([{ id: 'loop-but-not-one', allow: { cidrs: ['127.0.0.0/8'] }, deny: { hosts: ['127.0.0.1'] } }], resolver);
const setup = proxyAndTarget('127.0.0.2', () => policy, { logLevel: 'warn' });

/** The status line a CONNECT gets. */
async function connectStatus(authority: string): Promise<string> {
  const got = await connectAnswer(setup.proxyPort, authority, (text) => (text.includes('\r\n') ? text.slice(0, text.indexOf('\r\n')) : undefined));
  return got === '' ? 'closed without an answer' : got;
}

test('a CONNECT to the denied address is refused however its host is spelled', async () => {
  for (const host of ['127.0.0.1', '2130706433', '127.1', '0x7f000001', 'localhost']) {
    assert.match(await connectStatus(`${host}:${setup.targetPort}`), /^HTTP\/1\.1 403 /, host);
  }
});

test('a CONNECT to the denied address written as IPv6 carrying it, or with a zone id, is refused', async () => {
  // Until 4 December these were tunnelled: the deny named 127.0.0.1, and [::ffff:127.0.0.1] (which a
  // dual-stack socket reaches at 127.0.0.1) and a zone id (which the WHATWG parser refuses, so the host was
  // judged as given, an address no IP in a rule equals) were other strings.
  for (const host of ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::ffff:127.0.0.1%25lo]', '[::ffff:127.0.0.1%lo]']) {
    assert.match(await connectStatus(`${host}:${setup.targetPort}`), /^HTTP\/1\.1 403 /, host);
  }
});

test('a CONNECT to a port outside 1-65535 is answered 400, not dropped', async () => {
  // Until 4 December such a port passed the policy (counted as allowed), then made connect() throw: the
  // client's connection was closed with no status, and each such request logged an error.
  for (const port of ['99999', '65536', '0']) {
    assert.match(await connectStatus(`127.0.0.2:${port}`), /^HTTP\/1\.1 400 /, port);
  }
});

test('the rest of the allowed range is tunnelled', async () => {
  assert.match(await connectStatus(`127.0.0.2:${setup.targetPort}`), /^HTTP\/1\.1 200 /);
});
