// Memory with many legacy sessions held (issue 17 item 3: at most 150 MB with 1,000 legacy sessions).
// Starts an upstream and one Gatehouse (dist/main.js, the pass-through setup of setups.ts, log at warn),
// opens BENCH_SESSIONS legacy sessions through it (initialize, notifications/initialized, one tools/call
// each), and reads Gatehouse's RSS before and after from /proc. Two upstreams:
//
//   pass-through  the minimal upstream, which speaks legacy itself: Gatehouse forwards and only binds each
//                 session id to its caller
//   bridged       a modern-only upstream (the v2 SDK server): Gatehouse holds each legacy session itself and
//                 speaks 2026-07-28 upstream
//
//   node --import tsx bench/sessions.ts            (npm run build first)
//   BENCH_SESSIONS=1000 BENCH_SESSION_MODES=bridged node --import tsx bench/sessions.ts

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { LEGACY_VERSION, TOOL_NAME } from './common.js';
import { announcedUrl, gatehouseUrl, installSignalCleanup, readPeakRssKb, readRssKb, startChild, stopChild, type Child } from './procs.js';
import { gatehouseArgs } from './setups.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 1000);
const CONCURRENCY = 16;
const MODES = (process.env.BENCH_SESSION_MODES ?? 'pass-through,bridged').split(',').map((s) => s.trim()) as Array<'pass-through' | 'bridged'>;
const ACCEPT = 'application/json, text/event-stream';
const LIMIT_MB = 150;

async function openSession(pool: Pool, p: string, n: number): Promise<string> {
  const init = await pool.request({
    path: p,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: { name: `sessions-${n}`, version: '1' } } }),
  });
  const text = await init.body.text();
  const id = init.headers['mcp-session-id'];
  if (init.statusCode !== 200 || typeof id !== 'string') throw new Error(`initialize ${n}: HTTP ${init.statusCode} ${text.slice(0, 200)}`);
  const headers = { 'content-type': 'application/json', accept: ACCEPT, 'mcp-session-id': id, 'mcp-protocol-version': LEGACY_VERSION };
  const note = await pool.request({ path: p, method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  await note.body.dump();
  const call = await pool.request({ path: p, method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: TOOL_NAME, arguments: { text: 'hello' } } }) });
  const answer = await call.body.text();
  if (call.statusCode !== 200 || !answer.includes('hello')) throw new Error(`tools/call in session ${n}: HTTP ${call.statusCode} ${answer.slice(0, 200)}`);
  return id;
}

async function measure(mode: 'pass-through' | 'bridged', state: string): Promise<Record<string, unknown>> {
  const upstream = await startChild(mode === 'bridged' ? 'sdk-upstream-modern (v2 SDK)' : 'minimal-upstream', {
    args: ['--import', 'tsx', path.join(BENCH_DIR, mode === 'bridged' ? 'sdk-upstream-modern.ts' : 'minimal-upstream.ts')],
    cwd: ROOT,
    ready: (line) => announcedUrl(line),
  });
  let gatehouse: Child | undefined;
  try {
    gatehouse = await startChild('gatehouse', {
      args: gatehouseArgs(ROOT, 'passthrough', upstream.url, state, 'warn'),
      cwd: ROOT,
      ready: gatehouseUrl,
    });
    const url = new URL(gatehouse.url);
    const pool = new Pool(url.origin, { connections: CONCURRENCY });
    const ids: string[] = [];
    try {
      // One session first, so both readings come after the upstream's era is known and the pools exist.
      ids.push(await openSession(pool, url.pathname, 0));
      await new Promise((r) => setTimeout(r, 500));
      const before = readRssKb(gatehouse.pid)!;
      let next = 1;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < SESSIONS) ids.push(await openSession(pool, url.pathname, next++));
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      await new Promise((r) => setTimeout(r, 500));
      const after = readRssKb(gatehouse.pid)!;
      const peak = readPeakRssKb(gatehouse.pid)!;
      const result = { mode, sessions: ids.length, rssBeforeMb: before / 1024, rssAfterMb: after / 1024, peakRssMb: peak / 1024, perSessionKb: (after - before) / (ids.length - 1), openSeconds: seconds, withinLimit: peak / 1024 <= LIMIT_MB };
      process.stdout.write(`${mode.padEnd(13)} ${ids.length} sessions held: RSS ${(before / 1024).toFixed(1)} MB before, ${(after / 1024).toFixed(1)} MB after, peak ${(peak / 1024).toFixed(1)} MB (limit ${LIMIT_MB} MB: ${result.withinLimit ? 'within' : 'OVER'}); ${result.perSessionKb.toFixed(1)} KB per session\n`);
      return result;
    } finally {
      // Ended politely, so nothing is left behind in the upstream either.
      await Promise.all(ids.map((id) => pool.request({ path: url.pathname, method: 'DELETE', headers: { 'mcp-session-id': id, 'mcp-protocol-version': LEGACY_VERSION } }).then((r) => r.body.dump(), () => {})));
      await pool.close();
    }
  } finally {
    if (gatehouse) await stopChild(gatehouse);
    await stopChild(upstream);
  }
}

async function main(): Promise<void> {
  installSignalCleanup();
  const state = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-sessions-'));
  try {
    const results = [];
    for (const mode of MODES) results.push(await measure(mode, state));
    const dir = path.join(BENCH_DIR, 'results');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-sessions.json`);
    const json = `${JSON.stringify({ startedAt: new Date().toISOString(), node: process.version, limitMb: LIMIT_MB, results }, null, 2)}\n`;
    writeFileSync(file, json);
    writeFileSync(path.join(dir, 'latest-sessions.json'), json);
    process.stdout.write(`results: ${path.relative(ROOT, file)}\n`);
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
