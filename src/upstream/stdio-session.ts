// One legacy client session backed by one stdio child: forwards the client's POSTs, and routes what the
// child sends on its own (progress, logging, elicitation and sampling requests, list changes) to the
// stream that should carry it.

import type { SseWriter } from '../edge/sse-writer.js';
import { openListenStream } from '../edge/listen-stream.js';
import { GatewayError } from '../errors.js';
import { type JsonRpcId, type JsonRpcMessage, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { ResponseChannel } from './response-channel.js';
import type { StdioProcess } from './stdio-process.js';
import type { EndReason, HeldSession } from './session-table.js';
import type { Logger } from '../log/logger.js';
import type { McpExchange } from './upstream.js';

interface InFlight {
  id: JsonRpcId;
  progressToken?: string | number;
  channel: ResponseChannel;
}

/** Messages kept for a GET stream that is not open yet; the oldest go first when it overflows. */
const BACKLOG_LIMIT = 256;

export interface Respawner {
  /** Tries after a crash, the first after `firstDelayMs`, each delay doubling; then the session ends. */
  policy: { attempts: number; firstDelayMs: number };
  /** Starts and initializes a replacement child. */
  respawn(): Promise<StdioProcess>;
  /** Told whether a restart worked (readiness follows it). */
  onRestart(ok: boolean): void;
  /** Called when every attempt failed: the session is over. */
  onGiveUp(): void;
}

export class StdioSession implements HeldSession {
  lastUsed = Date.now();
  private readonly inFlight: InFlight[] = [];
  private listen?: SseWriter;
  private readonly backlog: JsonRpcMessage[] = [];
  /** Set while a crashed child is being replaced; requests wait for it. */
  private restarting?: Promise<boolean>;
  private closed = false;

  constructor(readonly id: string, private proc: StdioProcess, private readonly respawner: Respawner, private readonly log: Logger) {
    this.adopt(proc);
  }

  private adopt(proc: StdioProcess): void {
    this.proc = proc;
    proc.onMessage = (msg) => this.route(msg);
    proc.onExit = (reason) => this.crashed(reason);
  }

  /**
   * The child died on its own: the calls it had fail at once with a clear error, and a replacement is
   * started with exponential backoff (2026-07-28/basic/transports/stdio.mdx §Unexpected Termination).
   */
  private crashed(reason: string): void {
    if (this.closed) return;
    const err = new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream process ${reason}; it is being restarted`);
    for (const f of this.inFlight.splice(0)) f.channel.fail(err);
    this.respawner.onRestart(false);
    this.restarting = (async () => {
      const { attempts, firstDelayMs } = this.respawner.policy;
      for (let attempt = 0; attempt < attempts && !this.closed; attempt++) {
        await new Promise((r) => setTimeout(r, firstDelayMs * 2 ** attempt).unref());
        if (this.closed) return false;
        try {
          this.adopt(await this.respawner.respawn());
          this.respawner.onRestart(true);
          return true;
        } catch (e) {
          this.log.warn('restart of the stdio upstream failed', { attempt: attempt + 1, err: e });
        }
      }
      this.log.error('stdio upstream did not come back; the session ends');
      this.respawner.onGiveUp();
      this.closeListenStream();
      return false;
    })().finally(() => (this.restarting = undefined));
  }

  /** Waits out a restart in progress; false when the child did not come back. */
  private async alive(): Promise<boolean> {
    return this.restarting ? this.restarting : this.proc.alive;
  }

  touch(): void {
    this.lastUsed = Date.now();
  }

  isIdle(): boolean {
    return this.inFlight.length === 0 && this.listen === undefined;
  }

  async handlePost(ex: McpExchange): Promise<void> {
    if (!(await this.alive())) {
      new ResponseChannel(ex).fail(new GatewayError('GW_ERR_UPSTREAM_EXITED', 'The upstream process is down and could not be restarted'));
      return;
    }
    if (ex.kind !== 'request') {
      // Notifications and the client's answers to server requests: hand over, then 202 with no body.
      this.proc.send(ex.message!);
      ex.res.writeHead(202, { 'x-gatehouse-call-id': ex.callId }).end();
      return;
    }
    const request = ex.message as JsonRpcRequest;
    const channel = new ResponseChannel(ex);
    const entry: InFlight = { id: request.id, progressToken: progressTokenOf(request), channel };
    this.inFlight.push(entry);
    try {
      // Legacy clients' disconnects are not cancellations (2025-11-25/basic/transports.mdx §Sending
      // Messages 6), so no abort signal: the answer is dropped if nobody waits for it any more.
      channel.finish(await this.proc.request(request));
    } catch (err) {
      channel.fail(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', String(err)));
    } finally {
      this.inFlight.splice(this.inFlight.indexOf(entry), 1);
      this.touch();
    }
  }

  openListenStream(ex: McpExchange): void {
    this.closeListenStream();
    const writer = openListenStream(ex, this.id, (w) => {
      if (this.listen === w) this.closeListenStream();
    });
    this.listen = writer;
    if (writer) for (const msg of this.backlog.splice(0)) writer.send(msg);
  }


  failAll(err: GatewayError): void {
    for (const f of this.inFlight.splice(0)) f.channel.fail(err);
    this.closeListenStream();
  }

  async close(reason: EndReason): Promise<void> {
    this.closed = true;
    this.proc.onExit = () => {};
    this.failAll(new GatewayError('GW_ERR_UPSTREAM_EXITED', `Session ended (${reason})`));
    await this.proc.stop();
  }

  /** Progress goes to the request whose token it carries; anything else to the newest request still open, else the GET stream. */
  private route(msg: JsonRpcMessage): void {
    if ('method' in msg && msg.method === 'notifications/progress') {
      const token = (msg.params as { progressToken?: string | number } | undefined)?.progressToken;
      const owner = this.inFlight.find((f) => f.progressToken === token);
      if (owner && owner.channel.push(msg)) return;
    }
    for (let i = this.inFlight.length - 1; i >= 0; i--) {
      if (this.inFlight[i]!.channel.push(msg)) return;
    }
    if (this.listen?.send(msg)) return;
    if (this.backlog.length >= BACKLOG_LIMIT) this.backlog.shift();
    this.backlog.push(msg);
  }

  private closeListenStream(): void {
    this.listen?.end();
    this.listen = undefined;
  }
}

function progressTokenOf(req: JsonRpcRequest): string | number | undefined {
  const meta = (req.params as { _meta?: { progressToken?: string | number } } | undefined)?._meta;
  return meta?.progressToken;
}
