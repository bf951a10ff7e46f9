// The many-upstream case (issue 4): three minimal upstreams with 500 tools between them behind one
// Gatehouse catalog. Measures modern `tools/list` (the merged, renamed, sorted list of 500 tools, with
// members' lists cached for their ttlMs) and `tools/call` (routed by public name, arguments checked),
// at one concurrency, as CPU of the Gatehouse process per request; the same requests sent straight to one
// upstream give the reference. Writes JSON under bench/results/ (name ends in -catalog).
//
// Environment (optional): BENCH_SECONDS=3, BENCH_WARMUP_SECONDS=1, BENCH_CATALOG_CONCURRENCY=16

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { MODERN_VERSION } from './common.js';
import { announcedUrl, clockTicksPerSecond, cpuModel, installSignalCleanup, readCpuTicks, readPeakRssKb, startChild, stopAllChildren, type Child } from './procs.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH_DIR);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
const CONCURRENCY = Number(process.env.BENCH_CATALOG_CONCURRENCY ?? 16);
/** Extra tools per upstream; with each one's `echo`, 500 in all. */
const TOOLS_PER_UPSTREAM = [166, 166, 165];
const MEMBERS = ['alpha', 'beta', 'gamma'];

interface Op {
  name: string;
  method: 'tools/list' | 'tools/call';
  tool?: string;
  /** Checks one answer; returns a problem or null. */
  check(result: Record<string, unknown>): string | null;
}

function body(op: Op, id: number): string {
  const params: Record<string, unknown> = { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} } };
  if (op.tool !== undefined) Object.assign(params, { name: op.tool, arguments: { text: 'hello' } });
  return JSON.stringify({ jsonrpc: '2.0', id, method: op.method, params });
}

function headers(op: Op): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN_VERSION,
    'mcp-method': op.method,
    ...(op.tool !== undefined ? { 'mcp-name': op.tool } : {}),
  };
}

/** Sends `op` back to back from CONCURRENCY workers for `seconds`; returns counts and latencies (ms). */
async function drive(url: string, op: Op, seconds: number): Promise<{ ok: number; errors: number; elapsedS: number; latencies: number[]; firstError?: string }> {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections: CONCURRENCY });
  const hdrs = headers(op);
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  let firstError: string | undefined;
  let id = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline && errors < 50) {
        const t0 = performance.now();
        try {
          const res = await pool.request({ path: u.pathname, method: 'POST', headers: hdrs, body: body(op, ++id) });
          const text = await res.body.text();
          const msg = JSON.parse(text) as { result?: Record<string, unknown>; error?: unknown };
          const problem = res.statusCode !== 200 || !msg.result ? `HTTP ${res.statusCode}: ${text.slice(0, 200)}` : op.check(msg.result);
          if (problem) {
            errors++;
            firstError ??= problem;
          } else {
            ok++;
            latencies.push(performance.now() - t0);
          }
        } catch (err) {
          errors++;
          firstError ??= String(err);
        }
      }
    }),
  );
  const elapsedS = (performance.now() - started) / 1000;
  await pool.close();
  return { ok, errors, elapsedS, latencies, ...(firstError !== undefined ? { firstError } : {}) };
}

function percentile(sorted: number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(label: string, url: string, op: Op, measured: Child): Promise<Record<string, unknown>> {
  await drive(url, op, WARMUP_SECONDS);
  const t0 = readCpuTicks(measured.pid);
  const run = await drive(url, op, SECONDS);
  const t1 = readCpuTicks(measured.pid);
  const sorted = run.latencies.sort((a, b) => a - b);
  const attempts = run.ok + run.errors;
  const row = {
    target: label,
    op: op.name,
    concurrency: CONCURRENCY,
    requests: run.ok,
    errors: run.errors,
    ...(run.firstError !== undefined ? { firstError: run.firstError } : {}),
    reqPerS: run.ok / run.elapsedS,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    cpuUsPerReq: attempts > 0 ? ((t1 - t0) * (1e6 / clockTicksPerSecond())) / attempts : undefined,
    cpuOf: measured.name,
    peakRssMb: (readPeakRssKb(measured.pid) ?? 0) / 1024,
  };
  const f = (n: number | undefined, d = 1): string => (n === undefined ? '-' : n.toFixed(d));
  process.stdout.write(
    `${label.padEnd(22)} ${op.name.padEnd(26)} ${f(row.reqPerS, 0).padStart(7)} req/s  p50 ${f(row.p50Ms, 2).padStart(6)} ms  p99 ${f(row.p99Ms, 2).padStart(6)} ms  CPU ${f(row.cpuUsPerReq).padStart(7)} µs/req (${measured.name})  errors ${run.errors}\n`,
  );
  return row;
}

installSignalCleanup();
try {
  const upstreams: Child[] = [];
  for (const [i, extra] of TOOLS_PER_UPSTREAM.entries()) {
    upstreams.push(
      await startChild(`minimal-upstream ${MEMBERS[i]}`, {
        args: ['--import', 'tsx', path.join(BENCH_DIR, 'minimal-upstream.ts'), '--tools', String(extra)],
        cwd: ROOT,
        ready: (line) => announcedUrl(line),
      }),
    );
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-catalog-'));
  const config = path.join(dir, 'gatehouse.yaml');
  const lines = ['listen: { host: 127.0.0.1, port: 0 }', 'auth: { anonymous: true }', 'upstreams:', ...upstreams.map((u, i) => `  - { name: ${MEMBERS[i]}, url: "${u.url}", era: modern }`)];
  writeFileSync(config, lines.join('\n') + '\n');
  const gatehouse = await startChild('gatehouse', {
    args: [path.join(ROOT, 'dist', 'main.js'), 'serve', '--config', config],
    cwd: ROOT,
    readyTimeoutMs: 20_000,
    ready: (line) => announcedUrl(line, 'gatehouse listening'),
  });

  const listOf = (expected: number): Op['check'] => (result) => {
    const tools = result.tools as unknown[] | undefined;
    const total = (tools?.length ?? 0) + (typeof result.nextCursor === 'string' ? 1000 : 0);
    return tools !== undefined && (tools.length === expected || (expected > 100 && tools.length === 100 && total > 100)) ? null : `expected ${expected} tools, got ${tools?.length}`;
  };
  const echoed: Op['check'] = (result) => (JSON.stringify(result.content ?? '').includes('hello') ? null : `unexpected result ${JSON.stringify(result).slice(0, 200)}`);

  process.stdout.write(`\ncatalog: 3 modern upstreams, 500 tools, concurrency ${CONCURRENCY}, ${SECONDS} s per row\n`);
  const rows = [
    // The catalog's first page (100 of 500, sorted); members' lists come from their ttlMs cache.
    await measure('gatehouse (catalog)', gatehouse.url, { name: 'tools/list (500 tools)', method: 'tools/list', check: listOf(500) }, gatehouse),
    await measure('gatehouse (catalog)', gatehouse.url, { name: 'tools/call beta_tool_42', method: 'tools/call', tool: 'beta_tool_42', check: echoed }, gatehouse),
    await measure('direct (one upstream)', upstreams[1]!.url, { name: 'tools/list (167 tools)', method: 'tools/list', check: listOf(167) }, upstreams[1]!),
    await measure('direct (one upstream)', upstreams[1]!.url, { name: 'tools/call tool_42', method: 'tools/call', tool: 'tool_42', check: echoed }, upstreams[1]!),
  ];
  const resultsDir = path.join(BENCH_DIR, 'results');
  mkdirSync(resultsDir, { recursive: true });
  const file = path.join(resultsDir, `${new Date().toISOString().replace(/[:.]/g, '-')}-catalog.json`);
  writeFileSync(file, JSON.stringify({ cpu: cpuModel(), node: process.version, seconds: SECONDS, concurrency: CONCURRENCY, tools: 500, upstreams: 3, rows }, null, 2) + '\n');
  process.stdout.write(`results: ${path.relative(ROOT, file)}\n`);
} finally {
  await stopAllChildren();
}
