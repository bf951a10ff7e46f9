// What the SSE answer to a 2026-07-28 request may carry, message by message: the spec's rule, shared by the
// paths that relay an upstream's answer stream (the pass-through, upstream/modern-answer-stream.ts, and the
// catalog, catalog/catalog-upstream.ts). It judges parsed messages; reading the stream is the caller's.

import type { JsonRpcId } from './jsonrpc.js';

/** The request a stream answers: its id, its progress token (`_meta.progressToken`), and whether it is a listen. */
export interface AnsweredRequest {
  id: JsonRpcId;
  progressToken: unknown;
  listen: boolean;
  /** A listen's `params.notifications`: the notification types it asked for. */
  asked?: unknown;
  /** Resource URIs the listen may not hear of, whatever it asked (CallContext.withheldUris). */
  withheld?: ReadonlySet<string> | undefined;
}

/** The filter's flag for each list-change notification (subscriptions.mdx §Notification Filter). */
const LIST_FLAGS: Readonly<Record<string, string>> = Object.assign(Object.create(null) as Record<string, string>, {
  'notifications/tools/list_changed': 'toolsListChanged',
  'notifications/prompts/list_changed': 'promptsListChanged',
  'notifications/resources/list_changed': 'resourcesListChanged',
});

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
 * stream, which carries only what it asked for (listenCarries). Anything that is not one JSON-RPC message (a batch, which 2026-07-28
 * does not have; not JSON at all) is nothing a client can take.
 */
export function verdictOn(message: unknown, request: AnsweredRequest): Verdict {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return STRAY;
  const m = message as { id?: unknown; method?: unknown; params?: { progressToken?: unknown } };
  if (m.method !== undefined) {
    if (m.id !== undefined) return STRAY;
    if (request.listen) return listenCarries(m.method, request.asked) && (request.withheld === undefined || !namesWithheld(m, request.withheld)) ? KEEP : STRAY;
    if (typeof m.method === 'string' && LISTEN_ONLY.test(m.method)) return STRAY;
    if (m.method === 'notifications/progress') return request.progressToken !== undefined && m.params?.progressToken === request.progressToken ? KEEP : STRAY;
    return KEEP;
  }
  return m.id === request.id ? ANSWER : STRAY;
}

/**
 * What a listen's stream carries (subscriptions.mdx): its acknowledgment, and the notification types its
 * filter asked for ("The server MUST NOT send notification types the client has not explicitly
 * requested"); request-scoped notifications (progress, log messages) are "not delivered on the listen
 * stream". A resource update may name a sub-resource of one subscribed to (schema:
 * ResourceUpdatedNotificationParams.uri), so any goes on once the listen subscribed to some.
 */
export function listenCarries(method: unknown, asked: unknown): boolean {
  if (method === 'notifications/subscriptions/acknowledged') return true;
  if (typeof method !== 'string' || typeof asked !== 'object' || asked === null) return false;
  const filter = asked as Record<string, unknown>;
  const flag = LIST_FLAGS[method];
  if (flag !== undefined) return filter[flag] === true;
  return method === 'notifications/resources/updated' && Array.isArray(filter.resourceSubscriptions) && filter.resourceSubscriptions.length > 0;
}

/** Whether a listen's message is an update about a URI withheld from it. */
function namesWithheld(m: { method?: unknown; params?: unknown }, withheld: ReadonlySet<string>): boolean {
  const uri = m.method === 'notifications/resources/updated' && typeof m.params === 'object' && m.params !== null ? (m.params as { uri?: unknown }).uri : undefined;
  return typeof uri === 'string' && withheld.has(uri);
}

/** The request's `_meta.progressToken`, from its parsed params. */
export function progressTokenIn(params: unknown): unknown {
  const meta = typeof params === 'object' && params !== null ? (params as { _meta?: unknown })._meta : undefined;
  return typeof meta === 'object' && meta !== null ? (meta as { progressToken?: unknown }).progressToken : undefined;
}

/**
 * The resource URIs an acknowledged filter names (subscriptions.mdx §Acknowledgment: the subset the server
 * honours); none when it names none, or not as strings. `filter`: the acknowledgment's `params.notifications`.
 */
export function acknowledgedUris(filter: unknown): string[] {
  const uris = typeof filter === 'object' && filter !== null ? (filter as { resourceSubscriptions?: unknown }).resourceSubscriptions : undefined;
  return Array.isArray(uris) ? uris.filter((u): u is string => typeof u === 'string') : [];
}
