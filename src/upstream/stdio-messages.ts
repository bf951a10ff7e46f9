// A stdio server seen through the same message-level interface as an HTTP upstream, so the era probe and
// both bridges work unchanged in front of it. A legacy `initialize` starts a child process of its own (a
// stdio server is one session by construction) and gets a session id; requests without a session go to one
// shared process, used for stateless modern traffic and for the discover probe
// (2026-07-28/basic/transports/stdio.mdx §Backward Compatibility: probe with server/discover).

import { randomUUID } from 'node:crypto';
import type { StdioUpstreamConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../protocol/jsonrpc.js';
import type { UpstreamMessages, UpstreamReply } from './message-client.js';
import { StdioProcess } from './stdio-process.js';

/** A legacy server may never answer server/discover; the probe stops waiting after this. */
const DISCOVER_PROBE_TIMEOUT_MS = 5_000;

/** Where a process's messages go: the calls in flight (newest first), else its listen streams. */
class Router {
  readonly calls: Array<{ id: JsonRpcId; push(m: JsonRpcMessage): void }> = [];
  readonly listeners = new Set<(m: JsonRpcMessage) => void>();

  route(msg: JsonRpcMessage): void {
    const call = this.calls.at(-1);
    if (call) return call.push(msg);
    for (const l of this.listeners) l(msg);
  }
}

interface Managed {
  proc: StdioProcess;
  router: Router;
}

export class StdioMessages implements UpstreamMessages {
  readonly upstream: string;
  private readonly sessions = new Map<string, Managed>();
  private shared?: Promise<Managed>;

  constructor(private readonly config: StdioUpstreamConfig, private readonly log: Logger) {
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
      managed.proc.onExit = () => this.sessions.delete(id);
      replyHeaders['mcp-session-id'] = id;
    } else {
      managed = await (this.shared ??= this.start().then((m) => {
        m.proc.onExit = () => (this.shared = undefined);
        return m;
      }));
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

  private async start(): Promise<Managed> {
    const proc = new StdioProcess(
      { upstream: this.config.name, command: this.config.command, env: this.config.env, cwd: this.config.cwd, requestTimeoutMs: this.config.timeouts.requestMs },
      this.log,
    );
    const router = new Router();
    proc.onMessage = (m) => router.route(m);
    await proc.start();
    return { proc, router };
  }

  /** Yields what the process sends while this request is in flight, then its response. */
  private call(managed: Managed, request: JsonRpcRequest, signal?: AbortSignal, probeTimeout?: AbortSignal): AsyncGenerator<JsonRpcMessage, void, void> {
    const abort = signal && probeTimeout ? AbortSignal.any([signal, probeTimeout]) : (signal ?? probeTimeout);
    return queue(abort, (push, finish, fail) => {
      const entry = { id: request.id, push };
      managed.router.calls.push(entry);
      const release = (): void => {
        const i = managed.router.calls.indexOf(entry);
        if (i !== -1) managed.router.calls.splice(i, 1);
      };
      managed.proc.request(request, abort).then(
        (res: JsonRpcResponse) => {
          release();
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
