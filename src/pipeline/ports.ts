// The seams between the catalog and the upstreams: an upstream seen one JSON-RPC message at a time, and
// seen as a 2026-07-28 server. Upstream adapters implement these; the catalog and the bridges use them,
// so neither folder needs the other.

import type { JsonRpcMessage } from '../protocol/jsonrpc.js';
import type { ClientEra } from '../protocol/versions.js';
import type { Cancellation } from './cancellation.js';
import type { CallContext, Route } from './context.js';
import type { Outcome } from './outcome.js';
import type { Principal } from './principal.js';

export interface UpstreamReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The messages of the body, in order; empty for a 202 or a body that is not JSON-RPC. */
  messages: AsyncGenerator<JsonRpcMessage, void, void>;
  /** For non-2xx answers: the body text (bounded), already read. */
  errorText?: string;
}

/**
 * Message-level access to an upstream, shaped like legacy/modern Streamable HTTP (status, session header,
 * a stream of messages) whatever the transport underneath: HTTP (upstream/message-client.ts) or stdio
 * (upstream/stdio-messages.ts).
 */
export interface UpstreamMessages {
  readonly upstream: string;
  /**
   * `principal` is the caller on whose behalf the gateway asks; only the catalog, which filters what each
   * caller may see, reads it. Transports never send it anywhere. `cancel` stops the request: a call's
   * Cancellation where there is one (no AbortSignal is made for it), or any AbortSignal. `route`: for a
   * tools/call or prompts/get, the route the pipeline judged (resolve stage); the catalog forwards to it
   * rather than to whatever holds the public name by then. Transports ignore it.
   */
  post(message: JsonRpcMessage, headers: Record<string, string>, cancel?: AbortSignal | Cancellation, principal?: Principal, route?: Route): Promise<UpstreamReply>;
  /**
   * The session's GET stream; null when the upstream offers none (a 405, or another refusal that is not a
   * failure: a 429 or 5xx rejects, as a connection that fails does). Rejects with UpstreamSessionGone when the
   * upstream no longer knows the session the headers name (404, or a 400 that says so: upstream/session-unknown.ts).
   */
  openGet(headers: Record<string, string>, signal: AbortSignal): Promise<AsyncGenerator<JsonRpcMessage, void, void> | null>;
  deleteSession(sessionId: string, version: string): Promise<void>;
  /**
   * Calls `gone` once when the session the headers name ends on the transport's own side, without a request
   * (a stdio child's exit); returns what stops the watch. Absent where only a request can tell (HTTP): there a
   * listen with nothing to hear is watched with a ping now and then (upstream/listen-hub.ts).
   */
  watchSession?(headers: Record<string, string>, gone: () => void): () => void;
}

/** An upstream seen as a 2026-07-28 server, whatever it speaks: what the aggregating catalog works with. */
export interface ModernFace {
  messages: UpstreamMessages;
  capabilities: Record<string, unknown>;
  serverInfo?: unknown;
  instructions?: string;
  /** True when requests travel over HTTP, where the modern headers (Mcp-Method, Mcp-Name, …) apply. */
  http: boolean;
  /**
   * True for a legacy server seen through the modern-client bridge: its lists carry no `ttlMs` of its own
   * (the bridge writes 0), so "0" means "not said", not "stale at once".
   */
  bridged?: boolean;
}

/** What the catalog needs of each member: its name, and the member as a modern server. */
export interface ModernMember {
  readonly name: string;
  modernFace(): Promise<ModernFace>;
}

/** What the era probe learnt of an upstream; `alsoLegacy`: a dual-era server legacy clients reach directly. */
export type UpstreamProfile =
  | { era: 'modern'; version: string; discover: Record<string, unknown>; alsoLegacy: boolean }
  | { era: 'legacy'; version: string; init: Record<string, unknown> };

/** Something that answers calls: an upstream adapter, a bridge, the catalog. Never touches HTTP. */
export interface CallHandler {
  /** Answers the call; upstream failures become refused Outcomes, never exceptions. */
  handle(ctx: CallContext): Promise<Outcome>;
  close(): Promise<void>;
}

/** The one interface every upstream adapter implements. */
export interface Upstream extends CallHandler, ModernMember {
  readonly transport: 'http' | 'stdio' | 'sse';
  /** True when the upstream can take traffic now (for /readyz). */
  ready(): Promise<boolean>;
  /** The era detected so far, without probing (metrics). */
  knownEra(): 'modern' | 'legacy' | undefined;
  /**
   * Whether a client of `era` is served in an era the upstream itself speaks, by the verdict so far (or the
   * era its entry pins), without probing: its own era, and legacy too for a dual-era server whose legacy
   * clients reach sessions of its own (HTTP; stdio `perSession`). Such a client's listening stream and
   * subscriptions are the upstream's, not an era bridge's (catalog/single-upstream.ts holds and notes them).
   * A stdio server's `shared`/`single` legacy clients of a legacy server count (Gatehouse holds them in the
   * server's own era); a dual-era server's there do not (they are bridged to its modern face). False while
   * nothing is known. Asked on listening and subscribing calls: comparisons, no allocation, no await.
   */
  speaksEra(era: ClientEra): boolean;
  /**
   * Whether the path that serves this call answers a 2025-11-25 task itself with -32601 and never sends it
   * up (protocol/core-tasks.ts): every era bridge, stdio `shared`/`single`, the catalog. The arguments stage
   * asks it for a tools/call with `params.task`, so that a call certain to be refused is refused before a
   * rate limit, a budget or an approval is spent on it. False while it cannot be known (the era probe
   * fails): the adapter then answers the call as it would have.
   */
  refusesCoreTasks(ctx: CallContext): Promise<boolean>;
  /**
   * Drops the resource subscriptions its own legacy-client bridges hold that `mayKeep` no longer allows (a
   * reload changed the rules; see LegacyClientBridge.rejudgeSubscriptions). Absent where it holds none.
   */
  rejudgeSubscriptions?(mayKeep: SubscriptionJudge): Promise<void>;
  /**
   * Asks the upstream, as the legacy session `sessionId` (of protocol `version`), to drop its subscription to
   * `uri`: one a client made through the pass-through that a reload's rules no longer allow
   * (catalog/pass-through-subscriptions.ts). Never rejects: false when it was not dropped. Absent where the
   * pass-through carries no legacy sessions of the upstream's own (a stdio upstream's outside `perSession`,
   * which its shared bridge holds).
   */
  unsubscribeSession?(sessionId: string, version: string, uri: string): Promise<boolean>;
}

/**
 * Builds a bridge that holds legacy clients' sessions in front of a modern server (`messages`), answering
 * `initialize` from `profile`; `staleVerdict` is called when the server stops behaving like a modern one.
 */
/**
 * Whether a session may keep its resource subscription to `uri` under the running configuration, judged as a
 * resources/subscribe of it would be now (access rules, egress rules). False when it cannot be judged.
 */
export type SubscriptionJudge = (principal: Principal, uri: string, capabilities: Record<string, unknown>) => Promise<boolean>;

/** The legacy-client bridge in front of the catalog: it answers its sessions' calls and holds their subscriptions. */
export interface LegacyBridge extends CallHandler {
  /** Drops the subscriptions `mayKeep` no longer allows (a reload changed the rules); see LegacyClientBridge. */
  rejudgeSubscriptions(mayKeep: SubscriptionJudge): Promise<void>;
}

export type LegacyBridgeFactory = (messages: UpstreamMessages, profile: () => UpstreamProfile & { era: 'modern' }, staleVerdict: () => void) => LegacyBridge;

/** An upstream answered 404 for the legacy session a request named: the session is gone there. */
export class UpstreamSessionGone extends Error {
  constructor(readonly upstream: string) {
    super(`Upstream "${upstream}" no longer knows the session`);
    this.name = 'UpstreamSessionGone';
  }
}
