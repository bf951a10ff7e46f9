// What the SSE answer to a 2026-07-28 request may carry, message by message: the spec's rule, shared by the
// paths that relay an upstream's answer stream (the pass-through, upstream/modern-answer-stream.ts, and the
// catalog, catalog/catalog-upstream.ts). It judges parsed messages; reading the stream is the caller's.

import type { JsonRpcId } from './jsonrpc.js';

/** The request a stream answers: its id, its progress token (`_meta.progressToken`), and whether it is a listen. */
export interface AnsweredRequest {
  id: JsonRpcId;
  progressToken: unknown;
  listen: boolean;
}

/** A message that belongs on the stream. */
export const KEEP = 0;
/** The response to the request: it belongs, and nothing after it does. */
export const ANSWER = 1;
/** A message the stream must not carry. */
export const STRAY = 2;
export type Verdict = typeof KEEP | typeof ANSWER | typeof STRAY;

/**
 * Notifications that travel on a subscriptions/listen stream only (streamable-http.mdx §Receiving
 * Messages: "Long-lived change notifications ... are delivered on the response stream of a
 * subscriptions/listen request"; subscriptions.mdx).
 */
const LISTEN_ONLY = /^notifications\/(?:(?:tools|prompts|resources)\/list_changed|resources\/updated|subscriptions\/acknowledged)$/;

/**
 * 2026-07-28/basic/transports/streamable-http.mdx §Receiving Messages: "The server MAY send JSON-RPC
 * notifications ... before the final response. These notifications MUST relate to the originating client
 * request. The server MUST NOT send independent JSON-RPC requests on this stream." A response to another id
 * answers nothing this client asked (on a shared upstream it may be another client's). Progress MUST only
 * reference the request's own token (basic/patterns/progress.mdx); change notifications belong on a listen
 * stream, and "request-scoped notifications like notifications/progress and notifications/message are not
 * delivered on the listen stream". Anything that is not one JSON-RPC message (a batch, which 2026-07-28
 * does not have; not JSON at all) is nothing a client can take.
 */
export function verdictOn(message: unknown, request: AnsweredRequest): Verdict {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return STRAY;
  const m = message as { id?: unknown; method?: unknown; params?: { progressToken?: unknown } };
  if (m.method !== undefined) {
    if (m.id !== undefined) return STRAY;
    if (request.listen) return m.method === 'notifications/progress' || m.method === 'notifications/message' ? STRAY : KEEP;
    if (typeof m.method === 'string' && LISTEN_ONLY.test(m.method)) return STRAY;
    if (m.method === 'notifications/progress') return request.progressToken !== undefined && m.params?.progressToken === request.progressToken ? KEEP : STRAY;
    return KEEP;
  }
  return m.id === request.id ? ANSWER : STRAY;
}

/** The request's `_meta.progressToken`, from its parsed params. */
export function progressTokenIn(params: unknown): unknown {
  const meta = typeof params === 'object' && params !== null ? (params as { _meta?: unknown })._meta : undefined;
  return typeof meta === 'object' && meta !== null ? (meta as { progressToken?: unknown }).progressToken : undefined;
}
