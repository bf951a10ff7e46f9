// What one call allocates, and how many promises it makes: counts that do not drift with the VM the way CPU
// time does (bench/README.md "Allocations and promises per call"). A change that takes 2% off a call is
// invisible in run.ts's CPU figures on this VM (4-9% between two runs of the same code) but shows here
// as bytes and promises fewer.
//
//   node --import tsx bench/alloc.ts [--targets bare-hop,passthrough] [--eras legacy,modern]
//        [--concurrency 16] [--seconds 3] [--top 25] [--root DIR] [--out FILE.json]
//
// For each target and era, two processes in turn, each warmed up (3 s) and then measured while the load
// runs (bench/alloc-hook.mjs): one with V8's sampling heap profiler (every 256 bytes on average, the garbage
// of young and old collections kept in), one counting what async_hooks see created (promises, nextTick
// objects, timers). A target is `bare-hop` or one of bench/setups.ts's setups (log line on). `--root DIR`
// measures another checkout's built dist/ with this build's setups (an earlier commit, to compare).

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFlags, type Era } from './common.js';
import { runLoad, warmUpProcess } from './load.js';
import { announcedUrl, gatehouseUrl, installSignalCleanup, startChild, stopChild, type Child } from './procs.js';
import { authorizationFor, gatehouseArgs, SETUPS, type Setup } from './setups.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');
const HOOK = path.join(BENCH_DIR, 'alloc-hook.mjs');

interface HeapNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: HeapNode[];
}
interface HeapProfile {
  head: HeapNode;
  samples: Array<{ size: number; nodeId: number }>;
}

export interface AllocResult {
  target: string;
  era: Era;
  concurrency: number;
  /** Calls answered while the heap profiler ran, and the bytes sampled per call. */
  heapCalls: number;
  bytesPerCall: number;
  /** The functions that allocated most, per call: where a Gatehouse function is on the stack, the nearest one. */
  topSites: Array<{ site: string; bytesPerCall: number }>;
  /** Calls answered while async_hooks counted, and what was created per call, by async_hooks type. */
  hookCalls: number;
  perCall: Record<string, number>;
  /** Where the promises were made, per call (sampled: one promise in eight traced to its first frame in dist/ or a dependency). */
  promiseSites: Array<{ site: string; perCall: number }>;
}

/** Where an allocation is charged: the nearest Gatehouse function on its stack, else the allocating function. */
function siteOf(node: HeapNode, parent: Map<number, HeapNode>): string {
  for (let at: HeapNode | undefined = node; at !== undefined; at = parent.get(at.id)) {
    const { functionName, url, lineNumber } = at.callFrame;
    const dist = url.indexOf('/dist/');
    if (dist >= 0 && !url.includes('node_modules')) return `${functionName || '(anonymous)'} ${url.slice(dist + 6)}:${lineNumber + 1}`;
  }
  const { functionName, url, lineNumber } = node.callFrame;
  const short = url.replace(/^.*\/(node_modules|bench)\//, '$1/');
  return `${functionName || '(anonymous)'}${short === '' ? '' : ` ${short}:${lineNumber + 1}`}`;
}

function summariseHeap(profile: HeapProfile, calls: number, top: number): { bytesPerCall: number; topSites: AllocResult['topSites'] } {
  const byId = new Map<number, HeapNode>();
  const parent = new Map<number, HeapNode>();
  const visit = (n: HeapNode): void => {
    byId.set(n.id, n);
    for (const c of n.children) {
      parent.set(c.id, n);
      visit(c);
    }
  };
  visit(profile.head);
  let total = 0;
  const bySite = new Map<string, number>();
  for (const s of profile.samples) {
    total += s.size;
    const site = siteOf(byId.get(s.nodeId)!, parent);
    bySite.set(site, (bySite.get(site) ?? 0) + s.size);
  }
  const topSites = [...bySite.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([site, bytes]) => ({ site, bytesPerCall: Math.round(bytes / calls) }));
  return { bytesPerCall: Math.round(total / calls), topSites };
}

async function measureOnce(target: string, era: Era, mode: 'heap' | 'promises', upstreamUrl: string, opts: { concurrency: number; seconds: number; state: string; root: string }): Promise<{ calls: number; data: unknown }> {
  const out = path.join(opts.state, `${target}-${era}-${mode}.json`);
  const env = { ...process.env, GATEHOUSE_ALLOC_OUT: out, GATEHOUSE_ALLOC_MODE: mode };
  const setup = target as Setup;
  let child: Child | undefined;
  try {
    child =
      target === 'bare-hop'
        ? await startChild('bare-hop', { args: ['--import', HOOK, '--import', 'tsx', path.join(BENCH_DIR, 'bare-hop.ts'), '--upstream', upstreamUrl], cwd: ROOT, ready: (line) => announcedUrl(line), env })
        : await startChild(`gatehouse (${target})`, { args: ['--import', HOOK, ...gatehouseArgs(opts.root, setup, upstreamUrl, opts.state, 'info')], cwd: opts.root, ready: gatehouseUrl, env });
    const authorization = target === 'bare-hop' ? undefined : authorizationFor(setup);
    await warmUpProcess(child.url, era, opts.concurrency, { seconds: 3, maxRequests: 5_000_000 }, authorization);
    const measured = child;
    const r = await runLoad({
      url: child.url,
      era,
      concurrency: opts.concurrency,
      ...(authorization !== undefined ? { authorization } : {}),
      warmup: { seconds: 0.5, maxRequests: 20_000 },
      measure: { seconds: opts.seconds, maxRequests: 500_000 },
      maxErrors: 50,
      onMeasureStart: () => void process.kill(measured.pid, 'SIGUSR2'),
      onMeasureEnd: () => void process.kill(measured.pid, 'SIGUSR2'),
    });
    for (let waited = 0; !existsSync(out) && waited < 20_000; waited += 100) await new Promise((done) => setTimeout(done, 100));
    if (!existsSync(out)) throw new Error(`${target}: the alloc hook wrote nothing`);
    return { calls: r.requests, data: JSON.parse(readFileSync(out, 'utf8')) as unknown };
  } finally {
    if (child) await stopChild(child);
  }
}

/** The commit a checkout is at (and `+changes` when its tree differs from it), for the results file. */
function commitOf(root: string): string {
  try {
    const head = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head}+changes` : head;
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), ['targets', 'eras', 'concurrency', 'seconds', 'top', 'root', 'out']);
  const targets = (flags.targets ?? 'bare-hop,passthrough').split(',');
  for (const t of targets) if (t !== 'bare-hop' && !SETUPS.includes(t as Setup)) throw new Error(`unknown target ${t}: bare-hop or one of ${SETUPS.join(', ')}`);
  const eras = (flags.eras ?? 'legacy,modern').split(',') as Era[];
  const concurrency = Number(flags.concurrency ?? 16);
  const seconds = Number(flags.seconds ?? 3);
  const top = Number(flags.top ?? 25);
  const root = path.resolve(flags.root ?? ROOT);
  const state = path.join(os.tmpdir(), `gatehouse-alloc-${process.pid}`);
  mkdirSync(state, { recursive: true });
  installSignalCleanup();
  const upstream = await startChild('minimal-upstream', { args: ['--import', 'tsx', path.join(BENCH_DIR, 'minimal-upstream.ts')], cwd: ROOT, ready: (line) => announcedUrl(line) });
  const results: AllocResult[] = [];
  try {
    for (const era of eras) {
      for (const target of targets) {
        const heap = await measureOnce(target, era, 'heap', upstream.url, { concurrency, seconds, state, root });
        const hooks = await measureOnce(target, era, 'promises', upstream.url, { concurrency, seconds, state, root });
        const counted = hooks.data as { counts: Record<string, number>; promiseSites: Record<string, number> };
        const perCall = Object.fromEntries(
          Object.entries(counted.counts)
            .map(([type, n]) => [type, Math.round((100 * n) / hooks.calls) / 100] as const)
            .filter(([, n]) => n >= 0.01),
        );
        const { bytesPerCall, topSites } = summariseHeap(heap.data as HeapProfile, heap.calls, top);
        const promiseSites = Object.entries(counted.promiseSites)
          .map(([site, n]) => ({ site, perCall: Math.round((100 * n) / hooks.calls) / 100 }))
          .filter((s) => s.perCall >= 0.05)
          .sort((a, b) => b.perCall - a.perCall)
          .slice(0, top);
        const result: AllocResult = { target, era, concurrency, heapCalls: heap.calls, bytesPerCall, topSites, hookCalls: hooks.calls, perCall, promiseSites };
        results.push(result);
        process.stdout.write(
          `${era} ${target} c=${concurrency}: ${bytesPerCall} B per call (${heap.calls} calls sampled); per call ${Object.entries(perCall)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}\n${topSites.map((s) => `  ${String(s.bytesPerCall).padStart(6)} B  ${s.site}`).join('\n')}\n  promises made by:\n${promiseSites.map((s) => `  ${String(s.perCall).padStart(6)}    ${s.site}`).join('\n')}\n`,
        );
      }
    }
  } finally {
    await stopChild(upstream);
    rmSync(state, { recursive: true, force: true });
  }
  const file = flags.out ?? path.join(BENCH_DIR, 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}-alloc.json`);
  writeFileSync(file, `${JSON.stringify({ when: new Date().toISOString(), node: process.version, commit: commitOf(root), results }, null, 2)}\n`);
  process.stdout.write(`wrote ${path.relative(process.cwd(), file)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
