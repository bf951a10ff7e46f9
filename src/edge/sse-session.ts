// One connection of a 2024-11-05 HTTP+SSE client: its event stream (the `endpoint` event, then messages,
// keep-alives, a cut-off for a client that stops reading) and what Gatehouse holds for it behind the
// scenes, a legacy session of its own pipeline. It writes; it decides nothing about requests.

import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Principal } from '../pipeline/principal.js';
import { KEEPALIVE_MS, MAX_BUFFERED_BYTES, SSE_HEADERS } from './answer.js';
import { waitForDrain } from './backpressure.js';
import type { MessageOut } from './sse-outcome.js';
import { ListenCursor } from './listen-cursor.js';

export class SseSession implements MessageOut {
  /** Names the session in its POST URL. Not a credential: every POST is authenticated and must come from `owner`. */
  readonly id = randomBytes(16).toString('base64url');
  private readonly controller = new AbortController();
  /** The legacy session id the pipeline issued at initialize, when it issued one. */
  internalId?: string;
  /** The protocol version initialize negotiated. */
  version?: string;
  /** What the client declared at initialize, in 2026-07-28 terms. */
  capabilities: Record<string, unknown> = {};
  /** Set while an initialize is under way: later messages wait for the session it creates. */
  initializing?: Promise<void>;
  /** The internal listen stream (server notifications) is open, or about to be opened again. */
  listening = false;
  /** How long to wait before opening the listen stream again after it ended (backs off while it keeps ending). */
  relistenMs = 0;
  /** Where the upstream's listen stream stands, to resume it when it is opened again. */
  readonly cursor = new ListenCursor();
  /** Messages whose answers are still being written. */
  inFlight = 0;
  lastUsed = Date.now();
  private keepalive?: NodeJS.Timeout;
  /** The largest message written since the socket last drained: the backlog bound counts on top of it (write()). */
  private largestQueued = 0;

  constructor(
    readonly owner: string,
    readonly principal: Principal,
    readonly clientAddress: string,
    /** The headers of the GET that opened the session, for the requests Gatehouse makes on its behalf. */
    readonly openHeaders: IncomingHttpHeaders,
    private readonly res: ServerResponse,
  ) {
    res.once('close', () => this.controller.abort());
  }

  /** Aborted once the stream is gone, for whatever reason: every call of the session stops with it. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get closed(): boolean {
    return this.controller.signal.aborted;
  }

  /**
   * 2024-11-05/basic/transports.mdx §HTTP with SSE: "When a client connects, the server MUST send an
   * endpoint event containing a URI for the client to use for sending messages."
   */
  start(endpoint: string, headers: Record<string, string>, keepaliveMs = KEEPALIVE_MS): void {
    this.res.on('drain', () => (this.largestQueued = 0));
    this.res.writeHead(200, { ...headers, ...SSE_HEADERS });
    this.res.write(`event: endpoint\ndata: ${endpoint}\n\n`);
    // Left out while bytes are still on their way (they keep the stream alive themselves): measured then, a
    // message larger than the backlog bound, read at the client's pace, cut the client off in its middle.
    this.keepalive = setInterval(() => {
      if (!this.res.writableNeedDrain) this.write(': keep-alive\n\n');
    }, keepaliveMs).unref();
    this.signal.addEventListener('abort', () => clearInterval(this.keepalive), { once: true });
  }

  /** One `message` event; waits while the client's socket is full, cuts off a client that has fallen too far behind. */
  async send(json: string): Promise<boolean> {
    if (!this.write(`event: message\ndata: ${json}\n\n`)) return false;
    if (this.res.writableNeedDrain) await waitForDrain(this.res, this.signal);
    return !this.closed;
  }

  /** Marks a message as being answered; the returned function marks it done. */
  enter(): () => void {
    this.inFlight++;
    this.lastUsed = Date.now();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.inFlight--;
      this.lastUsed = Date.now();
    };
  }

  /** Ends the stream; the client sees the connection close. */
  end(): void {
    if (!this.res.writableEnded) this.res.end();
    this.controller.abort();
  }

  /**
   * The headers a message of this session carries through the pipeline, as a Streamable HTTP client of
   * the negotiated version would send them: the internal session id and version, never the client's own
   * (a client cannot name another session), and an Accept that takes either answer.
   */
  headersFor(client: IncomingHttpHeaders, accept = 'application/json, text/event-stream'): IncomingHttpHeaders {
    const headers: IncomingHttpHeaders = { ...client, accept };
    delete headers['mcp-session-id'];
    delete headers['mcp-protocol-version'];
    delete headers['last-event-id'];
    if (this.internalId !== undefined) headers['mcp-session-id'] = this.internalId;
    if (this.version !== undefined) headers['mcp-protocol-version'] = this.version;
    return headers;
  }

  private write(text: string): boolean {
    const res = this.res;
    if (res.destroyed || res.writableEnded) return false;
    // A client this far behind would make Gatehouse hold its answers in memory: it is cut off instead. On
    // top of the largest message still queued: one message may be larger than the bound, and a client
    // taking it at its own pace has not stopped reading (until 4 December a second message written while
    // such a one drained, another call's notification say, cut the client off).
    if (res.writableLength > MAX_BUFFERED_BYTES + this.largestQueued) {
      res.destroy();
      return false;
    }
    res.write(text);
    if (text.length > this.largestQueued) this.largestQueued = text.length;
    return true;
  }
}
