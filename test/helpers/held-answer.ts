// An upstream that keeps its SSE answer open long after the response, as a server that ignores "SHOULD
// close/terminate the stream" after it does (2025-11-25/basic/transports.mdx §Sending Messages 6;
// 2026-07-28/basic/transports/streamable-http.mdx §Receiving Messages): the client's answer must end with its
// response all the same, and the gateway let the upstream's stream go.
//
// Causal, not timed (a loaded 2-core CI machine once took 2.2-3.8 s for an answer that ends at once): the
// upstream holds its stream open until the gateway lets it go, and ends it itself only at SAFETY_MS, a bound
// that fails the test. An answer that arrived before the upstream ended any stream cannot have waited for it.

import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { post } from './http.js';

/** The upstream ends a stream the gateway still holds only after this: a bound, never the thing asserted. */
const SAFETY_MS = 10_000;

/** A fake upstream's held answer streams: which the gateway let go, and which the upstream had to end itself. */
export class HeldAnswers {
  /** Streams the upstream still holds open. */
  private readonly open = new Set<ServerResponse>();
  /** Streams the gateway closed while the upstream still held them open. */
  letGo = 0;
  /** Streams the upstream ended itself (at SAFETY_MS): an answer that waited for this waited for the upstream. */
  endedByUpstream = 0;

  /** Keeps `res`, its response written, open until the gateway closes it (or SAFETY_MS, ended by the upstream). */
  hold(res: ServerResponse): Promise<void> {
    this.open.add(res);
    return new Promise((resolve) => {
      const safety = setTimeout(() => {
        if (!this.open.delete(res)) return;
        this.endedByUpstream++;
        res.end();
      }, SAFETY_MS);
      res.once('close', () => {
        clearTimeout(safety);
        if (this.open.delete(res)) this.letGo++;
        resolve();
      });
    });
  }

  /** A snapshot to compare with after a request: see assertEndedAtResponse. */
  counts(): { letGo: number; endedByUpstream: number } {
    return { letGo: this.letGo, endedByUpstream: this.endedByUpstream };
  }
}

/** POSTs a request whose answer a held stream carries, and reads it to its end; the abort is only a bound. */
export function postHeld(url: string, body: string, headers: Record<string, string>): ReturnType<typeof post> {
  return post(url, body, headers, AbortSignal.timeout(SAFETY_MS + 10_000));
}

/**
 * The answer, read to its end, ended while the upstream still held its stream open (the upstream had ended
 * none since `before`), and the gateway then let that stream go: one more let go than `before`.
 */
export async function assertEndedAtResponse(held: HeldAnswers, before: { letGo: number; endedByUpstream: number }): Promise<void> {
  assert.equal(held.endedByUpstream, before.endedByUpstream, "the answer ended only when the upstream ended its stream: it waited for the upstream's stream");
  // The upstream's stream is let go, not held to its end; bounded, as the gateway may drop it just after the answer.
  for (let i = 0; i < 250 && held.letGo === before.letGo && held.endedByUpstream === before.endedByUpstream; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(held.endedByUpstream, before.endedByUpstream, "the upstream's stream was held until the upstream ended it");
  assert.equal(held.letGo, before.letGo + 1, "the upstream's stream was let go");
}
