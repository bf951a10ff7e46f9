// A CONNECT tunnel carries bytes the egress proxy cannot read, so it has no scheme of its own to judge. Until
// 5 December an allow listing schemes was skipped for it: `allow: { schemes: [https] }` (with hosts or cidrs
// and no ports) let a stdio child open a tunnel to any port of an allowed host (22, 6379, 25) and speak
// anything through it, while the same rule refused http:// and ssh:// URLs in arguments. A tunnel is now
// judged by its port: it passes an allow listing schemes only to the default port of one of them (443 for
// https) or to a port the allow lists itself (https on 8443). README "egress proxy"; docs/configuration.md
// egressProxy. Real proxy, real target on 127.0.0.1.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EgressRule } from '../../../src/config/schema.generated.js';
import { EgressPolicy } from '../../../src/policy/egress/egress-policy.js';
import { connectAnswer, proxyAndTarget } from '../../helpers/egress-proxy.js';

const resolver = async (host: string): Promise<string[]> => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};
let policy = new EgressPolicy([], resolver);
const verdicts: string[] = [];
const setup = proxyAndTarget('127.0.0.1', () => policy, { hooks: { counted: (_u, v) => verdicts.push(v) } });

/** The status line a CONNECT gets and the proxy's verdict on it (allowed: judged so, whether or not the port answers). */
async function tunnel(rule: EgressRule, port: number): Promise<{ status: string; verdict: string | undefined }> {
  policy = new EgressPolicy([rule], resolver);
  verdicts.length = 0;
  // Every answer ends the connection: a refusal with `connection: close`, a tunnel when the target ends it.
  const answer = await connectAnswer(setup.proxyPort, `127.0.0.1:${port}`);
  // The status line and the body (the refusal's reason, or what the target sent through the tunnel).
  const split = answer.indexOf('\r\n\r\n');
  const status = `${answer.slice(0, answer.indexOf('\r\n'))} | ${split === -1 ? '' : answer.slice(split + 4).trim()}`;
  return { status, verdict: verdicts[0] };
}

const LOOPBACK = ['127.0.0.1/32'];

test('an allow of https alone refuses a tunnel to another port of an allowed address', async () => {
  const got = await tunnel({ id: 'https-only', allow: { cidrs: LOOPBACK, schemes: ['https'] } }, setup.targetPort);
  assert.match(got.status, /^HTTP\/1\.1 403 .*rule "https-only" does not allow it/);
  assert.equal(got.verdict, 'blocked');
});

test('an allow of https passes a tunnel to 443, the port of https (judged allowed; nothing need listen there)', async () => {
  const got = await tunnel({ id: 'https-only', allow: { cidrs: LOOPBACK, schemes: ['https'] } }, 443);
  assert.equal(got.verdict, 'allowed');
  assert.doesNotMatch(got.status, / 403 /);
});

test('an allow of http alone refuses a tunnel to 443 and passes one to 80', async () => {
  const refused = await tunnel({ id: 'http-only', allow: { cidrs: LOOPBACK, schemes: ['http'] } }, 443);
  assert.match(refused.status, /^HTTP\/1\.1 403 /);
  assert.equal(refused.verdict, 'blocked');
  const passed = await tunnel({ id: 'http-only', allow: { cidrs: LOOPBACK, schemes: ['http'] } }, 80);
  assert.equal(passed.verdict, 'allowed');
});

test('a port the allow lists itself is tunnelled under its schemes (https on another port)', async () => {
  const got = await tunnel({ id: 'https-8443', allow: { cidrs: LOOPBACK, schemes: ['https'], ports: [setup.targetPort] } }, setup.targetPort);
  assert.equal(got.status, 'HTTP/1.1 200 Connection Established | hello');
  assert.equal(got.verdict, 'allowed');
});

test('an allow listing no schemes tunnels any port it allows, as before', async () => {
  const got = await tunnel({ id: 'loopback', allow: { cidrs: LOOPBACK } }, setup.targetPort);
  assert.equal(got.status, 'HTTP/1.1 200 Connection Established | hello');
  assert.equal(got.verdict, 'allowed');
});
