// What the per-call metrics cost on their own, in a loop: the four updates every answered call makes with
// metrics on (requests counter, request duration, tool calls counter, upstream duration), through
// prom-client's own Counter and Histogram against Gatehouse's tallies (src/metrics/tallies.ts). Metrics are
// off by default, so run.ts's targets never pay for them; this is what a gateway with them on pays.
//
//   node --import tsx bench/metrics-loop.ts [--calls 2000000]      writes results/<timestamp>-metrics-loop.json

import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as PromClient from 'prom-client';
import { CounterTally, TalliedHistogram } from '../src/metrics/tallies.js';
import { parseFlags } from './common.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const { Counter, Histogram, Registry } = createRequire(import.meta.url)('prom-client') as typeof PromClient;
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

function viaPromClient(): (i: number) => void {
  const registers = [new Registry()];
  const requests = new Counter({ name: 'r_total', help: 'r', labelNames: ['method', 'era', 'upstream', 'outcome'], registers });
  const toolCalls = new Counter({ name: 't_total', help: 't', labelNames: ['tool', 'outcome', 'error_code'], registers });
  const duration = new Histogram({ name: 'd_seconds', help: 'd', labelNames: ['method'], buckets: BUCKETS, registers });
  const upstream = new Histogram({ name: 'u_seconds', help: 'u', labelNames: ['upstream'], buckets: BUCKETS, registers });
  return (i) => {
    requests.inc({ method: 'tools/call', era: 'legacy', upstream: 'bench', outcome: 'ok' });
    duration.observe({ method: 'tools/call' }, 0.0012 + (i & 7) * 1e-5);
    toolCalls.inc({ tool: 'echo', outcome: 'ok', error_code: '' });
    upstream.observe({ upstream: 'bench' }, 0.0008 + (i & 3) * 1e-5);
  };
}

function viaTallies(): (i: number) => void {
  const registers = [new Registry()];
  const requests = new CounterTally(['method', 'era', 'upstream', 'outcome']);
  const toolCalls = new CounterTally(['tool', 'outcome', 'error_code']);
  const duration = new TalliedHistogram('d_seconds', 'd', ['method'], BUCKETS, registers);
  const upstream = new TalliedHistogram('u_seconds', 'u', ['upstream'], BUCKETS, registers);
  return (i) => {
    requests.inc('tools/call', 'legacy', 'bench', 'ok');
    duration.observe(0.0012 + (i & 7) * 1e-5, 'tools/call');
    toolCalls.inc('echo', 'ok', '');
    upstream.observe(0.0008 + (i & 3) * 1e-5, 'bench');
  };
}

/** Nanoseconds per call, the median of five timed passes after a warm-up pass. */
function time(call: (i: number) => void, calls: number): number {
  for (let i = 0; i < calls / 4; i++) call(i);
  const passes: number[] = [];
  for (let pass = 0; pass < 5; pass++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) call(i);
    passes.push(Number(process.hrtime.bigint() - start) / calls);
  }
  return passes.sort((a, b) => a - b)[2]!;
}

const flags = parseFlags(process.argv.slice(2), ['calls']);
const calls = Number(flags.calls ?? 2_000_000);
const promClientNs = time(viaPromClient(), calls);
const talliesNs = time(viaTallies(), calls);
process.stdout.write(`the four per-call metric updates: prom-client ${promClientNs.toFixed(0)} ns, tallies ${talliesNs.toFixed(0)} ns per call (${calls} calls per pass, median of 5 passes)\n`);
const file = path.join(BENCH_DIR, 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}-metrics-loop.json`);
writeFileSync(file, `${JSON.stringify({ when: new Date().toISOString(), node: process.version, calls, promClientNsPerCall: promClientNs, talliesNsPerCall: talliesNs }, null, 2)}\n`);
process.stdout.write(`wrote ${path.relative(process.cwd(), file)}\n`);
