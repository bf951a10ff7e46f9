// The Gatehouse configurations the bench measures (issue 17 item 4), shared by run.ts and profile.ts.
//
//   passthrough  no auth (loopback), no policy, audit off: the least a Gatehouse hop does
//   audited      the default config: every tools/call audited to a SQLite file before it is answered
//   governed     the governed call: API key auth, an access rule, a rate limit, a budget, the SQLite audit
//   policy       governed plus the rest of the policy chain: an egress rule, a per-address limit, a breaker,
//                and an access rule that selects the caller's key (so every call goes through the catalog)
//
// Any setup can also trace (`tracing`): spans exported over OTLP/HTTP to the sink the bench starts
// (bench/otlp-sink.ts), at the given sample ratio.

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hashKey } from '../src/auth/key-hash.js';

export const SETUPS = ['passthrough', 'audited', 'governed', 'policy'] as const;
export type Setup = (typeof SETUPS)[number];

/** The API key the governed setups accept; the load generator sends it as a bearer token. */
export const BENCH_API_KEY = 'gh_bench_0123456789abcdefghijklmnopqrstuvwx';

/**
 * Limits high enough never to refuse: the bench measures what checking them costs. The access rule applies
 * to every caller (a deny of tools the upstream does not have, then allow), so every caller sees the same
 * list and the byte pass-through stays; a rule that selects callers (`keys`, `subjects`, …) makes lists
 * differ per caller and sends every call through the catalog, which `policy` measures.
 */
const GOVERNED_POLICY = {
  rules: [
    { id: 'bench-no-admin', access: 'deny', tools: ['bench/admin_*'] },
    { id: 'bench-allow', access: 'allow', tools: ['*'] },
  ],
  rateLimits: [{ id: 'bench-key', per: 'key', tools: ['*'], rate: 1_000_000, perSeconds: 1, burst: 1_000_000 }],
  budgets: [{ id: 'bench-budget', per: 'subject', tools: ['*'], window: 'day', limit: 1_000_000_000 }],
};

const FULL_POLICY = {
  ...GOVERNED_POLICY,
  rules: [{ id: 'bench-access', access: 'allow', keys: ['bench'], tools: ['*'] }],
  egress: [{ id: 'bench-egress', tools: ['*'], allow: { schemes: ['https'], hosts: ['*.example.com'] } }],
  rateLimits: [{ id: 'bench-ip', per: 'ip', rate: 1_000_000, perSeconds: 1, burst: 1_000_000 }, ...GOVERNED_POLICY.rateLimits],
  breakers: [{ id: 'bench-breaker', per: 'upstream', tools: ['*'], consecutiveFailures: 1_000 }],
};

/** Tracing for a setup: the OTLP/HTTP traces URL and the share of calls sampled. */
export interface BenchTracing {
  endpoint: string;
  sampleRatio: number;
}

let files = 0;

/** The config of one setup, in front of `upstreamUrl`, its state under `stateDir`. */
export function benchConfig(setup: Setup, upstreamUrl: string, stateDir: string, store: { redisUrl: string } | undefined = undefined, tracing?: BenchTracing): Record<string, unknown> {
  const n = ++files;
  const governed = setup === 'governed' || setup === 'policy';
  return {
    listen: { host: '127.0.0.1', port: 0 },
    auth: governed ? { anonymous: false, apiKeys: [{ id: 'bench', hash: hashKey(BENCH_API_KEY) }] } : { anonymous: true },
    upstreams: [{ name: 'bench', url: upstreamUrl }],
    store: store !== undefined ? { kind: 'redis', url: store.redisUrl, keyPrefix: `bench${n}:` } : { kind: 'sqlite', path: path.join(stateDir, `gatehouse-${setup}-${n}.db`) },
    audit: { enabled: setup !== 'passthrough' },
    idempotency: { requireKeys: false },
    ...(setup === 'governed' ? { policy: GOVERNED_POLICY } : setup === 'policy' ? { policy: FULL_POLICY } : {}),
    ...(tracing !== undefined ? { tracing: { enabled: true, endpoint: tracing.endpoint, sampleRatio: tracing.sampleRatio } } : {}),
  };
}

/** `node` arguments that start `dist/main.js` of `root` with one setup (the config written under `stateDir`). */
export function gatehouseArgs(root: string, setup: Setup, upstreamUrl: string, stateDir: string, logLevel: string, store?: { redisUrl: string }, tracing?: BenchTracing): string[] {
  mkdirSync(stateDir, { recursive: true });
  const config = benchConfig(setup, upstreamUrl, stateDir, store, tracing);
  const file = path.join(stateDir, `gatehouse-${setup}-${files}.yaml`);
  // JSON is YAML.
  writeFileSync(file, JSON.stringify(config));
  return [path.join(root, 'dist', 'main.js'), 'serve', '--config', file, '--log-level', logLevel];
}

/** The Authorization header a setup's load needs. */
export function authorizationFor(setup: Setup): string | undefined {
  return setup === 'governed' || setup === 'policy' ? `Bearer ${BENCH_API_KEY}` : undefined;
}
