// The per-call metrics counted outside prom-client (metrics/tallies.ts) must read exactly as prom-client's
// own Counter and Histogram would: the same exposition text, the same JSON, scrape after scrape.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import type * as PromClient from 'prom-client';
import { CounterTally, TalliedHistogram } from '../../../src/metrics/tallies.js';

const { Counter, Histogram, Registry } = createRequire(import.meta.url)('prom-client') as typeof PromClient;
const BOUNDS = [0.0001, 0.00025, 0.001, 0.5, 1, 30];

test('a tallied histogram is written as prom-client writes the same observations', async () => {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({ name: 'h_seconds', help: 'help text', labelNames: ['method', 'era'], buckets: BOUNDS, registers: [theirs] });
  const tallied = new TalliedHistogram('h_seconds', 'help text', ['method', 'era'], BOUNDS, [ours]);
  // On a bound (counted in it), between bounds, past the last one (only +Inf), zero; two label sets.
  const observations: Array<[number, string, string]> = [
    [0.0001, 'tools/call', 'legacy'], [0.0002, 'tools/call', 'legacy'], [0.7, 'tools/call', 'legacy'], [31, 'tools/call', 'legacy'],
    [0, 'tools/list', 'modern'], [1, 'tools/list', 'modern'], [0.00025, 'tools/call', 'legacy'],
  ];
  for (const [value, method, era] of observations) {
    reference.observe({ method, era }, value);
    tallied.observe(value, method, era);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.deepEqual(await ours.getMetricsAsJSON(), await theirs.getMetricsAsJSON());
  // And again after more calls: nothing is counted twice or lost between scrapes.
  reference.observe({ method: 'tools/call', era: 'legacy' }, 0.003);
  tallied.observe(0.003, 'tools/call', 'legacy');
  assert.equal(await ours.metrics(), await theirs.metrics());
  theirs.resetMetrics();
  ours.resetMetrics();
  assert.equal(await ours.metrics(), await theirs.metrics());
});

test('a counter tally reaches its prom-client counter at each scrape, once', async () => {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Counter({ name: 'c_total', help: 'help text', labelNames: ['method', 'era', 'upstream', 'outcome'], registers: [theirs] });
  const tally = new CounterTally(['method', 'era', 'upstream', 'outcome']);
  new Counter({ name: 'c_total', help: 'help text', labelNames: ['method', 'era', 'upstream', 'outcome'], registers: [ours], collect() { tally.flushInto(this); } });
  const calls: Array<[string, string, string, string]> = [
    ['tools/call', 'legacy', 'a', 'ok'], ['tools/call', 'legacy', 'a', 'ok'], ['tools/call', 'legacy', 'a', 'refused'],
    ['tools/list', 'modern', 'b', 'ok'], ['tools/call', 'legacy', 'b', 'ok'],
  ];
  for (const [method, era, upstream, outcome] of calls) {
    reference.inc({ method, era, upstream, outcome });
    tally.inc(method, era, upstream, outcome);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.equal(await ours.metrics(), await theirs.metrics(), 'a second scrape adds nothing');
  reference.inc({ method: 'tools/call', era: 'legacy', upstream: 'a', outcome: 'ok' });
  tally.inc('tools/call', 'legacy', 'a', 'ok');
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.match(await ours.metrics(), /c_total\{method="tools\/call",era="legacy",upstream="a",outcome="ok"\} 3/);
});

test('label sets that share a prefix stay apart', async () => {
  const registry = new Registry();
  const tally = new CounterTally(['tool', 'outcome', 'error_code']);
  new Counter({ name: 't_total', help: 'h', labelNames: ['tool', 'outcome', 'error_code'], registers: [registry], collect() { tally.flushInto(this); } });
  tally.inc('echo', 'ok', '');
  tally.inc('echo', 'refused', 'rate_limited');
  tally.inc('echo', 'refused', 'budget_exceeded');
  tally.inc('echo', 'refused', 'rate_limited');
  const text = await registry.metrics();
  assert.match(text, /t_total\{tool="echo",outcome="ok",error_code=""\} 1/);
  assert.match(text, /t_total\{tool="echo",outcome="refused",error_code="rate_limited"\} 2/);
  assert.match(text, /t_total\{tool="echo",outcome="refused",error_code="budget_exceeded"\} 1/);
});
