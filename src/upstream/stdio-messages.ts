// A stdio server seen through the same message-level interface as an HTTP upstream, so the era probe and
// both bridges work unchanged in front of it. A legacy `initialize` starts a child process of its own (a
// stdio server is one session by construction) and gets a session id; requests without a session go to one
// shared process, used for stateless modern traffic and for the discover probe
// (2026-07-28/basic/transports/stdio.mdx §Backward Compatibility: probe with server/discover).
//
// The legacy sessions here belong to the bridges, which multiplex many clients onto each one. Two rules
// follow. A stdio server's request to its client carries no link to the call it belongs to, so it is
// delivered only when exactly one call is in flight; otherwise it is refused, never guessed, since the
// wrong guess would show one caller's elicitation to another. And a child that dies on its own is
// replaced on the next call, after an exponential backoff (`restart`), with readiness false meanwhile.

import { randomUUID } from 'node:crypto';
import type { StdioUpstreamConfig } from '../config/types.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../protocol/jsonrpc.js';
import type { UpstreamMessages, UpstreamReply } from '../pipeline/ports.js';
import { StdioProcess } from './stdio-process.js';

/** A legacy server may never answer server/discover; the probe stops waiting after this. */
const DISCOVER_PROBE_TIMEOUT_MS = 5_000;

interface CallEntry {
  id: JsonRpcId;
  /** A listen stays open for notifications only: it never owns a server request. */
  listen: boolean;
  progressToken: unknown;
  push(m: JsonRpcMessage): void;
}

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

/** Where a process's messages go: the call they belong to when that can be told, else its listen streams. */
class Router {
  readonly calls: CallEntry[] = [];
  readonly listeners = new Set<(m: JsonRpcMessage) => void>();

  constructor(private readonly refuse: (request: JsonRpcRequest, why: string) => void) {}

  route(msg: JsonRpcMessage): void {
    const m = msg as { id?: JsonRpcId; method?: string; params?: { progressToken?: unknown; _meta?: Record<string, unknown> } };
    if (m.method === 'notifications/progress') {
      const owner = this.calls.find((c) => c.progressToken !== undefined && c.progressToken === m.params?.progressToken);
      if (owner) return owner.push(msg);
    }
    // 2026-07-28 notifications on a listen stream name it (subscriptions.mdx: io.modelcontextprotocol/subscriptionId).
    const subscription = m.params?._meta?.[SUBSCRIPTION_ID];
    if (subscription !== undefined) {
      const owner = this.calls.find((c) => c.id === subscription);
      if (owner) return owner.push(msg);
    }
    const working = this.calls.filter((c) => !c.listen);
    if (m.id !== undefined && m.method !== undefined) {
      if (working.length === 1) return working[0]!.push(msg);
      if (working.length > 1) return this.refuse(msg as JsonRpcRequest, 'several calls are in flight on this server process and a stdio request does not say which one it belongs to');
    } else if (m.method !== 'notifications/progress' && this.calls.length === 1) {
      return this.calls[0]!.push(msg);
    } else if (m.method !== 'notifications/progress' && working.length === 1 && !isListenNotification(m.method)) {
      return working[0]!.push(msg);
    }
    for (const l of this.listeners) l(msg);
  }
}

/** Notifications that only ever travel on a listen stream, never with a call. */
function isListenNotification(method: string | undefined): boolean {
  return method === 'notifications/subscriptions/acknowledged' || (method !== undefined && /^notifications\/(tools|prompts|resources)\/(list_changed|updated)$/.test(method));
}

interface Managed {
  proc: StdioProcess;
  router: Router;
  /** When the child was up (epoch ms); only a child started after the last crash proves recovery. */
  startedAt: number;
  /** Called when the process is gone (its session, if any, is forgotten). */
  gone?: () => void;
}

export class StdioMessages implements UpstreamMessages {
  readonly upstream: string;
  private readonly sessions = new Map<string, Managed>();
  private shared?: Promise<Managed>;
  /** Children that died on their own (or could not start) since the last successful call. */
  private crashes = 0;
  private lastCrashAt = 0;

  constructor(
    private readonly config: StdioUpstreamConfig,
    private readonly log: Logger,
    private readonly observe?: (seconds: number) => void,
  ) {
    this.upstream = config.name;
  }

  async post(message: JsonRpcMessage, headers: Record<string, string>, signal?: AbortSignal): Promise<UpstreamReply> {
    const sessionId = headers['mcp-session-id'];
    let managed: Managed;
    const replyHeaders: Record<string, string> = {};
    if (sessionId !== undefined) {
      const found = this.sessions.get(sessionId);
      if (!found) return errorReply(404, -32001, 'Session not found');
      managed = found;
    } else if ('method' in message && message.method === 'initialize') {
      managed = await this.start();
      const id = randomUUID();
      this.sessions.set(id, managed);
      managed.gone = () => this.sessions.delete(id);
      replyHeaders['mcp-session-id'] = id;
    } else {
      const starting = (this.shared ??= this.start().then((m) => {
        m.gone = () => {
          if (this.shared === starting) this.shared = undefined;
        };
        return m;
      }));
      starting.catch(() => {
        if (this.shared === starting) this.shared = undefined;
      });
      managed = await starting;
    }
    if (!('id' in message) || !('method' in message)) {
      managed.proc.send(message); // notifications and the client's answers to server requests
      return { status: 202, headers: {}, messages: empty() };
    }
    const isProbe = message.method === 'server/discover' && sessionId === undefined;
    const timeout = isProbe ? AbortSignal.timeout(DISCOVER_PROBE_TIMEOUT_MS) : undefined;
    return { status: 200, headers: replyHeaders, messages: this.call(managed, message as JsonRpcRequest, signal, timeout) };
  }

  async openGet(headers: Record<string, string>, signal: AbortSignal): Promise<AsyncGenerator<JsonRpcMessage, void, void> | null> {
    const managed = this.sessions.get(headers['mcp-session-id'] ?? '');
    if (!managed) return null;
    return queue(signal, (push) => {
      managed.router.listeners.add(push);
      return () => managed.router.listeners.delete(push);
    });
  }

  async deleteSession(sessionId: string): Promise<void> {
    const managed = this.sessions.get(sessionId);
    this.sessions.delete(sessionId);
    await managed?.proc.stop();
  }

  /** Stops the shared process (after a legacy verdict it has nothing more to serve). */
  async releaseShared(): Promise<void> {
    const shared = this.shared;
    this.shared = undefined;
    await shared?.then((m) => m.proc.stop(), () => {});
  }

  async close(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    const shared = this.shared;
    this.shared = undefined;
    await Promise.all([...all.map((m) => m.proc.stop()), shared?.then((m) => m.proc.stop(), () => {})]);
  }

  /** False after a child died on its own, until a call succeeds again (for /readyz). */
  get healthy(): boolean {
    return this.crashes === 0;
  }

  private async start(): Promise<Managed> {
    await this.backoff();
    const proc = new StdioProcess(
      { upstream: this.config.name, command: this.config.command, env: this.config.env, cwd: this.config.cwd, requestTimeoutMs: this.config.timeouts.requestMs, ...(this.observe ? { observe: this.observe } : {}) },
      this.log,
    );
    const router = new Router((request, why) => {
      this.log.warn('stdio upstream request refused: its call cannot be told', { method: request.method, why });
      proc.send({ jsonrpc: '2.0', id: request.id, error: { code: -32603, message: `Gatehouse refused this request: ${why}` } });
    });
    const managed: Managed = { proc, router, startedAt: 0 };
    proc.onMessage = (m) => router.route(m);
    proc.onExit = (reason) => {
      if (!proc.stoppedOnPurpose) this.noteCrash(reason);
      managed.gone?.();
    };
    try {
      await proc.start();
    } catch (err) {
      this.noteCrash(String((err as Error)?.message ?? err));
      throw err;
    }
    managed.startedAt = Date.now();
    return managed;
  }

  private noteCrash(reason: string): void {
    this.crashes++;
    this.lastCrashAt = Date.now();
    this.log.warn('stdio upstream child is gone; the next call starts a new one after a backoff', { reason, crashes: this.crashes });
  }

  /**
   * Waits out the backoff after a crash: `restart.firstDelayMs`, doubling per crash in a row. Past
   * `restart.attempts` crashes in a row, calls fail at once until the longest delay has passed, so a
   * broken command is not spawned in a loop.
   */
  private async backoff(): Promise<void> {
    if (this.crashes === 0) return;
    const { attempts, firstDelayMs } = this.config.restart;
    const delay = firstDelayMs * 2 ** Math.min(this.crashes - 1, attempts);
    const wait = this.lastCrashAt + delay - Date.now();
    if (this.crashes > attempts && wait > 0) {
      throw new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream "${this.upstream}" could not be restarted after ${attempts} attempts; the next try is in ${Math.ceil(wait / 1000)} s`, this.upstream);
    }
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }

  /** Yields what the process sends while this request is in flight, then its response. */
  private call(managed: Managed, request: JsonRpcRequest, signal?: AbortSignal, probeTimeout?: AbortSignal): AsyncGenerator<JsonRpcMessage, void, void> {
    const abort = signal && probeTimeout ? AbortSignal.any([signal, probeTimeout]) : (signal ?? probeTimeout);
    return queue(abort, (push, finish, fail) => {
      const progressToken = (request.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
      const entry: CallEntry = { id: request.id, listen: request.method === 'subscriptions/listen', progressToken, push };
      managed.router.calls.push(entry);
      const release = (): void => {
        const i = managed.router.calls.indexOf(entry);
        if (i !== -1) managed.router.calls.splice(i, 1);
      };
      managed.proc.request(request, abort).then(
        (res: JsonRpcResponse) => {
          release();
          // Recovery is a working child started after the last crash, not an older sibling still answering.
          if (res.error === undefined && managed.startedAt >= this.lastCrashAt) this.crashes = 0;
          push(res);
          finish();
        },
        (err: unknown) => {
          release();
          // A probe that times out is a server without server/discover: end quietly, the probe falls back.
          if (probeTimeout?.aborted) finish();
          else fail(err);
        },
      );
      return release;
    });
  }
}

function errorReply(status: number, code: number, message: string): UpstreamReply {
  const body = { jsonrpc: '2.0' as const, id: null, error: { code, message } };
  return { status, headers: {}, errorText: JSON.stringify(body), messages: (async function* () {
    yield body as JsonRpcMessage;
  })() };
}

async function* empty(): AsyncGenerator<JsonRpcMessage, void, void> {}

/** A push-to-pull bridge: `start` wires producers, the generator yields until finished, failed or aborted. */
function queue(
  signal: AbortSignal | undefined,
  start: (push: (m: JsonRpcMessage) => void, finish: () => void, fail: (err: unknown) => void) => () => void,
): AsyncGenerator<JsonRpcMessage, void, void> {
  const items: JsonRpcMessage[] = [];
  let done = false;
  let error: unknown;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    wake?.();
    wake = undefined;
  };
  const stop = start(
    (m) => {
      items.push(m);
      notify();
    },
    () => {
      done = true;
      notify();
    },
    (err) => {
      error = err;
      done = true;
      notify();
    },
  );
  signal?.addEventListener('abort', () => {
    done = true;
    notify();
  }, { once: true });
  return (async function* () {
    try {
      for (;;) {
        while (items.length > 0) yield items.shift()!;
        if (error !== undefined) throw error;
        if (done) return;
        await new Promise<void>((r) => (wake = r));
      }
    } finally {
      stop();
    }
  })();
}
