// The load generator: runs inside the bench process. One undici Pool per target and cell with
// `connections = concurrency`, `concurrency` workers sending `tools/call` back to back, a warm-up phase
// that is not measured, then a measured phase bounded by both a request count and a time limit. Every
// answer is checked (HTTP 200 and the expected JSON-RPC result, from JSON or from an SSE event).

import { Pool } from 'undici';
import { ECHO_TEXT, LEGACY_VERSION, MODERN_VERSION, TOOL_NAME, type Era } from './common.js';

export interface PhaseLimits {
  seconds: number;
  maxRequests: number;
}

export interface LoadOptions {
  url: string;
  era: Era;
  concurrency: number;
  warmup: PhaseLimits;
  measure: PhaseLimits;
  /** A phase stops early once this many requests have failed. */
  maxErrors: number;
  /** Sent as the Authorization header of every request (the governed target authenticates with an API key). */
  authorization?: string;
  /** Called right before the measured phase starts and right after it ends (CPU/RSS snapshots). */
  onMeasureStart?: () => void;
  onMeasureEnd?: () => void;
  /**
   * Read and steered while the measured phase runs: `calls` counts its correct answers as they come, and
   * setting `stop` ends it after the calls in flight (bench/log-toggle.ts samples a long phase in slices).
   */
  control?: LoadControl;
}

export interface LoadControl {
  calls: number;
  stop: boolean;
}

export interface LoadResult {
  /** Successful, verified requests in the measured phase. */
  requests: number;
  /** Failed requests in the measured phase (status, body or transport). */
  errors: number;
  /** Wall time of the measured phase, seconds. */
  elapsedS: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
  warmupRequests: number;
  warmupErrors: number;
  /** Why the measured phase ended: time, count, errors. */
  stoppedBy: 'time' | 'count' | 'errors' | 'setup';
  /** A few distinct error descriptions. */
  errorSamples: string[];
  setupError?: string;
  sessionId?: string;
}

const ACCEPT = 'application/json, text/event-stream';
const MAX_ERROR_SAMPLES = 5;
const CLIENT_INFO = { name: 'gatehouse-bench', version: '0.0.0' };

interface Ctx {
  pool: Pool;
  path: string;
  headers: Record<string, string>;
  bodyPrefix: string;
  bodySuffix: string;
  nextId: number;
  errorSamples: string[];
}

function addSample(ctx: Ctx, s: string): void {
  if (ctx.errorSamples.length < MAX_ERROR_SAMPLES && !ctx.errorSamples.includes(s)) ctx.errorSamples.push(s);
}

interface RpcMessage {
  id?: unknown;
  result?: { content?: Array<{ type?: unknown; text?: unknown }>; isError?: unknown; resultType?: unknown; protocolVersion?: unknown };
  error?: { code?: unknown; message?: unknown };
}

/** Finds the JSON-RPC response with `id` in a JSON body or in the `data:` events of an SSE body. */
export function parseRpcResponse(text: string, contentType: string, id: number): RpcMessage | string {
  if (contentType.startsWith('application/json')) {
    try {
      return JSON.parse(text) as RpcMessage;
    } catch {
      return `unparseable JSON body: ${text.slice(0, 120)}`;
    }
  }
  if (contentType.startsWith('text/event-stream')) {
    let data: string[] = [];
    const lines = text.split(/\r\n|\r|\n/);
    lines.push('');
    for (const line of lines) {
      if (line === '') {
        if (data.length > 0) {
          try {
            const msg = JSON.parse(data.join('\n')) as RpcMessage;
            if (msg.id === id) return msg;
          } catch {
            return `unparseable SSE event: ${data.join('\n').slice(0, 120)}`;
          }
          data = [];
        }
      } else if (line.startsWith('data:')) {
        data.push(line.slice(line[5] === ' ' ? 6 : 5));
      }
    }
    return `no response with id ${id} in the SSE stream`;
  }
  return `unexpected content-type "${contentType}"`;
}

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** One `tools/call`; resolves null when the answer is correct, or a description of what was wrong. */
async function callOnce(ctx: Ctx, id: number): Promise<string | null> {
  try {
    const { statusCode, headers, body } = await ctx.pool.request({
      path: ctx.path,
      method: 'POST',
      headers: ctx.headers,
      body: ctx.bodyPrefix + id + ctx.bodySuffix,
    });
    const text = await body.text();
    if (statusCode !== 200) return `HTTP ${statusCode}: ${text.slice(0, 160)}`;
    const msg = parseRpcResponse(text, header(headers['content-type']) ?? '', id);
    if (typeof msg === 'string') return msg;
    if (msg.id !== id) return `wrong id ${JSON.stringify(msg.id)} (expected ${id})`;
    if (msg.error !== undefined) return `JSON-RPC error ${String(msg.error.code)}: ${String(msg.error.message)}`;
    const first = msg.result?.content?.[0];
    if (msg.result?.isError === true || first?.type !== 'text' || first.text !== ECHO_TEXT) return `unexpected result: ${text.slice(0, 160)}`;
    return null;
  } catch (err) {
    return `request failed: ${(err as Error).message}`;
  }
}

interface PhaseResult {
  ok: number;
  errors: number;
  elapsedS: number;
  stoppedBy: 'time' | 'count' | 'errors';
}

async function runPhase(ctx: Ctx, concurrency: number, limits: PhaseLimits, maxErrors: number, latenciesUs: Float64Array | null, control?: LoadControl): Promise<PhaseResult> {
  let issued = 0;
  let ok = 0;
  let errors = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(limits.seconds * 1e9));
  let last = start;
  const worker = async (): Promise<void> => {
    // Bounded by count, time and errors: each iteration claims one of `maxRequests` slots.
    while (issued < limits.maxRequests && errors < maxErrors && control?.stop !== true && process.hrtime.bigint() < deadline) {
      issued++;
      const id = ctx.nextId++;
      const t0 = process.hrtime.bigint();
      const problem = await callOnce(ctx, id);
      const t1 = process.hrtime.bigint();
      last = t1;
      if (problem === null) {
        if (latenciesUs !== null && ok < latenciesUs.length) latenciesUs[ok] = Number(t1 - t0) / 1000;
        ok++;
        if (control !== undefined) control.calls++;
      } else {
        errors++;
        addSample(ctx, problem);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const stoppedBy = errors >= maxErrors ? 'errors' : issued >= limits.maxRequests ? 'count' : 'time';
  return { ok, errors, elapsedS: Number(last - start) / 1e9, stoppedBy };
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

function buildRequestShape(era: Era, sessionId: string | undefined, authorization: string | undefined): Pick<Ctx, 'headers' | 'bodyPrefix' | 'bodySuffix'> {
  const shape = requestShape(era, sessionId);
  if (authorization !== undefined) shape.headers.authorization = authorization;
  return shape;
}

function requestShape(era: Era, sessionId: string | undefined): Pick<Ctx, 'headers' | 'bodyPrefix' | 'bodySuffix'> {
  const args = { text: ECHO_TEXT };
  if (era === 'legacy') {
    return {
      headers: {
        'content-type': 'application/json',
        accept: ACCEPT,
        'mcp-protocol-version': LEGACY_VERSION,
        ...(sessionId !== undefined ? { 'mcp-session-id': sessionId } : {}),
      },
      bodyPrefix: '{"jsonrpc":"2.0","id":',
      bodySuffix: `,"method":"tools/call","params":${JSON.stringify({ name: TOOL_NAME, arguments: args })}}`,
    };
  }
  const params = {
    name: TOOL_NAME,
    arguments: args,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
      'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  };
  return {
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-protocol-version': MODERN_VERSION,
      'mcp-method': 'tools/call',
      'mcp-name': TOOL_NAME,
    },
    bodyPrefix: '{"jsonrpc":"2.0","id":',
    bodySuffix: `,"method":"tools/call","params":${JSON.stringify(params)}}`,
  };
}

/** Legacy handshake: `initialize`, read `mcp-session-id`, then `notifications/initialized`. */
async function openLegacySession(pool: Pool, path: string, authorization?: string): Promise<string> {
  const auth = authorization !== undefined ? { authorization } : {};
  const init = await pool.request({
    path,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, ...auth },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: CLIENT_INFO } }),
  });
  const text = await init.body.text();
  if (init.statusCode !== 200) throw new Error(`initialize: HTTP ${init.statusCode}: ${text.slice(0, 200)}`);
  const msg = parseRpcResponse(text, header(init.headers['content-type']) ?? '', 0);
  if (typeof msg === 'string') throw new Error(`initialize: ${msg}`);
  if (msg.result?.protocolVersion !== LEGACY_VERSION) throw new Error(`initialize: unexpected answer ${text.slice(0, 200)}`);
  const sessionId = header(init.headers['mcp-session-id']);
  if (sessionId === undefined) throw new Error('initialize: no mcp-session-id header in the answer');
  const note = await pool.request({
    path,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, 'mcp-session-id': sessionId, 'mcp-protocol-version': LEGACY_VERSION, ...auth },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  const noteText = await note.body.text();
  if (note.statusCode !== 202) throw new Error(`notifications/initialized: HTTP ${note.statusCode} (expected 202): ${noteText.slice(0, 200)}`);
  return sessionId;
}

async function closeLegacySession(pool: Pool, path: string, sessionId: string, authorization?: string): Promise<void> {
  try {
    const res = await pool.request({
      path,
      method: 'DELETE',
      headers: { 'mcp-session-id': sessionId, 'mcp-protocol-version': LEGACY_VERSION, ...(authorization !== undefined ? { authorization } : {}) },
      signal: AbortSignal.timeout(3000),
    });
    await res.body.dump();
  } catch {
    // best effort: the upstream is stopped after the run anyway
  }
}

async function closePool(pool: Pool): Promise<void> {
  const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 3000).unref());
  const closed = await Promise.race([pool.close().then(() => 'closed' as const), timer]);
  if (closed === 'timeout') await pool.destroy();
}

function newPool(origin: string, concurrency: number): Pool {
  return new Pool(origin, {
    connections: concurrency,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
}

/**
 * Warms a freshly started process (JIT, connection pools) before its first cell, so that the first
 * concurrency measured is not also the coldest. Resolves with the number of failed requests.
 */
export async function warmUpProcess(url: string, era: Era, concurrency: number, limits: PhaseLimits, authorization?: string): Promise<{ ok: number; errors: number; samples: string[] }> {
  const u = new URL(url);
  const pool = newPool(u.origin, concurrency);
  const path = u.pathname + u.search;
  let sessionId: string | undefined;
  try {
    if (era === 'legacy') sessionId = await openLegacySession(pool, path, authorization);
    const ctx: Ctx = { pool, path, ...buildRequestShape(era, sessionId, authorization), nextId: 1, errorSamples: [] };
    const r = await runPhase(ctx, concurrency, limits, 50, null);
    return { ok: r.ok, errors: r.errors, samples: ctx.errorSamples };
  } catch (err) {
    return { ok: 0, errors: 1, samples: [(err as Error).message] };
  } finally {
    if (sessionId !== undefined) await closeLegacySession(pool, path, sessionId, authorization);
    await closePool(pool);
  }
}

/** Runs one cell against one target: optional legacy handshake, warm-up, measured phase. */
export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const url = new URL(opts.url);
  const pool = newPool(url.origin, opts.concurrency);
  const path = url.pathname + url.search;
  const empty: LoadResult = {
    requests: 0,
    errors: 0,
    elapsedS: 0,
    rps: 0,
    p50Ms: NaN,
    p90Ms: NaN,
    p99Ms: NaN,
    maxMs: NaN,
    meanMs: NaN,
    warmupRequests: 0,
    warmupErrors: 0,
    stoppedBy: 'setup',
    errorSamples: [],
  };
  let sessionId: string | undefined;
  try {
    if (opts.era === 'legacy') {
      try {
        sessionId = await openLegacySession(pool, path, opts.authorization);
      } catch (err) {
        return { ...empty, errors: 1, setupError: (err as Error).message, errorSamples: [(err as Error).message] };
      }
    }
    const ctx: Ctx = { pool, path, ...buildRequestShape(opts.era, sessionId, opts.authorization), nextId: 1, errorSamples: [] };
    const warm = await runPhase(ctx, opts.concurrency, opts.warmup, opts.maxErrors, null);
    const latencies = new Float64Array(opts.measure.maxRequests);
    opts.onMeasureStart?.();
    const measured = await runPhase(ctx, opts.concurrency, opts.measure, opts.maxErrors, latencies, opts.control);
    opts.onMeasureEnd?.();
    const sorted = latencies.subarray(0, measured.ok).sort();
    let sum = 0;
    for (let i = 0; i < sorted.length; i++) sum += sorted[i]!;
    return {
      requests: measured.ok,
      errors: measured.errors,
      elapsedS: measured.elapsedS,
      rps: measured.elapsedS > 0 ? measured.ok / measured.elapsedS : 0,
      p50Ms: percentile(sorted, 0.5) / 1000,
      p90Ms: percentile(sorted, 0.9) / 1000,
      p99Ms: percentile(sorted, 0.99) / 1000,
      maxMs: sorted.length > 0 ? sorted[sorted.length - 1]! / 1000 : NaN,
      meanMs: sorted.length > 0 ? sum / sorted.length / 1000 : NaN,
      warmupRequests: warm.ok,
      warmupErrors: warm.errors,
      stoppedBy: warm.stoppedBy === 'errors' ? 'errors' : measured.stoppedBy,
      errorSamples: ctx.errorSamples,
      ...(sessionId !== undefined ? { sessionId } : {}),
    };
  } finally {
    if (sessionId !== undefined) await closeLegacySession(pool, path, sessionId, opts.authorization);
    await closePool(pool);
  }
}
