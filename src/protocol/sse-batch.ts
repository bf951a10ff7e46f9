// A 2025-03-26 server may put several JSON-RPC messages in one SSE event, as a JSON-RPC batch
// (2025-03-26/basic/transports.mdx §Sending Messages 6: the responses "MAY be batched", and so may the
// requests and notifications before them; §Listening for Messages 4, the same on a GET stream). No other
// revision has batches, and every step of Gatehouse that looks for a request's answer (the audit, the
// output checks, the edge's answer watch, the bridges) reads one message per event. So such an event is
// split where the upstream's stream is read: one `message` event per element, which a 2025-03-26 client
// takes as well (batching is a MAY), and a 2024-11-05 HTTP+SSE client needs (it has no batches).

import type { SseEvent } from './sse.js';
import { formatSseJson } from './sse.js';

/**
 * The elements of a batch event, or undefined when the event holds no batch (most events: a cheap look at
 * its first character decides). Only objects are taken from a batch: anything else is no JSON-RPC message,
 * and would be dropped by a reader of single messages too.
 */
export function batchIn(ev: SseEvent): unknown[] | undefined {
  const data = ev.data;
  if (data === undefined || (ev.event !== undefined && ev.event !== 'message') || !data.trimStart().startsWith('[')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  return parsed.filter((m) => m !== null && typeof m === 'object' && !Array.isArray(m));
}

/**
 * The event's text with a batch split into one `message` event per element; the event as it came when it
 * holds none. The event's id goes with the last element, so a client resuming after it has had them all.
 */
export function unbatchedRaw(ev: SseEvent): string {
  const batch = batchIn(ev);
  if (batch === undefined) return ev.raw;
  let out = ev.retry !== undefined ? `retry: ${ev.retry}\n\n` : '';
  batch.forEach((m, i) => (out += formatSseJson(JSON.stringify(m), i === batch.length - 1 ? ev.id : undefined)));
  // An empty batch still carries its id, if it had one.
  if (batch.length === 0 && ev.id !== undefined) out += `id: ${ev.id}\n\n`;
  return out;
}
