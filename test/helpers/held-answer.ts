// An upstream that keeps its SSE answer open long after the response, as a server that ignores "SHOULD
// close/terminate the stream" after it does (2025-11-25/basic/transports.mdx §Sending Messages 6;
// 2026-07-28/basic/transports/streamable-http.mdx §Receiving Messages): the client's answer must end with its
// response all the same, and the gateway let the upstream's stream go.

import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { post } from './http.js';

/** How long a held answer stays open after its response: twice what an answer that ends at it may take. */
export const HOLD_MS = 4_000;

/** A fake upstream's held answer streams, and how many of them have closed (let go by the gateway, or ended). */
export class HeldAnswers {
  closed = 0;

  /** Keeps `res`, its response written, open for HOLD_MS, then ends it. */
  async hold(res: ServerResponse): Promise<void> {
    res.once('close', () => this.closed++);
    await new Promise((r) => setTimeout(r, HOLD_MS));
    res.end();
  }
}

/** POSTs a request whose answer a held stream carries: the answer, and how long it took to end (ms). */
export async function postTimed(url: string, body: string, headers: Record<string, string>): Promise<{ res: Awaited<ReturnType<typeof post>>; took: number }> {
  const started = performance.now();
  const res = await post(url, body, headers, AbortSignal.timeout(15_000));
  return { res, took: performance.now() - started };
}

/** The answer ended long before its upstream stream would have, and that stream was let go: one more closed than `closedBefore`. */
export async function assertEndedAtResponse(took: number, held: HeldAnswers, closedBefore: number): Promise<void> {
  assert.ok(took < HOLD_MS / 2, `the answer took ${took.toFixed(0)} ms: it waited for the upstream's stream to end`);
  // The upstream's stream is let go, not held to its end.
  for (let i = 0; i < 50 && held.closed === closedBefore; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(held.closed, closedBefore + 1, 'the upstream stream was let go');
}
