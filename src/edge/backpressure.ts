// Waiting for a slow client: resolves when the socket drains, closes, or the exchange is aborted. A client
// that has not taken what is queued for it within STALL_MS is cut off (README: streams "are cut off if the
// client stops reading"): before, only one more than MAX_BUFFERED_BYTES behind was, so a client that
// stopped reading with less queued held its call, its session slot and its upstream for good.

/**
 * How long a queue may take to drain. Progress cannot be seen inside it (Node hands the queued writes to
 * the kernel as one), so this is generous: the largest event an upstream may send by default (16 MiB)
 * drains in it at 140 KB/s.
 */
export const STALL_MS = 120_000;

/** What waitForDrain needs of a response (or a socket). */
export interface DrainingWritable {
  on(event: 'drain' | 'close', fn: () => void): unknown;
  off(event: 'drain' | 'close', fn: () => void): unknown;
  destroy(): unknown;
}

export function waitForDrain(res: DrainingWritable, signal: AbortSignal, stallMs = STALL_MS): Promise<void> {
  return new Promise((resolve) => {
    const stalled = setTimeout(() => {
      res.destroy();
      done();
    }, stallMs).unref();
    const done = (): void => {
      clearTimeout(stalled);
      res.off('drain', done);
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
    signal.addEventListener('abort', done);
  });
}
