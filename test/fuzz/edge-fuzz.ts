// The edge fuzzer's driver: starts recording upstreams and four real gateways (the built CLI), runs
// generated cases against them, checks every property per case and at the end, then shrinks one
// counterexample per distinct violation. Used by edge.test.ts (bounded CI run) and run.ts (long run).

import { spawn, type ChildProcess } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { randomBytes } from 'node:crypto';
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { RUN_ID_META } from '../../src/audit/audit-trail.js';
import { hashKey } from '../../src/auth/key-hash.js';
import { caseArb, EGRESS_DENIED, KEY_NAMES, printable, render, retryPlan, TARGETS, type CasePlan, type KeyName, type Target } from './arbitraries.js';
import { rawAbort, rawRequest, type RawOutcome, type RawResponse } from './raw-http.js';
import { startRecordingUpstream, type ReceivedCall, type RecordingUpstream } from './recording-upstream.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = process.env.FUZZ_GATEHOUSE_MAIN ?? join(ROOT, 'dist/main.js');

/** Statuses a refusal may carry (README §The front door and §Authentication, DESIGN.md §2). */
export const REFUSAL_STATUSES = new Set([400, 401, 403, 404, 405, 406, 408, 413, 415, 417, 429, 431]);
/** JSON-RPC codes a refusal may carry (docs/lifecycle.md, README front-door table, DESIGN.md §2). */
export const REFUSAL_CODES = new Set([-32700, -32600, -32601, -32602, -32001, -32020, -32021, -32022]);
/** Codes the recording upstreams answer with themselves, relayed in a 200 (unknown method, tool, session). */
const UPSTREAM_CODES = new Set([-32601, -32602, -32001]);
/** docs/lifecycle.md §Failures: the documented upstream failures and their statuses. */
const GW_ERR_STATUS: Record<string, number> = {
  GW_ERR_UPSTREAM_UNREACHABLE: 502,
  GW_ERR_UPSTREAM_BAD_RESPONSE: 502,
  GW_ERR_UPSTREAM_EXITED: 503,
  GW_ERR_UPSTREAM_OVERLOADED: 503,
  GW_ERR_SHUTTING_DOWN: 503,
  GW_ERR_UPSTREAM_TIMEOUT: 504,
};
const UNHANDLED_LOG = /unhandled|uncaught/i;
/** FUZZ_LOG_DIR keeps every gateway's log lines there, for digging into a run. */
const LOG_DIR = process.env.FUZZ_LOG_DIR;

const LISTEN = { host: '127.0.0.1', port: 0, path: '/mcp', maxBodyBytes: 65_536, requestTimeoutMs: 300, headersTimeoutMs: 2_000, keepAliveTimeoutMs: 5_000, trustedProxies: ['127.0.0.1'] };
const UPSTREAM_TIMEOUTS = { connectMs: 1_000, headersMs: 400, bodyMs: 1_000 };
/** Deadlines on our side: generous over the gateway's own timeouts, so only a real hang trips them. */
const HEADERS_DEADLINE_MS = 5_000;
const STREAM_READ_MS = 100;
const BODY_DEADLINE_MS = 6_000;

export interface FuzzOptions {
  runs: number;
  seed: number;
  /** Stops generating new cases after this long (the run still counts as complete for what it did). */
  timeLimitMs: number;
  /** Total time for shrinking all distinct violations. */
  shrinkTimeLimitMs: number;
  /** Distinct violations shrunk at most; the rest are reported as found. */
  maxShrinks: number;
  /** Replays one case (and shrinks it if it fails) instead of a run. */
  path?: string;
  /** Cases run before the first RSS sample, so start-up allocations do not count as growth. */
  warmup: number;
  /** Largest RSS growth of any gateway from after warm-up to the end. */
  rssGrowthBoundKb: number;
  progress?: (line: string) => void;
}

export interface Violation {
  /** Stable across runs of the same defect: property and the shape of the answer, no ids. */
  signature: string;
  detail: string;
  /** A log line may belong to the case before on the same gateway; shrinking tries that one too. */
  earlierCase?: number;
}

/** Replays (shrinking, FUZZ_PATH) wait for every case's log lines, so each line is blamed on its own case. */
let settleLogs = false;

interface CaseResult {
  violations: Violation[];
  request: string;
  response: string;
  plan: CasePlan;
}

export interface FoundViolation {
  signature: string;
  detail: string;
  count: number;
  /** fast-check path of the first case that showed it; with the seed, FUZZ_PATH replays it. */
  path: string;
  /** Other cases to shrink from if `path` does not show it again: later occurrences, or a case just before (a late log line). */
  otherPaths: string[];
  shrunk?: { path: string; plan: CasePlan; request: string; response: string; detail: string; numShrinks: number; interrupted: boolean };
  /** Set when the replay did not show the violation again (state or timing dependent). */
  notReproduced?: boolean;
  example: { plan: CasePlan; request: string; response: string };
}

export interface FuzzReport {
  seed: number;
  casesRun: number;
  runsRequested: number;
  interrupted: boolean;
  /** Exploring (the cases themselves), then shrinking. */
  durationMs: number;
  shrinkMs: number;
  statuses: Record<string, number>;
  /** "<status> <JSON-RPC code>" for every answer with an error. */
  codes: Record<string, number>;
  /** Error messages by status and code, numbers and quoted values elided. */
  messages: Record<string, number>;
  /** Answers by gateway, client era, HTTP method, JSON-RPC method and status (FUZZ_COVERAGE prints it). */
  coverage: Record<string, number>;
  /** Refusal reasons the gateways logged. */
  reasons: Record<string, number>;
  /** tools/call answers held against their audit records: what the client got → what was recorded. */
  audited: Record<string, number>;
  /** Answers held against their request log lines: none, several, its status or another. */
  logged: Record<string, number>;
  /** Audit outcome / request line outcome, for each audited call. */
  auditVsLog: Record<string, number>;
  /** What the governed upstream received: calls by tool, the busiest windows, keys seen more than once. */
  governed: Record<string, number>;
  /** Error-level log messages (not violations by themselves). */
  errorLogs: Record<string, number>;
  rss: Array<{ gateway: Target; startKb: number; warmKb: number; endKb: number; growthKb: number; warmHeapKb: number; endHeapKb: number; series: number }>;
  rssGrowthBoundKb: number;
  /** Exchange objects still alive at the end, per gateway (should be none). */
  leftovers: Partial<Record<Target, Record<string, number>>>;
  upstreamRequests: number;
  violations: FoundViolation[];
}

// ---------------------------------------------------------------------------------------------------------
// Gateways as child processes.

class GatewayProcess {
  child!: ChildProcess;
  port = 0;
  /** Which case the next log lines belong to; a line may also come late from the one before. */
  currentCase = -1;
  previousCase = -1;
  problems: Array<{ earlierCase: number; signature: string; line: string }> = [];
  reasons: Record<string, number> = {};
  errorLogs: Record<string, number> = {};
  /** The `status` of each `request` line, by call id (README §Logs: one per answered request). */
  requestLines = new Map<string, unknown[]>();
  /** The `outcome` of each `request` line, by call id. */
  requestOutcomes = new Map<string, unknown>();
  recentLines: string[] = [];
  startKb = 0;
  metricsUrl = '';
  /** Where the last heap snapshot that held an exchange was kept (the run's directory goes at its end). */
  leakSnapshot: string | undefined;
  private partial = '';
  private waiters = new Map<string, () => void>();

  constructor(
    readonly target: Target,
    readonly configFile: string,
  ) {}

  private get snapshotDir(): string {
    return `${this.configFile}.heap`;
  }

  /**
   * Live objects of the given constructors, counted in a heap snapshot the gateway writes on SIGUSR2 (V8
   * collects garbage first, so only what is still referenced counts).
   */
  async liveObjects(names: readonly string[]): Promise<Record<string, number> | undefined> {
    if (!this.alive()) return undefined;
    for (const f of readdirSync(this.snapshotDir)) rmSync(join(this.snapshotDir, f), { force: true });
    this.child.kill('SIGUSR2');
    const deadline = Date.now() + 60_000;
    let size = -1;
    while (Date.now() < deadline) {
      await sleep(250);
      const file = readdirSync(this.snapshotDir).find((f) => f.endsWith('.heapsnapshot'));
      if (file === undefined) continue;
      // Written in one go by the gateway; done once its size stops changing.
      const now = statSync(join(this.snapshotDir, file)).size;
      if (now !== size) {
        size = now;
        continue;
      }
      let counted: Record<string, number>;
      try {
        counted = countObjects(JSON.parse(readFileSync(join(this.snapshotDir, file), 'utf8')) as HeapSnapshot, names);
      } catch {
        // Still being written after a pause: read it again later.
        size = -1;
        continue;
      }
      // A snapshot that holds an exchange is what finds its cause (the retainers of the ServerResponse, the
      // request's own headers): kept outside the run's directory, and named in the violation.
      if ((counted.ServerResponse ?? 0) > 0 || (counted.IncomingMessage ?? 0) > 0) {
        this.leakSnapshot = join(tmpdir(), `gatehouse-fuzz-${this.target}-${Date.now()}.heapsnapshot`);
        copyFileSync(join(this.snapshotDir, file), this.leakSnapshot);
      }
      rmSync(join(this.snapshotDir, file), { force: true });
      return counted;
    }
    return undefined;
  }

  start(): Promise<void> {
    // FUZZ_GATEWAY_NODE_FLAGS (e.g. --max-old-space-size=48) tells a leak from a lazy collector: a real leak
    // then ends in a crash the run reports.
    const flags = (process.env.FUZZ_GATEWAY_NODE_FLAGS ?? '').split(' ').filter(Boolean);
    // A heap snapshot on SIGUSR2 (after a full collection) is how the run counts what outlived its requests.
    mkdirSync(this.snapshotDir, { recursive: true });
    const snapshot = [`--heapsnapshot-signal=SIGUSR2`, `--diagnostic-dir=${this.snapshotDir}`];
    this.child = spawn(process.execPath, [...snapshot, ...flags, MAIN, 'serve', '--config', this.configFile], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.resume();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.child.kill('SIGKILL');
        reject(new Error(`gateway ${this.target} did not start; last log lines:\n${this.recentLines.join('\n')}`));
      }, 20_000);
      this.child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`gateway ${this.target} exited with ${code} while starting:\n${this.recentLines.join('\n')}`));
      });
      this.child.stderr!.on('data', (d: Buffer) => {
        this.partial += d.toString('utf8');
        let nl: number;
        while ((nl = this.partial.indexOf('\n')) !== -1) {
          const line = this.partial.slice(0, nl);
          this.partial = this.partial.slice(nl + 1);
          this.onLine(line);
          const metrics = /"msg":"metrics listening","url":"([^"]+)"/.exec(line);
          if (metrics) this.metricsUrl = metrics[1]!;
          if (this.port === 0) {
            const m = /"msg":"gatehouse listening","url":"http:\/\/127\.0\.0\.1:(\d+)\//.exec(line);
            if (m) {
              this.port = Number(m[1]);
              clearTimeout(timer);
              this.child.removeAllListeners('exit');
              this.startKb = this.rssKb();
              resolve();
            }
          }
        }
      });
    });
  }

  private onLine(line: string): void {
    if (LOG_DIR) appendFileSync(join(LOG_DIR, `${this.target}.log`), `${line}\n`);
    this.recentLines.push(line.length > 2000 ? `${line.slice(0, 2000)}…` : line);
    if (this.recentLines.length > 60) this.recentLines.shift();
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
      if (entry === null || typeof entry !== 'object') throw new Error('not an object');
    } catch {
      this.problems.push({ earlierCase: this.previousCase, signature: 'log-not-json', line: line.slice(0, 2000) });
      return;
    }
    const msg = text(entry.msg);
    if (UNHANDLED_LOG.test(msg)) this.problems.push({ earlierCase: this.previousCase, signature: `log-unhandled:${msg}`, line: line.slice(0, 4000) });
    if (msg === 'request refused') count(this.reasons, text(entry.reason));
    else if (msg === 'request refused by auth') count(this.reasons, `auth_${text(entry.reason)}`);
    if (entry.level === 'error' || entry.level === 'fatal' || entry.level === 50 || entry.level === 60) count(this.errorLogs, msg);
    if (typeof entry.callId === 'string') {
      if (msg === 'request') {
        const statuses = this.requestLines.get(entry.callId);
        this.requestOutcomes.set(entry.callId, entry.outcome);
        if (statuses === undefined) this.requestLines.set(entry.callId, [entry.status]);
        else statuses.push(entry.status);
      }
      const w = this.waiters.get(entry.callId);
      if (w) {
        this.waiters.delete(entry.callId);
        w();
      }
    }
  }

  /** Resolves once a log line names the call (the refusal or request line), or after `ms`. */
  waitForCall(callId: string | undefined, ms: number): Promise<void> {
    if (callId === undefined) return sleep(5);
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waiters.delete(callId);
        resolve();
      }, ms);
      this.waiters.set(callId, () => {
        clearTimeout(t);
        // The batched writer may hold a line for up to 5 ms; what came just before is in by now.
        setTimeout(resolve, 1);
      });
    });
  }

  alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  rssKb(): number {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'));
      return m ? Number(m[1]) : 0;
    } catch {
      return 0;
    }
  }

  /** The Prometheus exposition: how many series, and V8's heap in use (prom-client's default metric). */
  async scrape(): Promise<{ series: number; heapUsedKb: number } | undefined> {
    if (!this.metricsUrl) return undefined;
    const text = await new Promise<string | undefined>((resolve) => {
      const req = httpGet(this.metricsUrl, { timeout: 5_000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve(body));
        res.on('error', () => resolve(undefined));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(undefined));
    });
    if (text === undefined) return undefined;
    const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    const heap = /^nodejs_heap_size_used_bytes (\S+)/m.exec(text);
    return { series: lines.length, heapUsedKb: heap ? Math.round(Number(heap[1]) / 1024) : 0 };
  }

  async stop(): Promise<void> {
    if (!this.alive()) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(t);
  }
}

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

function countObjects(snap: HeapSnapshot, names: readonly string[]): Record<string, number> {
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const iType = fields.indexOf('type');
  const iName = fields.indexOf('name');
  const out: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  for (let i = 0; i < snap.nodes.length; i += width) {
    if (types[snap.nodes[i + iType]!] !== 'object') continue;
    const name = snap.strings[snap.nodes[i + iName]!]!;
    if (name in out) out[name]!++;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// The harness: upstreams, keys, configs, gateways.

export interface Harness {
  gateways: Record<Target, GatewayProcess>;
  upstreams: RecordingUpstream[];
  /** The governed gateway's upstream, whose received calls the policy properties are held against. */
  governedUpstream: RecordingUpstream;
  keys: Record<KeyName, string>;
  pools: Record<Target, string[]>;
  /** The newest MRTR requestState each gateway handed out, for retries. */
  states: Record<Target, { state: string; inputKey: string }>;
  restarts: number;
  dir: string;
  stop(): Promise<void>;
}

/** Allows one address (TEST-NET-1, named as a literal, so nothing is resolved); EGRESS_DENIED is blocked. */
const EGRESS_RULE = { id: 'fuzz-egress', allow: { hosts: ['192.0.2.10'], schemes: ['http', 'https'] } };
/** The governed gateway's limits: small, so a run crosses each of them many times. */
const ADD_RATE = { rate: 1, perSeconds: 2, burst: 2 };
const ECHO_BUDGET_PER_MINUTE = 6;
const GOVERNED_POLICY = {
  egress: [EGRESS_RULE],
  rateLimits: [{ id: 'fuzz-add-rate', per: 'tool', tools: ['solo/add'], ...ADD_RATE }],
  budgets: [{ id: 'fuzz-echo-minute', per: 'tool', tools: ['solo/echo'], window: 'minute', limit: ECHO_BUDGET_PER_MINUTE }],
  breakers: [{ id: 'fuzz-breaker', per: 'upstream', consecutiveFailures: 8, coolDownSeconds: 1 }],
};

export async function startHarness(): Promise<Harness> {
  const keys = Object.fromEntries(KEY_NAMES.map((k) => [k, `gh_fuzz_${k.toLowerCase()}_${randomBytes(18).toString('base64url')}`])) as Record<KeyName, string>;
  const secrets = Object.values(keys);
  const upOpts = { secrets, slowMs: 700, holdMs: 3_000, chaosEvery: 37 };
  // Each upstream's own credential, which Gatehouse must send on every request it makes there (its own
  // probes, lists, listens and session ends included), in place of the client's.
  const credential = (name: string) => ({ header: 'x-upstream-key', value: `up-${name}-${randomBytes(9).toString('base64url')}` });
  const legacy = await startRecordingUpstream({ era: 'legacy', credential: credential('legacy'), ...upOpts });
  const modern = await startRecordingUpstream({ era: 'modern', credential: credential('modern'), ...upOpts });
  const alpha = await startRecordingUpstream({ era: 'legacy', unsafeName: true, credential: credential('alpha'), ...upOpts });
  const beta = await startRecordingUpstream({ era: 'modern', deepDefinitions: true, credential: credential('beta'), ...upOpts });
  const governed = await startRecordingUpstream({ era: 'legacy', credential: credential('governed'), ...upOpts });
  const upstreams = [legacy, modern, alpha, beta, governed];
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-fuzz-'));
  const scoped = ['mcp:tools'];
  const apiKeys = [
    { id: 'fuzz-a', hash: hashKey(keys.A), tenant: 't1', scopes: scoped },
    { id: 'fuzz-b', hash: hashKey(keys.B), tenant: 't2', scopes: scoped },
    { id: 'fuzz-noscope', hash: hashKey(keys.NOSCOPE), scopes: [] },
    { id: 'fuzz-expired', hash: hashKey(keys.EXPIRED), scopes: scoped, expires: '2020-01-01' },
    { id: 'fuzz-disabled', hash: hashKey(keys.DISABLED), scopes: scoped, disabled: true },
    { id: 'fuzz-limited', hash: hashKey(keys.LIMITED), scopes: scoped, tools: ['echo*', 'alpha_echo*'] },
  ];
  // The restricted key makes lists differ per caller, which sends even a lone upstream through the catalog;
  // only the two-upstream gateway knows it, so the other two keep the byte-for-byte pass-through.
  const unrestricted = apiKeys.filter((k) => k.tools === undefined);
  const base = {
    listen: LISTEN,
    // Small caps, so a run crosses them and memory is bounded by them rather than by the run's length.
    sessions: { max: 50, idleTimeoutMs: 30_000, inputTimeoutMs: 1_000 },
    auth: { apiKeys, requiredScopes: scoped, failureLimit: { attempts: 5, windowSeconds: 2 } },
    log: { level: 'info' },
    // On, so the run also checks that client-chosen values never become label values (bounded series).
    metrics: { enabled: true, host: '127.0.0.1', port: 0 },
    shutdown: { graceMs: 500 },
    // Every gateway checks URLs in arguments (the egress stage always runs); a rule that allows one address
    // by name keeps it from resolving the names fuzzed strings hold, so the run stays on loopback.
    policy: { egress: [EGRESS_RULE] },
  };
  const up = (name: string, u: RecordingUpstream) => ({ name, url: u.url, timeouts: UPSTREAM_TIMEOUTS, headers: { [u.credential!.header]: u.credential!.value } });
  // Each gateway keeps its state (audit, idempotency) in its own file in the run's directory, never in the
  // repository's ./data.
  const store = (t: Target) => ({ store: { kind: 'sqlite', path: join(dir, `${t}.db`) } });
  const configs: Record<Target, unknown> = {
    legacy: { ...base, ...store('legacy'), auth: { ...base.auth, apiKeys: unrestricted }, upstreams: [up('solo', legacy)] },
    modern: { ...base, ...store('modern'), auth: { ...base.auth, apiKeys: unrestricted }, upstreams: [up('solo', modern)] },
    catalog: { ...base, ...store('catalog'), upstreams: [up('alpha', alpha), up('beta', beta)] },
    governed: { ...base, ...store('governed'), auth: { ...base.auth, apiKeys: unrestricted }, upstreams: [up('solo', governed)], policy: GOVERNED_POLICY, idempotency: { requireKeys: true, tools: ['solo/add'] } },
  };
  const gateways = {} as Record<Target, GatewayProcess>;
  for (const t of TARGETS) {
    const file = join(dir, `${t}.yaml`);
    // JSON is YAML; the loader validates it like any config file.
    writeFileSync(file, JSON.stringify(configs[t], null, 2));
    gateways[t] = new GatewayProcess(t, file);
  }
  const h: Harness = {
    gateways,
    upstreams,
    governedUpstream: governed,
    keys,
    pools: { legacy: [], modern: [], catalog: [], governed: [] },
    states: { legacy: { state: '', inputKey: '' }, modern: { state: '', inputKey: '' }, catalog: { state: '', inputKey: '' }, governed: { state: '', inputKey: '' } },
    restarts: 0,
    dir,
    async stop() {
      await Promise.all(TARGETS.map((t) => gateways[t].stop()));
      await Promise.all(upstreams.map((u) => u.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(TARGETS.map((t) => gateways[t].start()));
  } catch (err) {
    await h.stop();
    throw err;
  }
  return h;
}

// ---------------------------------------------------------------------------------------------------------
// One case.

/** Shrunk counterexamples of the defects found so far (corpus.json); each run replays them first. */
const CORPUS = JSON.parse(readFileSync(new URL('./corpus.json', import.meta.url), 'utf8')) as Array<{ why: string; plan: CasePlan }>;

const refusedMarkers = new Map<string, { status: number; caseNo: number; signatureBase: string }>();

/** How a client saw a `tools/call` end: what its audit record must say (README §Audit). */
type SeenAnswer = 'success' | 'tool_error' | 'rpc_error' | 'failure';
/** The record outcomes each view allows: a refusal is a tool error or a JSON-RPC error, by stage. */
const AUDIT_FITS: Record<SeenAnswer, ReadonlySet<string>> = {
  success: new Set(['ok']),
  tool_error: new Set(['tool_error', 'refused']),
  rpc_error: new Set(['error', 'refused']),
  failure: new Set(['failed', 'aborted']),
};
/** Every answer with a call id, and its HTTP status: held against the request log at the end. */
const answeredCalls: Array<{ plan: CasePlan; callId: string; status: number; caseNo: number; request: string; response: string }> = [];
/**
 * The request line's outcomes (the metrics' words) that fit each audit outcome. A JSON-RPC error answered
 * 200 is `ok` to the metrics (the request was answered), `error` to the audit (the call did not run).
 */
const LOG_FITS: Record<string, ReadonlySet<string>> = {
  ok: new Set(['ok']),
  tool_error: new Set(['tool_error']),
  refused: new Set(['refused']),
  error: new Set(['ok', 'client_error']),
  failed: new Set(['upstream_error']),
  aborted: new Set(['aborted']),
};
/** `tools/call` answers clients got, by the call id Gatehouse gave them: held against the audit at the end. */
const auditChecks: Array<{ plan: CasePlan; callId: string; seen: SeenAnswer; runId: unknown; caseNo: number; request: string; response: string }> = [];
let markerCounter = 0;

async function runCase(h: Harness, plan: CasePlan, caseNo: number): Promise<CaseResult> {
  const gw = h.gateways[plan.target];
  gw.previousCase = gw.currentCase;
  gw.currentCase = caseNo;
  const caseStarted = performance.now();
  const violations: Violation[] = [];
  const leaksBefore = h.upstreams.reduce((n, u) => n + u.secretLeaks.length, 0);
  const bareBefore = h.upstreams.reduce((n, u) => n + u.uncredentialed.length, 0);
  const session = await resolveSession(h, plan, violations);
  const copies = await Promise.all(Array.from({ length: plan.parallel }, () => sendCopy(h, gw, plan, session, caseNo)));
  for (const c of copies) for (const v of c.violations) if (!violations.some((x) => x.signature === v.signature)) violations.push(v);
  const shown = copies.find((c) => c.violations.length > 0) ?? copies[0]!;
  if (h.upstreams.reduce((n, u) => n + u.secretLeaks.length, 0) > leaksBefore) {
    const leak = h.upstreams.flatMap((u) => u.secretLeaks).at(-1)!;
    violations.push({ signature: 'credential-reached-upstream', detail: `an API key reached the upstream: ${leak.method} ${leak.url} ${JSON.stringify(leak.headers).slice(0, 300)}` });
  }
  if (h.upstreams.reduce((n, u) => n + u.uncredentialed.length, 0) > bareBefore) {
    const bare = h.upstreams.flatMap((u) => u.uncredentialed).at(-1)!;
    violations.push({ signature: `upstream-credential-missing:${bare.method}`, detail: `a request reached an upstream without its configured credential: ${bare.method} ${bare.url} ${JSON.stringify(bare.headers).slice(0, 300)} ${bare.body.slice(0, 200)}` });
  }
  if (plan.abortAfterMs !== null) await sleep(settleLogs ? 30 : 2);
  if (!gw.alive()) {
    violations.push({ signature: `crash:${plan.target}`, detail: `gateway exited (${gw.child.exitCode ?? gw.child.signalCode}); last log lines:\n${gw.recentLines.slice(-8).join('\n')}` });
    await restart(h, plan.target);
  }
  for (const p of gw.problems.splice(0)) violations.push({ signature: p.signature, detail: p.line, ...(p.earlierCase >= 0 ? { earlierCase: p.earlierCase } : {}) });
  const ms = performance.now() - caseStarted;
  if (process.env.FUZZ_DEBUG_SLOW && ms > Number(process.env.FUZZ_DEBUG_SLOW)) process.stderr.write(`slow case ${caseNo} ${Math.round(ms)} ms: ${plan.target} ${plan.http} ${plan.session} ${plan.seed.method} ${JSON.stringify(plan.seed.params)?.slice(0, 80)} body=${plan.body.kind} framing=${plan.framing} -> ${shown.response.split('\r\n')[0]}\n`);
  return { violations, request: shown.request, response: shown.response, plan };
}

/** One copy of the case's request, with its own marker, and the properties of its answer. */
async function sendCopy(h: Harness, gw: GatewayProcess, plan: CasePlan, session: string, caseNo: number, retried?: { state: string; inputKey: string }): Promise<{ violations: Violation[]; request: string; response: string }> {
  const violations: Violation[] = [];
  const marker = `FZM${(++markerCounter).toString(36)}x${randomBytes(3).toString('hex')}MZF`;
  const rendered = render(plan, { port: gw.port, keys: h.keys, session, ...(retried ?? h.states[plan.target]), marker, maxBodyBytes: LISTEN.maxBodyBytes });
  if (plan.abortAfterMs !== null) {
    // Whatever the gateway does with a request whose client left, only its health is checked.
    await rawAbort(gw.port, rendered.bytes, plan.abortAfterMs);
    return { violations, request: rendered.transcript, response: `(the client hung up ${plan.abortAfterMs} ms after sending)` };
  }
  const outcome = await rawRequest({ port: gw.port, bytes: rendered.bytes, headersDeadlineMs: HEADERS_DEADLINE_MS, streamReadMs: STREAM_READ_MS, bodyDeadlineMs: BODY_DEADLINE_MS, head: rendered.head });
  const callId = outcome.kind === 'response' ? outcome.response.headers['x-gatehouse-call-id']?.[0] : undefined;
  // Waiting for the log line costs the logger's batching delay; only answers that may come with a
  // logged failure wait for it, and a line that still arrives late names the case before as a suspect.
  const suspicious = outcome.kind !== 'response' || outcome.response.status >= 500;
  if (settleLogs || suspicious) await gw.waitForCall(callId, 30);
  const response = describeOutcome(outcome);
  if (process.env.FUZZ_TRACE) process.stderr.write(`--- case ${caseNo} ${plan.target}\n${rendered.transcript}\n--- answer\n${response}\n`);
  if (outcome.kind === 'timeout') violations.push({ signature: `hang:${plan.http}`, detail: `no status line within ${HEADERS_DEADLINE_MS} ms` });
  else if (outcome.kind === 'closed') violations.push({ signature: `no-answer:${plan.http === 'CONNECT' ? 'CONNECT' : 'request'}`, detail: `connection closed before a status line (${outcome.error ?? 'clean close'}, ${outcome.bytes} bytes)` });
  else {
    const res = outcome.response;
    const upstreamStatus = findMarker(h, marker);
    count(stats.statuses, upstreamStatus === res.status && res.status >= 400 ? `${res.status} (relayed from the upstream)` : String(res.status));
    const method = typeof rendered.message?.method === 'string' ? rendered.message.method : plan.seed.kind;
    count(stats.coverage, `${plan.target} ${plan.era === '2026-07-28' ? 'modern' : 'legacy'} ${plan.http} ${method.slice(0, 30)} → ${res.status}${jsonRpcError(res) ? ` ${text(jsonRpcError(res)!.code)}` : ''}`);
    violations.push(...checkAnswer(res, plan.path, upstreamStatus === res.status));
    if (res.status === 200) {
      const sid = res.headers['mcp-session-id']?.[0];
      if (sid) remember(h.pools[plan.target], sid);
      const asked = inputRequired(res);
      if (asked) {
        h.states[plan.target] = asked;
        if (plan.mrtr !== 'none' && !retried) {
          const state = plan.mrtr === 'tampered' ? `${asked.state.slice(0, -2)}xx` : asked.state;
          const retry = await sendCopy(h, gw, retryPlan(plan), session, caseNo, { ...asked, state });
          const again = plan.mrtr === 'twice' ? await sendCopy(h, gw, retryPlan(plan), session, caseNo, { ...asked, state }) : undefined;
          for (const r of [retry, ...(again ? [again] : [])]) {
            for (const v of r.violations) violations.push({ ...v, signature: `mrtr-retry:${v.signature}` });
            if (r.violations.length > 0) return { violations, request: `${rendered.transcript}\n\n-- then the retry --\n${r.request}`, response: `${response}\n\n-- then --\n${r.response}` };
          }
        }
      }
    }
    // A JSON-RPC error the gateway made up itself (unknown tool, used requestState, bad cursor) in a
    // successful answer is a refusal too: the upstream must not have seen the request unless it erred itself.
    const err = jsonRpcError(res);
    if (res.status < 300 && err && REFUSAL_CODES.has(err.code as number)) {
      const seenUpstream = findMarker(h, marker);
      if (seenUpstream !== undefined && !h.upstreams.some((u) => u.erred.has(marker))) {
        violations.push({ signature: `refused-but-forwarded:${res.status}:${text(err.code)}`, detail: `the gateway answered error ${text(err.code)} (${text(err.message).slice(0, 120)}), yet the upstream received the request and answered it without an error` });
      }
    }
    // Refused by the gateway itself unless the upstream answered this very request with the same status.
    if (res.status >= 400 && res.status < 500) {
      const seenUpstream = findMarker(h, marker);
      const code = jsonRpcError(res)?.code;
      const base = `${res.status}:${code === undefined ? '-' : text(code)}`;
      if (seenUpstream !== undefined && seenUpstream !== res.status) {
        violations.push({ signature: `refused-but-forwarded:${base}`, detail: `the gateway answered ${res.status}, yet the upstream received the request (it answered ${seenUpstream})` });
      } else if (seenUpstream === undefined) refusedMarkers.set(marker, { status: res.status, caseNo, signatureBase: base });
    }
    const message = rendered.message as { method?: unknown; id?: unknown } | undefined;
    // An answer answers its request (JSON-RPC 2.0 §5: the same id), never another: a response on this
    // request's body or stream with another id is someone else's answer, unless the upstream itself
    // answered this very request with a fault (a wrong id, garbage), which a pass-through relays.
    if (message !== undefined && !Array.isArray(message) && typeof message.method === 'string' && (typeof message.id === 'string' || Number.isInteger(message.id))) {
      const foreign = responsesIn(res).filter((r) => JSON.stringify(r.id) !== JSON.stringify(idAsParsed(message.id)));
      const excused = h.upstreams.some((u) => u.faulted.has(marker));
      for (const r of foreign) {
        // A refusal made before the body was read (authentication, headers) cannot know the id: null.
        if (r.id === null && res.status >= 400 && res.status < 500) continue;
        if (excused) continue;
        violations.push({ signature: `answer-id:${plan.target}:${res.status}:${r.id === null ? 'null' : typeof r.id}`, detail: `request id ${JSON.stringify(message.id)}, answered with id ${JSON.stringify(r.id)}: ${JSON.stringify(r).slice(0, 300)}` });
        break;
      }
    }
    // A request answered 200 gets its response: a JSON body, or a stream that, once the server ends it,
    // holds the response (or the error event Gatehouse writes for an upstream that ended without one).
    if (plan.http === 'POST' && plan.body.kind === 'json' && message !== undefined && !Array.isArray(message) && typeof message.method === 'string' && message.id !== undefined && res.status === 200 && !res.truncated) {
      const answered = responsesIn(res).some((r) => JSON.stringify(r.id) === JSON.stringify(idAsParsed(message.id)));
      // Excused: a request the upstream itself answered with a fault only a parse shows (a wrong id), which
      // the pass-through relays as it came for a method it does not govern (counted, for the report); an
      // empty 200, HTML or garbage is a 502 now (upstream/passthrough.ts notAnAnswer).
      if (!answered && h.upstreams.some((u) => u.faulted.has(marker))) count(stats.coverage, `${plan.target} unanswered after an upstream fault (relayed)`);
      else if (!answered) {
        const sse = (res.headers['content-type']?.[0] ?? '').startsWith('text/event-stream');
        violations.push({ signature: `unanswered:${plan.target}:${sse ? 'sse' : 'json'}`, detail: `request id ${JSON.stringify(message.id)} (${message.method}) answered 200 without its response: ${printable(res.body, 400)}` });
      }
    }
    // One `request` line per answered request, with the status the client got (README §Logs): checked at
    // the end of the run, when every batch of lines is in.
    if (callId !== undefined) answeredCalls.push({ plan, callId, status: res.status, caseNo, request: rendered.transcript, response });
    // Every governed call is recorded before its answer leaves, as what the client got (README §Audit):
    // checked against the store at the end of the run.
    if (callId !== undefined && message !== undefined && !Array.isArray(message) && message.method === 'tools/call' && message.id !== undefined) {
      const seen = seenAnswer(res, idAsParsed(message.id));
      if (seen !== undefined) auditChecks.push({ plan, callId, seen: seen.seen, runId: seen.runId, caseNo, request: rendered.transcript, response });
    }
    // A member named twice (the body plan appended one the message already had) never reaches the
    // upstream: Gatehouse reads the last, an upstream parser may read the first (front door, 80ef830).
    if (plan.body.kind === 'dupkey' && rendered.message !== undefined && Object.hasOwn(rendered.message, plan.body.key) && findMarker(h, marker) !== undefined) {
      violations.push({ signature: `duplicate-member-forwarded:${plan.body.key}`, detail: `the body names "${plan.body.key}" twice at its top level, and the upstream received it (the gateway answered ${res.status})` });
    }
  }
  return { violations, request: rendered.transcript, response };
}

/** Runs one plan outside fast-check (FUZZ_PLAN): the printed counterexample JSON, exactly. */
export async function runPlan(h: Harness, plan: CasePlan): Promise<{ violations: Violation[]; request: string; response: string }> {
  settleLogs = true;
  try {
    const r = await runCase(h, plan, 0);
    return { violations: r.violations, request: r.request, response: r.response };
  } finally {
    settleLogs = false;
  }
}

/** The session id a case presents: none, one issued just now (to this caller or another), or made up. */
async function resolveSession(h: Harness, plan: CasePlan, violations: Violation[]): Promise<string> {
  const gw = h.gateways[plan.target];
  const pool = h.pools[plan.target];
  const ownKey: KeyName = (KEY_NAMES as readonly string[]).includes(plan.auth) ? (plan.auth as KeyName) : 'A';
  switch (plan.session) {
    case 'none':
      return '';
    case 'madeup':
      return `made-up-${plan.seed.id.toString().length}`;
    case 'pool':
      return pool.length === 0 ? 'empty-pool' : pool[Math.abs(Number(String(plan.seed.id).length * 7919)) % pool.length]!;
    case 'fresh':
    case 'fresh-other':
    case 'fresh-deleted': {
      const key = plan.session === 'fresh-other' ? (ownKey === 'B' ? 'A' : 'B') : ownKey;
      const sid = await prelude(h, gw, plan, key, 'initialize', violations);
      if (sid && plan.session === 'fresh-deleted') await prelude(h, gw, plan, key, 'delete', violations, sid);
      return sid ?? 'no-session-issued';
    }
  }
}

/** A tool each gateway lists when it works (the catalog names it by its upstream). */
const EXPECTED_TOOL: Record<Target, string> = { legacy: 'echo', modern: 'echo', catalog: 'beta_echo', governed: 'echo' };
/** The upstreams fail every so often on purpose (chaosEvery): the end check may retry. */
const LIST_TRIES = 5;

/**
 * Whether the gateway still lists its upstreams' tools to a modern client: the liveness the per-case
 * properties cannot see, since an outage answers with documented codes (a 502, "unknown tool"). Once,
 * one upstream's tool nested 20,000 levels deep made every catalog list a 502.
 */
async function stillLists(h: Harness, gw: GatewayProcess, t: Target): Promise<boolean> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 'fz-end', method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } });
  const lines = [
    'POST /mcp HTTP/1.1',
    `host: 127.0.0.1:${gw.port}`,
    'accept: application/json, text/event-stream',
    'content-type: application/json',
    `authorization: Bearer ${h.keys.A}`,
    'mcp-protocol-version: 2026-07-28',
    'mcp-method: tools/list',
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
    '',
    body,
  ];
  for (let i = 0; i < LIST_TRIES; i++) {
    const outcome = await rawRequest({ port: gw.port, bytes: Buffer.from(lines.join('\r\n')), headersDeadlineMs: HEADERS_DEADLINE_MS, streamReadMs: STREAM_READ_MS, bodyDeadlineMs: BODY_DEADLINE_MS });
    if (outcome.kind === 'response' && outcome.response.status === 200 && outcome.response.body.includes(`"name":"${EXPECTED_TOOL[t]}"`)) return true;
    await sleep(200);
  }
  return false;
}

/** A well-formed legacy initialize (or DELETE) as a real client sends it; its answer is checked too. */
async function prelude(h: Harness, gw: GatewayProcess, plan: CasePlan, key: KeyName, kind: 'initialize' | 'delete', violations: Violation[], sid?: string): Promise<string | undefined> {
  const marker = `FZM${(++markerCounter).toString(36)}x${randomBytes(3).toString('hex')}MZF`;
  const body = kind === 'initialize' ? JSON.stringify({ jsonrpc: '2.0', id: 'fz-init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: `fuzz-prelude-${marker}`, version: '1' } } }) : '';
  const lines = [
    `${kind === 'initialize' ? 'POST' : 'DELETE'} /mcp HTTP/1.1`,
    `host: 127.0.0.1:${gw.port}`,
    'accept: application/json, text/event-stream',
    `authorization: Bearer ${h.keys[key]}`,
    ...(kind === 'initialize' ? ['content-type: application/json', `content-length: ${Buffer.byteLength(body)}`] : [`mcp-session-id: ${sid}`, 'mcp-protocol-version: 2025-11-25']),
    ...(plan.xff !== null ? [`x-forwarded-for: ${plan.xff}`] : []),
    'connection: close',
    '',
    body,
  ];
  const outcome = await rawRequest({ port: gw.port, bytes: Buffer.from(lines.join('\r\n')), headersDeadlineMs: HEADERS_DEADLINE_MS, streamReadMs: STREAM_READ_MS, bodyDeadlineMs: BODY_DEADLINE_MS });
  if (outcome.kind !== 'response') {
    violations.push({ signature: `prelude-${kind}:${outcome.kind}`, detail: describeOutcome(outcome) });
    return undefined;
  }
  const relayed = findMarker(h, marker) === outcome.response.status;
  for (const v of checkAnswer(outcome.response, '/mcp', relayed)) violations.push({ signature: `prelude-${kind}:${v.signature}`, detail: v.detail });
  const issued = outcome.response.headers['mcp-session-id']?.[0];
  if (issued) remember(h.pools[plan.target], issued);
  return issued;
}

function remember(pool: string[], sid: string): void {
  if (pool.includes(sid)) return;
  pool.push(sid);
  if (pool.length > 200) pool.shift();
}

function findMarker(h: Harness, marker: string): number | undefined {
  for (const u of h.upstreams) {
    const s = u.markers.get(marker);
    if (s !== undefined) return s;
  }
  return undefined;
}

/** The run cannot go on (gateways that keep crashing); any other error fails one case only. */
class HarnessAbort extends Error {}

async function restart(h: Harness, target: Target): Promise<void> {
  if (++h.restarts > 5) throw new HarnessAbort('the gateways crashed more than 5 times; stopping the run');
  const old = h.gateways[target];
  await old.stop();
  const fresh = new GatewayProcess(target, old.configFile);
  await fresh.start();
  h.gateways[target] = fresh;
  h.pools[target] = [];
}

// ---------------------------------------------------------------------------------------------------------
// The answer's properties.

const stats = { statuses: {} as Record<string, number>, codes: {} as Record<string, number>, messages: {} as Record<string, number>, coverage: {} as Record<string, number>, audited: {} as Record<string, number>, logged: {} as Record<string, number>, auditVsLog: {} as Record<string, number>, governed: {} as Record<string, number> };

interface RpcError {
  code: unknown;
  message?: unknown;
  data?: { code?: unknown } & Record<string, unknown>;
}

function jsonBody(res: RawResponse): unknown {
  const type = res.headers['content-type']?.[0] ?? '';
  if (!type.includes('json') || res.body.length === 0) return undefined;
  try {
    return JSON.parse(res.body.toString('utf8'));
  } catch {
    return undefined;
  }
}

function jsonRpcError(res: RawResponse): RpcError | undefined {
  const body = jsonBody(res) as { error?: RpcError } | undefined;
  return body && typeof body === 'object' && body.error && typeof body.error === 'object' ? body.error : undefined;
}

/** JSON-RPC errors inside an event stream (each `data:` line that parses). */
function sseErrors(res: RawResponse): RpcError[] {
  if (!(res.headers['content-type']?.[0] ?? '').startsWith('text/event-stream')) return [];
  const out: RpcError[] = [];
  for (const line of res.body.toString('utf8').split('\n')) {
    if (!line.startsWith('data:')) continue;
    try {
      const m = JSON.parse(line.slice(5)) as { error?: RpcError };
      if (m && typeof m === 'object' && m.error && typeof m.error === 'object') out.push(m.error);
    } catch {
      /* a partial event cut by our read deadline */
    }
  }
  return out;
}

/**
 * How the client saw its `tools/call` end, from its final answer (the JSON body, or the stream's event
 * answering `id`); undefined where no record is owed or the answer was not read whole: a 4xx of the front
 * door, GW_ERR_STATE_UNAVAILABLE (the record could not be kept: the answer is withheld instead), a stream
 * cut by the read deadline.
 */
function seenAnswer(res: RawResponse, id: unknown): { seen: SeenAnswer; runId?: unknown } | undefined {
  if (res.status >= 500) {
    const err = jsonRpcError(res);
    return isGwErr(err) && err!.data!.code !== 'GW_ERR_STATE_UNAVAILABLE' ? { seen: 'failure' } : undefined;
  }
  if (res.status !== 200) return undefined;
  const answer = responsesIn(res).reverse().find((m) => JSON.stringify(m.id) === JSON.stringify(id)) as { result?: { isError?: unknown; _meta?: Record<string, unknown> }; error?: RpcError } | undefined;
  if (answer === undefined) return undefined;
  if (answer.error !== undefined) {
    if (!isGwErr(answer.error)) return { seen: 'rpc_error' };
    return answer.error.data!.code === 'GW_ERR_STATE_UNAVAILABLE' ? undefined : { seen: 'failure' };
  }
  // A result carries its record's run id (README §Audit).
  return { seen: answer.result?.isError === true ? 'tool_error' : 'success', runId: answer.result?._meta?.[RUN_ID_META] };
}

/** A request id as a JSON parser reads it: the fuzzer writes some ids as raw JSON text (`1.0`, `1e0`), marked RAW. */
function idAsParsed(id: unknown): unknown {
  if (typeof id !== 'string' || !id.startsWith('\u0000RAW:')) return id;
  try {
    return JSON.parse(id.slice('\u0000RAW:'.length));
  } catch {
    return id;
  }
}

/** The JSON-RPC responses in an answer: its JSON body, or its stream's events (server requests and notifications left out). */
function responsesIn(res: RawResponse): Array<{ id: unknown }> {
  const type = res.headers['content-type']?.[0] ?? '';
  const messages: unknown[] = [];
  if (type.startsWith('text/event-stream')) {
    for (const line of res.body.toString('utf8').split('\n')) {
      if (!line.startsWith('data:')) continue;
      try {
        messages.push(JSON.parse(line.slice(5)));
      } catch {
        /* cut by the read deadline */
      }
    }
  } else {
    const body = jsonBody(res);
    messages.push(...(Array.isArray(body) ? body : [body]));
  }
  return messages.filter((m): m is { id: unknown } => m !== null && typeof m === 'object' && !Array.isArray(m) && (m as { jsonrpc?: unknown }).jsonrpc === '2.0' && !('method' in m) && ('result' in m || 'error' in m));
}

/** `gatehouse audit verify --store FILE` of the build under test: its exit code and what it printed. */
function auditVerify(file: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, 'audit', 'verify', '--store', file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** The outcome of each audit record in a gateway's store file, by call id. */
function auditOutcomes(file: string): Map<string, Array<{ outcome: string; runId: unknown }>> {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const out = new Map<string, Array<{ outcome: string; runId: unknown }>>();
    for (const row of db.prepare('SELECT record FROM audit').all() as Array<{ record: string }>) {
      const r = JSON.parse(row.record) as { callId?: unknown; outcome?: unknown; runId?: unknown };
      if (typeof r.callId !== 'string') continue;
      const list = out.get(r.callId) ?? [];
      list.push({ outcome: String(r.outcome), runId: r.runId });
      out.set(r.callId, list);
    }
    return out;
  } finally {
    db.close();
  }
}

function isGwErr(e: RpcError | undefined): boolean {
  return typeof e?.data?.code === 'string' && e.data.code.startsWith('GW_ERR_');
}

/**
 * The per-answer properties. `relayed` is set when the upstream itself answered this very request with the
 * same status: a pass-through relaying the upstream's own refusal is not a refusal of the gateway's, but a
 * 5xx is still one the client sees.
 */
function checkAnswer(res: RawResponse, path: string, relayed = false): Violation[] {
  const out: Violation[] = [];
  const mcp = path.split('?')[0] === '/mcp';
  const err = jsonRpcError(res);
  if (err) {
    count(stats.codes, `${res.status} ${text(err.code)}${isGwErr(err) ? ` ${text(err.data!.code)}` : ''}`);
    count(stats.messages, `${res.status} ${text(err.code)} ${text(err.message).replace(/'[^']*'|"[^"]*"|\d+/g, '…').slice(0, 90)}`);
  }
  for (const e of sseErrors(res)) count(stats.codes, `${res.status} sse ${text(e.code)}${isGwErr(e) ? ` ${text(e.data!.code)}` : ''}`);
  if (res.status >= 500) {
    const gwCode = isGwErr(err) ? text(err!.data!.code) : undefined;
    const documented = gwCode !== undefined && GW_ERR_STATUS[gwCode] === res.status;
    const draining = res.status === 503 && res.headers['retry-after'] !== undefined;
    const readyz = res.status === 503 && path.split('?')[0] === '/readyz';
    if (!documented && !draining && !readyz) {
      // One signature per relayed status, whichever request met the upstream's failure.
      const shape = relayed ? '' : `:${err ? `${text(err.code)}:${gwCode ?? text(err.message).slice(0, 60)}` : 'no-jsonrpc'}`;
      out.push({ signature: `5xx${relayed ? '-relayed-from-upstream' : ''}:${res.status}${shape}`, detail: `body: ${printable(res.body, 600)}` });
    }
  } else if (res.status >= 400) {
    if (relayed) return out;
    if (!REFUSAL_STATUSES.has(res.status)) out.push({ signature: `undocumented-status:${res.status}`, detail: `body: ${printable(res.body, 600)}` });
    if (mcp && res.body.length > 0) {
      if (err === undefined) out.push({ signature: `refusal-not-jsonrpc:${res.status}`, detail: `body: ${printable(res.body, 600)}` });
      else if (!REFUSAL_CODES.has(err.code as number)) out.push({ signature: `undocumented-code:${res.status}:${text(err.code)}`, detail: `body: ${printable(res.body, 600)}` });
    }
  } else if (mcp) {
    // Errors in a successful answer are the upstream's own (relayed) or documented ones.
    for (const e of [...(err ? [err] : []), ...sseErrors(res)]) {
      const ok = REFUSAL_CODES.has(e.code as number) || UPSTREAM_CODES.has(e.code as number) || (e.code === -32603 && isGwErr(e));
      if (!ok) out.push({ signature: `undocumented-code:${res.status}:${text(e.code)}`, detail: `error: ${JSON.stringify(e).slice(0, 600)}` });
    }
  }
  return out;
}

/** The state and first input key of an InputRequiredResult answer, if that is what it is. */
function inputRequired(res: RawResponse): { state: string; inputKey: string } | undefined {
  const text = res.body.toString('utf8');
  if (!text.includes('input_required')) return undefined;
  const messages: unknown[] = [];
  const json = jsonBody(res);
  if (json !== undefined) messages.push(json);
  for (const line of text.split('\n')) {
    if (!line.startsWith('data:')) continue;
    try {
      messages.push(JSON.parse(line.slice(5)));
    } catch {
      /* cut by our read deadline */
    }
  }
  for (const m of messages) {
    const result = (m as { result?: { resultType?: unknown; requestState?: unknown; inputRequests?: unknown } } | null)?.result;
    if (result?.resultType === 'input_required' && typeof result.requestState === 'string') {
      const keys = result.inputRequests !== null && typeof result.inputRequests === 'object' ? Object.keys(result.inputRequests) : [];
      return { state: result.requestState, inputKey: keys[0] ?? '' };
    }
  }
  return undefined;
}

function describeOutcome(o: RawOutcome): string {
  if (o.kind === 'timeout') return `(no status line within ${o.ms} ms; ${o.bytes} bytes received)`;
  if (o.kind === 'closed') return `(connection closed after ${o.ms} ms with no status line: ${o.error ?? 'clean close'}, ${o.bytes} bytes)`;
  const r = o.response;
  const head = Object.entries(r.headers)
    .filter(([n]) => n !== 'date')
    .flatMap(([n, vs]) => vs.map((v) => `${n}: ${v}`))
    .join('\r\n');
  return `HTTP/1.1 ${r.status} (${o.ms} ms)\r\n${head}\r\n\r\n${printable(r.body, 1500)}${r.truncated ? ' …(stream cut by the fuzzer)' : ''}`;
}

/** Values from parsed JSON as text, whatever their type (`String()` throws on some objects). */
function text(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? 'undefined');
}

function count(table: Record<string, number>, key: string): void {
  table[key] = (table[key] ?? 0) + 1;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------------------
// The run: explore, check the end-of-run properties, shrink each distinct violation.

export async function runEdgeFuzz(h: Harness, opts: FuzzOptions): Promise<FuzzReport> {
  const started = performance.now();
  stats.statuses = {};
  stats.codes = {};
  stats.messages = {};
  stats.coverage = {};
  refusedMarkers.clear();
  const found = new Map<string, FoundViolation>();
  const warmKb: Partial<Record<Target, number>> = {};
  const warmHeapKb: Partial<Record<Target, number>> = {};
  const leftovers: Partial<Record<Target, Record<string, number>>> = {};
  let index = -1;
  const arb = caseArb();
  /** Replay mode: the last failing execution is the shrunk counterexample. */
  let lastFailing: CaseResult | undefined;
  let replaySignatures: Set<string> | undefined;
  const record = (r: CaseResult, path: string): void => {
    for (const v of r.violations) {
      const f = found.get(v.signature);
      if (f) {
        f.count++;
        // A few more occurrences: if the first depended on earlier cases, a later one may replay alone.
        if (f.otherPaths.length < 6 && /^\d+$/.test(path)) f.otherPaths.push(path);
      } else {
        const otherPaths = v.earlierCase !== undefined && opts.path === undefined ? [String(v.earlierCase)] : [];
        found.set(v.signature, { signature: v.signature, detail: v.detail, count: 1, path, otherPaths, example: { plan: r.plan, request: r.request, response: r.response } });
        opts.progress?.(`violation ${v.signature} at case ${path}: ${v.detail.slice(0, 200)}`);
      }
    }
  };

  // The corpus first: each defect found so far, as its shrunk plan, so that no run forgets one. Case
  // numbers below -1 keep these apart from fast-check's paths.
  if (opts.path === undefined) {
    settleLogs = true;
    for (const [i, entry] of CORPUS.entries()) record(await runCase(h, entry.plan, -2 - i), `corpus ${i}`);
    settleLogs = false;
  }

  settleLogs = opts.path !== undefined;
  /** Set when the harness itself broke (gateways that keep crashing): the remaining cases are skipped. */
  let aborted = false;
  const explore = await fc.check(
    fc.asyncProperty(arb, async (plan) => {
      if (aborted) return true;
      index++;
      if (index === Math.min(opts.warmup, opts.runs - 1)) {
        for (const t of TARGETS) {
          warmKb[t] = h.gateways[t].rssKb();
          warmHeapKb[t] = (await h.gateways[t].scrape())?.heapUsedKb ?? 0;
        }
      }
      let r: CaseResult;
      try {
        r = await runCase(h, plan, index);
      } catch (err) {
        // A fault of the fuzzer itself is reported like a violation, so it gets fixed too.
        aborted = err instanceof HarnessAbort;
        record({ violations: [{ signature: aborted ? 'harness-aborted' : `harness-error:${(err as Error).message}`, detail: String((err as Error).stack ?? err) }], request: '', response: '', plan }, String(index));
        return true;
      }
      if (opts.path === undefined || index === 0) record(r, opts.path ?? String(index));
      replaySignatures ??= new Set(r.violations.map((v) => v.signature));
      const failing = r.violations.some((v) => replaySignatures!.has(v.signature));
      if (failing) lastFailing = r;
      if (opts.progress && index > 0 && index % 1000 === 0) opts.progress(`${index} cases, ${Math.round((performance.now() - started) / 1000)} s, RSS ${TARGETS.map((t) => `${t} ${Math.round(h.gateways[t].rssKb() / 1024)} MB`).join(', ')}`);
      // Collected, not failed: one run finds every distinct violation, and each is shrunk below.
      return opts.path === undefined || !failing;
    }),
    { seed: opts.seed, numRuns: opts.path === undefined ? opts.runs : 1, ...(opts.path !== undefined ? { path: opts.path } : {}), plugins: [fc.interruptAfterTimeLimit(opts.timeLimitMs)] },
  );
  const casesRun = opts.path === undefined ? index + 1 : 1;
  if (opts.path !== undefined && explore.failed && lastFailing) {
    for (const f of found.values()) {
      const v = lastFailing.violations.find((x) => x.signature === f.signature) ?? lastFailing.violations[0]!;
      f.shrunk = { path: explore.counterexamplePath ?? opts.path, plan: lastFailing.plan, request: lastFailing.request, response: lastFailing.response, detail: v.detail, numShrinks: explore.numShrinks, interrupted: explore.interrupted };
    }
  }
  // Let anything forwarded late arrive before the end-of-run checks.
  await sleep(200);

  for (const [marker, r] of refusedMarkers) {
    const seen = findMarker(h, marker);
    if (seen !== undefined && seen !== r.status) record({ violations: [{ signature: `refused-but-forwarded-late:${r.signatureBase}`, detail: `case ${r.caseNo} was refused with ${r.status}, and its request reached the upstream afterwards` }], request: '', response: '', plan: undefined as unknown as CasePlan }, String(r.caseNo));
  }
  for (const c of answeredCalls.splice(0)) {
    const logged = h.gateways[c.plan.target].requestLines.get(c.callId);
    count(stats.logged, logged === undefined ? 'none' : logged.length > 1 ? 'several' : logged[0] === c.status ? 'its status' : 'another status');
    let signature: string | undefined;
    if (logged === undefined) signature = `log-line-missing:${c.plan.target}:${c.status}`;
    else if (logged.length > 1) signature = `log-line-repeated:${c.plan.target}:${c.status}`;
    else if (logged[0] !== c.status) signature = `log-status-mismatch:${c.plan.target}:${c.status}:${text(logged[0])}`;
    if (signature !== undefined) {
      const detail = `the client got ${c.status} (call ${c.callId}); the request log has ${logged === undefined ? 'no line' : `${logged.length} line(s) with status ${logged.map(text).join(', ')}`}`;
      record({ violations: [{ signature, detail }], request: c.request, response: c.response, plan: c.plan }, String(c.caseNo));
    }
  }
  // The audit log is a hash chain (README §Audit): whatever the run did (crashes and restarts included),
  // `gatehouse audit verify` walks it whole.
  for (const t of TARGETS) {
    const verdict = await auditVerify(join(h.dir, `${t}.db`));
    if (verdict.code !== 0) record({ violations: [{ signature: `audit-chain:${t}`, detail: `gatehouse audit verify exited ${verdict.code}: ${verdict.output.slice(0, 600)}` }], request: '', response: '', plan: undefined as unknown as CasePlan }, 'end');
  }
  const records = new Map(TARGETS.map((t) => [t, auditOutcomes(join(h.dir, `${t}.db`))]));
  for (const c of auditChecks.splice(0)) {
    const target = c.plan.target;
    const found = records.get(target)!.get(c.callId);
    const fitting = found?.find((r) => AUDIT_FITS[c.seen].has(r.outcome));
    const outcomes = found?.map((r) => r.outcome).join('+');
    count(stats.audited, `${c.seen} → ${outcomes ?? 'none'}`);
    // The request line says the same in the metrics' words (README §Logs: an upstream failure is
    // upstream_error, as the audit records it failed).
    const logged = h.gateways[target].requestOutcomes.get(c.callId);
    count(stats.auditVsLog, `${outcomes ?? 'none'} / ${String(logged)}`);
    if (fitting !== undefined && logged !== undefined && !(LOG_FITS[fitting.outcome] ?? new Set()).has(String(logged))) {
      record({ violations: [{ signature: `audit-log-mismatch:${target}:${fitting.outcome}:${String(logged)}`, detail: `call ${c.callId}: audited ${fitting.outcome}, its request line says ${String(logged)}` }], request: c.request, response: c.response, plan: c.plan }, String(c.caseNo));
    }
    let signature: string | undefined;
    let detail = '';
    if (fitting === undefined) {
      signature = found === undefined ? `audit-missing:${target}:${c.seen}` : `audit-mismatch:${target}:${c.seen}:${outcomes}`;
      detail = found === undefined ? `the client got ${c.seen} (call ${c.callId}), and the audit has no record of the call` : `the client got ${c.seen} (call ${c.callId}), and the audit records ${outcomes}`;
    } else if ((c.seen === 'success' || c.seen === 'tool_error') && c.runId !== fitting.runId) {
      signature = `audit-run-id:${target}:${c.seen}`;
      detail = `the client's result carries run id ${JSON.stringify(c.runId)} (call ${c.callId}), its record ${JSON.stringify(fitting.runId)}`;
    }
    // Found at the end of the run, so not shrunk: the case's own plan is the example.
    if (signature !== undefined) record({ violations: [{ signature, detail }], request: c.request, response: c.response, plan: c.plan }, String(c.caseNo));
  }
  // The governed gateway's policy, held against what its upstream received (properties 15 to 18).
  for (const v of governedViolations(h.governedUpstream.toolCalls, stats.governed)) record({ violations: [v], request: '', response: '', plan: undefined as unknown as CasePlan }, 'end');
  for (const t of TARGETS) {
    const gw = h.gateways[t];
    if (!gw.alive()) record({ violations: [{ signature: `crash:${t}`, detail: 'gateway not running at the end' }], request: '', response: '', plan: undefined as unknown as CasePlan }, 'end');
    else if (!(await stillLists(h, gw, t))) record({ violations: [{ signature: `stops-serving:${t}`, detail: `after the run, a modern client's tools/list did not list "${EXPECTED_TOOL[t]}" in ${LIST_TRIES} tries: every answer can be a documented one while nothing works` }], request: '', response: '', plan: undefined as unknown as CasePlan }, 'end');
  }
  const rss = await Promise.all(
    TARGETS.map(async (t) => {
      const gw = h.gateways[t];
      const endKb = gw.rssKb();
      const warm = warmKb[t] ?? gw.startKb;
      const scraped = await gw.scrape();
      return { gateway: t, startKb: gw.startKb, warmKb: warm, endKb, growthKb: endKb - warm, warmHeapKb: warmHeapKb[t] ?? 0, endHeapKb: scraped?.heapUsedKb ?? 0, series: scraped?.series ?? 0 };
    }),
  );
  // Once every client has gone and the upstreams' streams have ended, no exchange may still be held.
  await sleep(STREAM_SETTLE_MS);
  for (const t of TARGETS) {
    const live = await h.gateways[t].liveObjects(LEAK_WATCH);
    if (live === undefined) continue;
    leftovers[t] = live;
    if ((live.ServerResponse ?? 0) > 0 || (live.IncomingMessage ?? 0) > 0) {
      record({ violations: [{ signature: `exchanges-outlive-clients:${t}`, detail: `after every client hung up and ${STREAM_SETTLE_MS} ms more, the ${t} gateway still holds ${Object.entries(live).map(([k, n]) => `${n} ${k}`).join(', ')} (a heap snapshot, after a full collection, kept at ${h.gateways[t].leakSnapshot})` }], request: '', response: '', plan: undefined as unknown as CasePlan }, 'end');
    }
  }
  for (const r of rss) {
    if (r.series > MAX_SERIES) {
      record({ violations: [{ signature: `metrics-series:${r.gateway}`, detail: `/metrics holds ${r.series} series after the run, over ${MAX_SERIES}: a label takes values a client chose` }], request: '', response: '', plan: undefined as unknown as CasePlan }, 'end');
    }
    if (casesRun > opts.warmup && r.growthKb > opts.rssGrowthBoundKb) {
      record({ violations: [{ signature: `memory:${r.gateway}`, detail: `RSS grew ${r.growthKb} kB after warm-up (${r.warmKb} → ${r.endKb} kB), over the ${opts.rssGrowthBoundKb} kB bound` }], request: '', response: '', plan: undefined as unknown as CasePlan }, 'end');
    }
  }

  // What the run saw, before shrinking adds its own replays to the counts.
  const merge = (pick: (gw: GatewayProcess) => Record<string, number>): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const t of TARGETS) for (const [k, n] of Object.entries(pick(h.gateways[t]))) out[k] = (out[k] ?? 0) + n;
    return out;
  };
  const counted = { statuses: { ...stats.statuses }, codes: { ...stats.codes }, messages: { ...stats.messages }, coverage: { ...stats.coverage }, audited: { ...stats.audited }, logged: { ...stats.logged }, auditVsLog: { ...stats.auditVsLog }, governed: { ...stats.governed }, reasons: merge((g) => g.reasons), errorLogs: merge((g) => g.errorLogs) };
  const upstreamRequests = h.upstreams.reduce((n, u) => n + u.requests, 0);
  const exploreMs = Math.round(performance.now() - started);

  // Shrinking replays one case by its path and keeps the smallest plan that still shows the signature.
  const shrinkStarted = performance.now();
  settleLogs = true;
  if (opts.path === undefined) {
    let shrunkCount = 0;
    for (const f of found.values()) {
      // The audit and log properties are checked at the end of a run, never by one case's replay: not shrunk.
      if (!/^\d+$/.test(f.path) || /^(audit|log-line|log-status)-/.test(f.signature) || shrunkCount >= opts.maxShrinks) continue;
      shrunkCount++;
      const budget = Math.max(5_000, opts.shrinkTimeLimitMs / Math.max(1, Math.min(found.size, opts.maxShrinks)));
      for (const path of [f.path, ...f.otherPaths]) {
        const left = opts.shrinkTimeLimitMs - (performance.now() - shrinkStarted);
        if (left < 1_000) break;
        let last: CaseResult | undefined;
        const result = await fc.check(
          fc.asyncProperty(arb, async (plan) => {
            const r = await runCase(h, plan, ++index).catch(() => undefined);
            if (r === undefined || !r.violations.some((v) => v.signature === f.signature)) return true;
            last = r;
            return false;
          }),
          { seed: opts.seed, path, numRuns: 1, plugins: [fc.interruptAfterTimeLimit(Math.min(left, budget))] },
        );
        if (!result.failed || last === undefined) continue;
        const v = last.violations.find((x) => x.signature === f.signature)!;
        f.shrunk = { path: result.counterexamplePath ?? path, plan: last.plan, request: last.request, response: last.response, detail: v.detail, numShrinks: result.numShrinks, interrupted: result.interrupted };
        break;
      }
      if (!f.shrunk) f.notReproduced = true;
    }
  }
  settleLogs = false;

  return {
    seed: opts.seed,
    casesRun,
    runsRequested: opts.path === undefined ? opts.runs : 1,
    interrupted: explore.interrupted,
    durationMs: exploreMs,
    shrinkMs: Math.round(performance.now() - started) - exploreMs,
    ...counted,
    rss,
    rssGrowthBoundKb: opts.rssGrowthBoundKb,
    leftovers,
    upstreamRequests,
    violations: [...found.values()],
  };
}

/** Run settings from the environment, with the given defaults (FUZZ_RUNS, FUZZ_SEED, FUZZ_PATH, …). */
export function optionsFromEnv(defaults: { runs: number; seed: number; timeLimitMs: number; shrinkTimeLimitMs: number }): FuzzOptions {
  const num = (name: string, d: number): number => {
    const v = process.env[name];
    if (v === undefined || v === '') return d;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got ${v}`);
    return n;
  };
  const runs = num('FUZZ_RUNS', defaults.runs);
  return {
    runs,
    seed: num('FUZZ_SEED', defaults.seed),
    timeLimitMs: num('FUZZ_TIME_LIMIT_MS', defaults.timeLimitMs),
    shrinkTimeLimitMs: num('FUZZ_SHRINK_TIME_LIMIT_MS', defaults.shrinkTimeLimitMs),
    maxShrinks: num('FUZZ_MAX_SHRINKS', 12),
    ...(process.env.FUZZ_PATH ? { path: process.env.FUZZ_PATH } : {}),
    warmup: Math.min(10_000, Math.max(100, Math.floor(runs / 10))),
    rssGrowthBoundKb: num('FUZZ_RSS_BOUND_KB', RSS_GROWTH_BOUND_KB),
  };
}

/**
 * RSS growth allowed per gateway after warm-up. Every table a client can fill is capped (sessions at
 * 4 × sessions.max live plus 10,000 ended, failed-auth windows, parked calls, list caches), so what is left
 * is V8 settling its heap: a fixed amount, whatever the run's length. 64 MB is a few times what the caps can
 * hold in the worst case here and well under what a per-request leak reaches over thousands of cases.
 */
/**
 * How far apart a call's admission at the gateway and its arrival at the upstream may be: the limits are
 * judged when a stage takes a token or spends, the upstream's clock reads the arrival. In between, a
 * bridged call may first open a legacy session upstream (an initialize that may meet a slow fault and the
 * connect and header timeouts), so this is a second, not a few milliseconds.
 */
const ARRIVAL_SLACK_MS = 1_000;

/**
 * The governed gateway's promises, read off what its upstream received (README §Policy, §Audit and
 * idempotent writes). A call the upstream answered 4xx did not run (an unknown session, a refused
 * credential): a gateway may send it again under the same admission, so only the others count.
 */
function governedViolations(calls: readonly ReceivedCall[], seen: Record<string, number>): Violation[] {
  const out: Violation[] = [];
  const ran = calls.filter((c) => c.status === undefined || c.status < 400 || c.status >= 500);
  for (const c of calls) count(seen, `tools/call ${typeof c.name === 'string' && ['echo', 'add', 'fault'].includes(c.name) ? c.name : 'unlisted'}${c.status !== undefined && c.status >= 400 && c.status < 500 ? ` (answered ${c.status})` : ''}`);

  // 15. Egress: no call naming a blocked destination reaches the upstream, whatever its tool (an unlisted
  // name the upstream answers itself included) or its client's era.
  for (const c of calls) {
    const found = EGRESS_DENIED.find((u) => stringsIn(c.arguments).some((s) => s.includes(u)));
    if (found !== undefined) out.push({ signature: `egress-forwarded:${found}`, detail: `the upstream received tools/call ${JSON.stringify(c.name)} with arguments naming ${found}, which rule fuzz-egress blocks: ${JSON.stringify(c.arguments).slice(0, 300)}` });
  }

  // 16. Rate limit: a token bucket admits at most burst + rate × t in any t (README §Policy: rate limits
  // count every try, so what runs is fewer still).
  const adds = ran.filter((c) => c.name === 'add').map((c) => c.at).sort((a, b) => a - b);
  for (const windowMs of [1_000, 10_000]) {
    const bound = Math.floor(ADD_RATE.burst + (ADD_RATE.rate * (windowMs + ARRIVAL_SLACK_MS)) / (ADD_RATE.perSeconds * 1000));
    let most = 0;
    for (let i = 0, j = 0; i < adds.length; i++) {
      while (adds[i]! - adds[j]! > windowMs) j++;
      most = Math.max(most, i - j + 1);
    }
    count(seen, `add calls in the busiest ${windowMs / 1000} s: ${most} (bound ${bound})`);
    if (most > bound) out.push({ signature: `rate-limit-exceeded:${windowMs}ms`, detail: `the upstream ran ${most} calls of "add" within ${windowMs} ms; rule fuzz-add-rate (${JSON.stringify(ADD_RATE)}) admits at most ${bound}` });
  }

  // 17. Budget: at most `limit` calls of "echo" run in a UTC minute (a call spent in the minute before may
  // arrive in the first seconds of the next, so those are left out of its count).
  const perMinute = new Map<number, number>();
  for (const c of ran) {
    if (c.name !== 'echo' || c.at % 60_000 < ARRIVAL_SLACK_MS) continue;
    const minute = Math.floor(c.at / 60_000);
    perMinute.set(minute, (perMinute.get(minute) ?? 0) + 1);
  }
  const busiest = Math.max(0, ...perMinute.values());
  count(seen, `echo calls in the busiest minute: ${busiest} (limit ${ECHO_BUDGET_PER_MINUTE})`);
  if (busiest > ECHO_BUDGET_PER_MINUTE) {
    const minute = [...perMinute].find(([, n]) => n === busiest)![0];
    const which = ran.filter((c) => c.name === 'echo' && Math.floor(c.at / 60_000) === minute).map((c) => `${new Date(c.at).toISOString()} ${c.markers.join(',')} ${c.status ?? 'unfinished'}`);
    out.push({ signature: 'budget-exceeded', detail: `the upstream ran ${busiest} calls of "echo" in one UTC minute; budget fuzz-echo-minute allows ${ECHO_BUDGET_PER_MINUTE}: ${which.join('; ')}` });
  }

  // 18. Idempotency: a key runs its write at most once (README: a replay, a conflict, a wait for the first,
  // or outcome_unknown; never a second run). Each key names its caller, so one key is one caller's.
  const byKey = new Map<string, number>();
  for (const c of ran) if (c.name === 'add' && typeof c.idempotencyKey === 'string') byKey.set(c.idempotencyKey, (byKey.get(c.idempotencyKey) ?? 0) + 1);
  count(seen, `idempotency keys run once: ${[...byKey.values()].filter((n) => n === 1).length}`);
  for (const [key, n] of byKey) if (n > 1) out.push({ signature: 'idempotent-write-ran-twice', detail: `the upstream ran "add" ${n} times under the idempotency key ${key}` });
  return out;
}

/** Every string in a JSON value, however deep. */
function stringsIn(v: unknown, out: string[] = [], depth = 0): string[] {
  if (typeof v === 'string') out.push(v);
  else if (v !== null && typeof v === 'object' && depth < 64) for (const x of Object.values(v)) stringsIn(x, out, depth + 1);
  return out;
}

export const RSS_GROWTH_BOUND_KB = 64 * 1024;

/**
 * Series on /metrics at most. Every label takes values from a fixed set (known methods, eras, upstreams,
 * outcomes, listed tools, else `other`), which gives a few hundred series here; a label fed a client-chosen
 * string grows by one series per distinct value and crosses this within a long run.
 */
const MAX_SERIES = 5_000;

/** Objects that belong to one client exchange (node:http's request and response, undici's upstream request). */
const LEAK_WATCH = ['ServerResponse', 'IncomingMessage', 'Request'] as const;
/** Longer than the upstreams hold a stream (3 s), so every stream has ended before the count. */
const STREAM_SETTLE_MS = 4_000;

export function formatReport(r: FuzzReport): string {
  const lines: string[] = [];
  const sorted = (t: Record<string, number>): string =>
    Object.entries(t)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ');
  lines.push(`edge fuzz: ${r.casesRun} cases (of ${r.runsRequested}${r.interrupted ? ', stopped by the time limit' : ''}), seed ${r.seed}, ${(r.durationMs / 1000).toFixed(1)} s (then ${(r.shrinkMs / 1000).toFixed(1)} s shrinking), ${r.upstreamRequests} requests reached the upstreams`);
  lines.push(`statuses: ${sorted(r.statuses)}`);
  lines.push(`JSON-RPC errors (status code [data.code]): ${sorted(r.codes)}`);
  lines.push(`refusal reasons logged: ${sorted(r.reasons)}`);
  lines.push(`tools/call answers against their audit records (what the client got → recorded): ${sorted(r.audited)}`);
  lines.push(`answers against their request log lines: ${sorted(r.logged)}`);
  lines.push(`audited calls, audit outcome / request line outcome: ${sorted(r.auditVsLog)}`);
  lines.push(`the governed upstream received: ${sorted(r.governed)}`);
  lines.push('most frequent error messages:', ...Object.entries(r.messages).sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, n]) => `  ${n} × ${k}`));
  if (process.env.FUZZ_COVERAGE) lines.push('answers by gateway, client era, method and status:', ...Object.entries(r.coverage).sort().map(([k, n]) => `  ${k}: ${n}`));
  if (Object.keys(r.errorLogs).length > 0) lines.push(`error-level log lines: ${sorted(r.errorLogs)}`);
  for (const m of r.rss) lines.push(`RSS ${m.gateway}: start ${kb(m.startKb)}, after warm-up ${kb(m.warmKb)}, end ${kb(m.endKb)} (growth ${kb(m.growthKb)}, bound ${kb(r.rssGrowthBoundKb)}); V8 heap used ${kb(m.warmHeapKb)} → ${kb(m.endHeapKb)}; ${m.series} metric series`);
  for (const [t, live] of Object.entries(r.leftovers)) lines.push(`left at the end in ${t}: ${Object.entries(live).map(([k, n]) => `${n} ${k}`).join(', ')}`);
  if (r.violations.length === 0) lines.push('violations: none');
  for (const v of r.violations) {
    lines.push('', `VIOLATION ${v.signature} (${v.count} case${v.count === 1 ? '' : 's'}; first at path ${v.path})`, `  ${v.detail.slice(0, 1500)}`);
    const s = v.shrunk;
    if (s) {
      lines.push(`  shrunk in ${s.numShrinks} steps${s.interrupted ? ' (interrupted by the time limit)' : ''}; replay: FUZZ_SEED=${r.seed} FUZZ_PATH=${s.path} npm run fuzz`);
      lines.push(`  counterexample: ${JSON.stringify(s.plan)}`);
      lines.push('  request:', indent(s.request), '  answer:', indent(s.response));
    } else if (v.path.startsWith('corpus ')) {
      const entry = CORPUS[Number(v.path.slice(7))]!;
      lines.push(`  known defect (test/fuzz/corpus.json): ${entry.why}`, `  replay: FUZZ_PLAN='${JSON.stringify(entry.plan)}' npm run fuzz`);
      lines.push('  request:', indent(v.example.request), '  answer:', indent(v.example.response));
    } else {
      if (v.notReproduced) lines.push('  (not reproduced when replayed alone: depends on earlier cases or timing)');
      if (v.example.plan) {
        lines.push(`  replay: FUZZ_SEED=${r.seed} FUZZ_PATH=${v.path} npm run fuzz`);
        lines.push(`  case: ${JSON.stringify(v.example.plan)}`, '  request:', indent(v.example.request), '  answer:', indent(v.example.response));
      }
    }
  }
  return lines.join('\n');
}

function kb(n: number): string {
  return `${(n / 1024).toFixed(1)} MB`;
}

function indent(s: string): string {
  return s
    .split(/\r?\n/)
    .map((l) => `    ${l}`)
    .join('\n');
}

export type { GatewayProcess };
