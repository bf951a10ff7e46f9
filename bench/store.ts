// `npm run bench` (after the HTTP bench): what one audit append costs in each store, measured on its own.
// Appends realistic audit entries through the real store classes, at several concurrencies (calls in
// flight at once, as under load), and reports appends per second, latency percentiles, and CPU per append:
// this process's (all threads: for SQLite that includes the writer thread, its commits and fsyncs) and,
// for Redis, redis-server's as well. SQLite writes a real file on disk (synchronous=FULL: one fsync per group
// commit); Redis appends to its AOF, fsynced every second (Redis' default once AOF is on).
//
// Environment: BENCH_STORE_SECONDS=3, BENCH_STORE_MAX=100000 (appends per cell), BENCH_STORE_CONCURRENCY=1,16,64,
// BENCH_STORES=sqlite,redis. Writes bench/results/<time>-store.json and latest-store.json.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/store/open-store.js';
import type { AuditEntry, Store } from '../src/store/store.js';
import { clockTicksPerSecond, cpuModel, readCpuTicks } from './procs.js';
import { startBenchRedis, type BenchRedis } from './redis.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const RESULTS_DIR = path.join(BENCH_DIR, 'results');
const seconds = Number(process.env.BENCH_STORE_SECONDS ?? 3);
const maxAppends = Number(process.env.BENCH_STORE_MAX ?? 100_000);
const concurrencies = (process.env.BENCH_STORE_CONCURRENCY ?? '1,16,64').split(',').map(Number);
const stores = (process.env.BENCH_STORES ?? 'sqlite,redis').split(',') as Array<'sqlite' | 'redis'>;
for (const c of concurrencies) if (!Number.isInteger(c) || c < 1 || c > 1024) throw new Error(`BENCH_STORE_CONCURRENCY: bad value ${c}`);
if (!(seconds > 0 && seconds <= 600) || !(maxAppends >= 1)) throw new Error('BENCH_STORE_SECONDS must be in (0, 600], BENCH_STORE_MAX ≥ 1');

/** An entry the size of a typical record: a tool call with a few arguments. */
function entry(i: number): AuditEntry {
  return {
    time: new Date().toISOString(),
    callId: `0b6f7d1e-2c4a-4f7e-9a51-${String(i).padStart(12, '0')}`,
    runId: `5d0c2b8e-7f3a-4c19-8e62-${String(i).padStart(12, '0')}`,
    subject: 'key:ci-bot',
    tenant: 'acme',
    keyId: 'ci-bot',
    toolRef: 'crm/create_contact',
    tool: 'create_contact',
    upstream: 'crm',
    method: 'tools/call',
    argumentsSha256: 'c0535e4be2b79ffd93291305436bf889314e4a3faec05ecffcbb7df31ad9e51a',
    arguments: { name: 'Ada Lovelace', email: 'ada@example.com', company: 'Analytical Engines Ltd', tags: ['vip', 'emea'] },
    outcome: 'ok',
    latencyMs: 4.2,
  };
}

interface CellResult {
  store: string;
  concurrency: number;
  appends: number;
  appendsPerS: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerAppend: number;
  redisServerCpuUsPerAppend?: number;
}

async function measure(store: Store, concurrency: number, redisPid: number | undefined): Promise<CellResult> {
  // Warm-up: JIT, the writer thread, the connection.
  await Promise.all(Array.from({ length: Math.min(concurrency, 16) }, (_, i) => store.appendAudit(entry(i))));
  const latencies: number[] = [];
  const tick = clockTicksPerSecond();
  const cpu0 = process.cpuUsage();
  const r0 = redisPid !== undefined ? readCpuTicks(redisPid) : 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let issued = 0;
  const worker = async (): Promise<void> => {
    while (issued < maxAppends && performance.now() < deadline) {
      const i = issued++;
      const t = performance.now();
      await store.appendAudit(entry(i));
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsedS = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const r1 = redisPid !== undefined ? readCpuTicks(redisPid) : 0;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!;
  const n = latencies.length;
  return {
    store: store.kind,
    concurrency,
    appends: n,
    appendsPerS: n / elapsedS,
    p50Ms: pct(0.5),
    p99Ms: pct(0.99),
    cpuUsPerAppend: (cpu.user + cpu.system) / n,
    ...(redisPid !== undefined ? { redisServerCpuUsPerAppend: ((r1 - r0) * 1e6) / tick / n } : {}),
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-store-'));
  let redis: BenchRedis | undefined;
  const results: CellResult[] = [];
  process.stdout.write(`\nAudit append, measured on its own — node ${process.version}, ${cpuModel()}, ${os.cpus().length} cores; ≤${seconds}s/≤${maxAppends} appends per cell\n`);
  process.stdout.write(`${'store'.padEnd(8)}${'conc'.padStart(5)}${'appends/s'.padStart(11)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'CPU µs/append'.padStart(15)}${'redis-server µs'.padStart(17)}\n`);
  try {
    for (const kind of stores) {
      for (const concurrency of concurrencies) {
        // A fresh store per cell: the chain starts empty, so cells do not grow each other's data.
        let store: Store;
        if (kind === 'redis') {
          redis ??= await startBenchRedis();
          store = openStore({ kind: 'redis', url: redis.url, keyPrefix: `store-bench-${concurrency}:`, commandTimeoutMs: 5_000 });
        } else {
          store = openStore({ kind: 'sqlite', path: path.join(dir, `audit-${concurrency}.db`) });
        }
        try {
          const r = await measure(store, concurrency, kind === 'redis' ? redis?.pid : undefined);
          results.push(r);
          process.stdout.write(
            `${r.store.padEnd(8)}${String(r.concurrency).padStart(5)}${Math.round(r.appendsPerS).toLocaleString('en-US').padStart(11)}${r.p50Ms.toFixed(3).padStart(9)}${r.p99Ms.toFixed(3).padStart(9)}${r.cpuUsPerAppend.toFixed(1).padStart(15)}${(r.redisServerCpuUsPerAppend?.toFixed(1) ?? '-').padStart(17)}\n`,
          );
        } finally {
          await store.close();
        }
      }
    }
  } finally {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  mkdirSync(RESULTS_DIR, { recursive: true });
  const json = JSON.stringify({ meta: { startedAt: new Date().toISOString(), node: process.version, cpuModel: cpuModel(), cores: os.cpus().length, seconds, maxAppends }, results }, null, 2) + '\n';
  writeFileSync(path.join(RESULTS_DIR, `${new Date().toISOString().replace(/[:.]/g, '-')}-store.json`), json);
  writeFileSync(path.join(RESULTS_DIR, 'latest-store.json'), json);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench store: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
