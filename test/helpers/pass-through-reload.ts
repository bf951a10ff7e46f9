// What the tests of a reload across a single upstream's pass-through share: the two reloads they make (one
// whose rule on resources retires the pass-through, one whose egress rules keep it but now block PARTNER's
// host), what the gateway logs of them, and how a client's listen ended. A bounded wait for an outcome is
// stdio-children.ts's waitUntil.

import assert from 'node:assert/strict';
import { validateConfigObject } from '../../src/config/load.js';
import type { TestGateway } from './gateway.js';

/** A fetched scheme's URI, resolving to a public address (EGRESS_DNS): allowed by the default egress rules. */
export const PARTNER = 'https://docs.partner.example/a';
/** The URI the retiring reload's rules hide. */
export const SECRET = 'test://secret';
/** What a reload logs, with `ended`, when it ends the listening streams of the pass-through it retires. */
export const ENDED_LOG = 'a reload ended the listening streams opened on the pass-through it no longer serves';

const base = { auth: { anonymous: true }, idempotency: { requireKeys: false }, listen: { host: '127.0.0.1', port: 0 } };

/** The same upstreams under a rule that hides SECRET: a rule on resources takes the upstream behind the catalog. */
export function retiringConfig(upstreams: unknown[]) {
  return validateConfigObject({ ...base, upstreams, policy: { rules: [{ id: 'no-secret', access: 'deny', resources: [SECRET] }, { id: 'rest', access: 'allow', resources: ['*'] }] } }, 'test');
}

/** The same upstreams under egress rules that block PARTNER's host: they keep the pass-through. */
export function partnerBlockingConfig(upstreams: unknown[]) {
  return validateConfigObject({ ...base, upstreams, policy: { egress: [{ id: 'no-partner', tools: ['*'], deny: { hosts: ['docs.partner.example'] } }] } }, 'test');
}

/** Reloads `gw` to retiringConfig, which must be taken without refusals. */
export async function retirePassThrough(gw: TestGateway, upstreams: unknown[]): Promise<void> {
  assert.deepEqual(await gw.gateway.reload(retiringConfig(upstreams)), []);
}

/** Reloads `gw` to partnerBlockingConfig, which must be taken without refusals. */
export async function blockPartner(gw: TestGateway, upstreams: unknown[]): Promise<void> {
  assert.deepEqual(await gw.gateway.reload(partnerBlockingConfig(upstreams)), []);
}

/** The upstreams the last reload kept (built alike, so passed through as they were), as it logged them. */
export function keptUpstreams(gw: TestGateway): unknown {
  return gw.logs.filter((l) => l.msg === 'config reloaded').at(-1)?.keptUpstreams;
}

/** How many listening streams the retiring reload logged it ended (undefined: it logged none). */
export function endedCount(gw: TestGateway): unknown {
  return gw.logs.find((l) => l.msg === ENDED_LOG)?.ended;
}

/** How `listen` ended, or 'open' if it had not within 10 s. */
export function endOf(listen: { closed: Promise<string> }): Promise<string> {
  return Promise.race([listen.closed, new Promise<string>((r) => setTimeout(() => r('open'), 10_000).unref())]);
}
