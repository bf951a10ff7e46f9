// Where the upstream's listening stream behind an HTTP+SSE session stands, so that Gatehouse, the client of
// that stream, takes it up again as 2025-11-25 asks of a client: from its last event id (§Resumability and
// Redelivery: what the server said while the connection was closed is kept for that stream alone), after the
// server's `retry` ("The client MUST respect the retry field, waiting the given number of milliseconds
// before attempting to reconnect", §Sending Messages 6, and §Listening for Messages 4 for a GET stream).

import type { SseEvent } from '../protocol/sse.js';

/** A floor under the server's `retry`: `retry: 0` must not make a tight loop (as upstream/resumable-sse.ts). */
const MIN_RETRY_MS = 50;
/** The wait before the server names one (WHATWG HTML §9.2: user-agent defined). */
const DEFAULT_RETRY_MS = 1_000;
/** The longest the doubling reaches, unless the server's own `retry` is longer. */
const MAX_BACKOFF_MS = 30_000;

export class ListenCursor {
  /** The stream's last event id; undefined before any, or after an empty one (WHATWG HTML §9.2.6). */
  lastEventId?: string;
  private retryMs = DEFAULT_RETRY_MS;
  /** Connections in a row that brought nothing new (no message, no event id not seen before). */
  private silent = 0;
  private heard = false;

  /** An event of the stream as it is relayed. */
  see(ev: SseEvent): void {
    if (ev.retry !== undefined) this.retryMs = ev.retry;
    if ((ev.data !== undefined && ev.data !== '') || (ev.id !== undefined && ev.id !== (this.lastEventId ?? ''))) this.heard = true;
    if (ev.id !== undefined) this.lastEventId = ev.id === '' ? undefined : ev.id;
  }

  /**
   * The stream's connection ended: how long to wait before resuming it, or undefined when it cannot be
   * resumed (it gave no event id). The server's `retry`, doubled after each connection that brought nothing
   * new, so a server that accepts and closes at once makes no tight loop.
   */
  resumeAfter(): number | undefined {
    this.silent = this.heard ? 0 : this.silent + 1;
    this.heard = false;
    if (this.lastEventId === undefined) return undefined;
    const delay = Math.max(this.retryMs, MIN_RETRY_MS);
    return Math.min(delay * 2 ** this.silent, Math.max(delay, MAX_BACKOFF_MS));
  }

  /** The server would not resume the stream: the next GET opens it anew. */
  forget(): void {
    this.lastEventId = undefined;
  }
}
