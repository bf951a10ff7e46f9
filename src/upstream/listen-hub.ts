// Modern `subscriptions/listen` streams served from one legacy upstream session (GATEWAY-REQUIREMENTS §16.1
// "Subscriptions ⇄ GET stream"): one upstream GET stream per session, fanned out to every listener by its
// filter, resources/subscribe reference-counted per URI. A legacy server sends each message on one stream
// only, so the GET stream is shared rather than opened per listener.

import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.js';
import { ErrorCode, errorResponse, type JsonRpcMessage, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { MAX_RESOURCE_SUBSCRIPTIONS, META_SUBSCRIPTION_ID } from '../protocol/methods.js';
import { wireTable } from '../protocol/own-keys.js';
import { UpstreamSessionGone, type UpstreamMessages } from '../pipeline/ports.js';
import { answeringPings } from './answering-pings.js';
import { sessionUnknown } from './session-unknown.js';

/** subscriptions.mdx §Notification Filter. */
export interface SubscriptionFilter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  resourceSubscriptions?: string[];
}

export interface Listener {
  filter: SubscriptionFilter;
  subscriptionId: string | number;
  send(message: JsonRpcMessage): void;
}

const LIST_CHANGED: Readonly<Record<string, keyof SubscriptionFilter>> = wireTable({
  'notifications/tools/list_changed': 'toolsListChanged',
  'notifications/prompts/list_changed': 'promptsListChanged',
  'notifications/resources/list_changed': 'resourcesListChanged',
});

/** Whether a listen with this filter is to hear this upstream notification. */
export function wants(filter: SubscriptionFilter, message: JsonRpcMessage): boolean {
  const m = message as { method?: string; params?: Record<string, unknown> };
  if (m.method === 'notifications/resources/updated') return typeof m.params?.uri === 'string' && (filter.resourceSubscriptions ?? []).includes(m.params.uri);
  const kind = m.method === undefined ? undefined : LIST_CHANGED[m.method];
  return kind !== undefined && filter[kind] === true;
}

/** The part of a requested filter the upstream can honour, from its legacy capabilities. */
export function honouredFilter(requested: SubscriptionFilter, capabilities: Record<string, { listChanged?: boolean; subscribe?: boolean } | undefined>): SubscriptionFilter {
  const out: SubscriptionFilter = {};
  if (requested.toolsListChanged && capabilities.tools?.listChanged) out.toolsListChanged = true;
  if (requested.promptsListChanged && capabilities.prompts?.listChanged) out.promptsListChanged = true;
  if (requested.resourcesListChanged && capabilities.resources?.listChanged) out.resourcesListChanged = true;
  if (requested.resourceSubscriptions?.length && capabilities.resources?.subscribe) out.resourceSubscriptions = [...new Set(requested.resourceSubscriptions)].slice(0, MAX_RESOURCE_SUBSCRIPTIONS);
  return out;
}

/** How long a call waits for the GET stream it holds to be answered before it goes up anyway (ListenHub.hold). */
const HOLD_WAIT_MS = 1_000;

/**
 * When a GET stream the upstream ended is opened again. The pause doubles, up to `maxMs`, while streams keep
 * ending (or failing) before they lived `livedMs`: reopened every second, a server or proxy that ends each GET
 * at once was asked every second for as long as anyone listened (as a refused listen was, bridge-legacy-client.ts).
 */
export interface ReopenTimings {
  firstMs: number;
  maxMs: number;
  livedMs: number;
}

const REOPEN: ReopenTimings = { firstMs: 1_000, maxMs: 30_000, livedMs: 10_000 };

/**
 * How often a session whose listens can hear nothing (and that holds no GET stream) is pinged, where the
 * transport cannot tell its end by itself (HTTP): one small request per session per interval, instead of a
 * pooled connection held for as long as the listens last.
 */
const WATCH_PING_MS = 20_000;

/** Whether a filter names anything the upstream could send (honouredFilter leaves only that). */
function audible(filter: SubscriptionFilter): boolean {
  return filter.toolsListChanged === true || filter.promptsListChanged === true || filter.resourcesListChanged === true || (filter.resourceSubscriptions?.length ?? 0) > 0;
}

export class ListenHub {
  private readonly listeners = new Set<Listener>();
  private readonly uriRefs = new Map<string, number>();
  /** The latest resources/subscribe or unsubscribe of each URI, until it is answered (see subscription). */
  private readonly asked = new Map<string, { method: string; answer: Promise<boolean> }>();
  private stream?: AbortController;
  /** Calls in flight that keep the GET stream open without a listener (see hold). */
  private holds = 0;
  /** Settles once the GET stream's answer has come (open, refused or failed). */
  private ready: Promise<void> = Promise.resolve();
  /** Set while the GET stream opened last has not been answered yet (see ready). */
  private unanswered = false;
  /**
   * Set once a call waited HOLD_WAIT_MS for the GET stream in vain, until the upstream answers one of this
   * session's GETs: calls meanwhile go up without waiting (see hold).
   */
  private slowToAnswer = false;
  /** The pause before the next reopen of a stream that did not live (ReopenTimings). */
  private reopenMs: number;
  /** Set while a reopen waits out its pause: nothing opens the stream before it. */
  private reopening?: NodeJS.Timeout;
  /** Whether the upstream ever answered this session's GET with a stream. */
  private streamed = false;
  /** Stops the watch on a session whose listens hear nothing (see watch), while one runs. */
  private unwatch?: () => void;

  constructor(
    private readonly client: UpstreamMessages,
    private readonly headers: () => Record<string, string>,
    private readonly log: Logger,
    /**
     * The session's listens cannot go on there, and end: `forgotten` when the upstream said it no longer
     * knows the session (404), false when it only stopped serving its GET stream and may still hold it.
     */
    private readonly sessionGone: (forgotten: boolean) => void = () => {},
    /** Offered each server request of the GET stream first (not a ping); true when it took it. */
    private readonly serverRequest: (request: JsonRpcRequest) => boolean = () => false,
    private readonly reopen: ReopenTimings = REOPEN,
  ) {
    this.reopenMs = reopen.firstMs;
  }

  /**
   * Keeps the GET stream open while a call that may be asked something is in flight, with or without a
   * listener: a legacy server puts a request that names no call of its own there, and only there
   * (2025-11-25/basic/transports.mdx §Listening for Messages). Resolves once the stream has been answered,
   * so that the call goes up after it; the function returned lets go of it.
   */
  async hold(): Promise<() => void> {
    this.holds++;
    // While a reopen waits out its pause, the call goes up without the stream, as when it failed.
    if (!this.stream && !this.reopening) this.openStream();
    // Not longer than HOLD_WAIT_MS: a server that sends a GET's headers only with its first event would
    // otherwise hold each call for the whole headers timeout. The stream goes on opening meanwhile. Once a
    // wait ran out, the next calls do not wait until the upstream answers a GET of this session: such a server
    // does so every time (it holds the stream open already, and its question for the call comes as that first
    // event), and each call would pay the whole second for nothing, until 5 December.
    if (!this.slowToAnswer) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.ready, new Promise<void>((resolve) => (timer = setTimeout(resolve, HOLD_WAIT_MS)))]);
      clearTimeout(timer);
      if (this.unanswered) this.slowToAnswer = true;
    }
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.holds--;
      this.closeIfUnused();
    };
  }

  /**
   * Whether the GET stream is wanted: by a call that may be asked something, or a listener that can hear
   * something. A listen acknowledged with an empty filter (the upstream declared nothing it asked for) hears
   * nothing on it: until 5 December it held the stream, a pooled connection, for as long as it lasted.
   */
  private wantsStream(): boolean {
    if (this.holds > 0) return true;
    for (const l of this.listeners) if (audible(l.filter)) return true;
    return false;
  }

  private closeIfUnused(): void {
    if (this.wantsStream()) return;
    this.stream?.abort();
    this.stream = undefined;
    if (this.listeners.size > 0) this.watch();
    else this.stopWatch();
  }

  /**
   * Listens that hear nothing still end with their session (so that their clients listen again on a new one,
   * which may offer more): without the GET stream that noticed it, the transport watches the session (a
   * stdio child's exit), or, where it cannot (HTTP), a ping every WATCH_PING_MS asks whether the server still
   * knows it (404, or a 400 that says so: session-unknown.ts).
   */
  private watch(): void {
    if (this.unwatch !== undefined) return;
    const gone = (): void => {
      this.stopWatch();
      this.log.info('upstream session gone; its listens end', { upstream: this.client.upstream });
      this.sessionGone(true);
    };
    if (this.client.watchSession !== undefined) {
      this.unwatch = this.client.watchSession(this.headers(), gone);
      return;
    }
    const timer = setInterval(
      () =>
        void this.ping().then((verdict) => {
          if (verdict === 'known' || this.unwatch === undefined) return;
          if (verdict === 'forgotten') return gone();
          // Refused for its version (-32022: the server was upgraded to 2026-07-28 in place) it may still hold
          // the session, as after a 405 on the GET stream (openStream): given up, and DELETEd there.
          this.stopWatch();
          this.log.info('upstream refused the session\'s version; its listens end', { upstream: this.client.upstream });
          this.sessionGone(false);
        }),
      WATCH_PING_MS,
    ).unref();
    this.unwatch = () => clearInterval(timer);
  }

  private stopWatch(): void {
    this.unwatch?.();
    this.unwatch = undefined;
  }

  /**
   * What a ping on the session says of it: 'forgotten' when the upstream answered "unknown session", 'refused'
   * when it refused the session's version with a -32022 listing what it supports (versioning.mdx §Protocol
   * Version Negotiation), else 'known' (a ping that fails says nothing: best effort).
   */
  private async ping(): Promise<'known' | 'forgotten' | 'refused'> {
    try {
      const reply = await this.client.post({ jsonrpc: '2.0', id: `gh-watch-${randomUUID()}`, method: 'ping' }, this.headers());
      if (reply.status >= 400 && sessionUnknown(reply)) return 'forgotten';
      let verdict: 'known' | 'refused' = 'known';
      for await (const m of answeringPings(reply.messages, (ping) => this.answerServerRequest(ping))) {
        const error = (m as { error?: { code?: unknown; data?: { supported?: unknown } } }).error;
        if (error?.code === ErrorCode.UnsupportedProtocolVersion && Array.isArray(error.data?.supported)) verdict = 'refused';
      }
      return verdict;
    } catch (err) {
      return err instanceof UpstreamSessionGone ? 'forgotten' : 'known';
    }
  }

  /**
   * Adds a listener; resource URIs the upstream refuses to subscribe to are taken out of its filter, so the
   * acknowledgment names only what is honoured (subscriptions.mdx §Acknowledgment).
   */
  async add(listener: Listener): Promise<void> {
    this.listeners.add(listener);
    const refused = new Set<string>();
    for (const uri of listener.filter.resourceSubscriptions ?? []) {
      const n = this.uriRefs.get(uri) ?? 0;
      this.uriRefs.set(uri, n + 1);
      // The first listener of a URI subscribes; one that comes while that subscribe is unanswered shares its
      // answer. Until 5 December it was acknowledged the URI at once, though the upstream then refused it.
      const asking = this.asked.get(uri);
      const ok = n === 0 ? await this.subscription(uri, 'resources/subscribe') : asking?.method === 'resources/subscribe' ? await asking.answer : true;
      if (!ok) {
        refused.add(uri);
        this.forget(uri);
      }
    }
    if (refused.size > 0) listener.filter = { ...listener.filter, resourceSubscriptions: listener.filter.resourceSubscriptions!.filter((u) => !refused.has(u)) };
    // Removed while it subscribed: no stream for it.
    if (!this.listeners.has(listener)) return;
    // Nothing to hear: no stream, a watch on the session instead (see wantsStream).
    if (!this.wantsStream()) {
      if (!this.stream && !this.reopening) this.watch();
      return;
    }
    // While a reopen waits out its pause, the new listener is served by the stream it opens.
    if (!this.stream && !this.reopening) this.openStream();
  }

  /** One reference to `uri` fewer; the last one gone, nothing more is said upstream (a refused subscription). */
  private forget(uri: string): void {
    const n = (this.uriRefs.get(uri) ?? 1) - 1;
    if (n > 0) this.uriRefs.set(uri, n);
    else this.uriRefs.delete(uri);
  }

  async remove(listener: Listener): Promise<void> {
    if (!this.listeners.delete(listener)) return;
    for (const uri of listener.filter.resourceSubscriptions ?? []) {
      const n = (this.uriRefs.get(uri) ?? 1) - 1;
      if (n > 0) this.uriRefs.set(uri, n);
      else {
        this.uriRefs.delete(uri);
        await this.subscription(uri, 'resources/unsubscribe');
      }
    }
    this.closeIfUnused();
  }

  /**
   * Sends a resources/subscribe or unsubscribe for `uri` once the one before it for that URI is answered, so
   * the upstream gets them in the order the references decided. Sent at once, on connections of their own, an
   * unsubscribe (its last listener gone) could arrive after the subscribe of a listener added meanwhile, which
   * was then acknowledged a subscription the upstream no longer held. Never rejects: false when refused.
   */
  private subscription(uri: string, method: 'resources/subscribe' | 'resources/unsubscribe'): Promise<boolean> {
    const before = this.asked.get(uri)?.answer;
    const answer = (before ?? Promise.resolve(true)).then(() => this.call(method, { uri })).catch(() => false);
    const asking = { method, answer };
    this.asked.set(uri, asking);
    void answer.then(() => {
      if (this.asked.get(uri) === asking) this.asked.delete(uri);
    });
    return answer;
  }

  /** Delivers an upstream notification to every listener that asked for it (also used for POST-stream ones). */
  dispatch(message: JsonRpcMessage): void {
    const m = message as { method?: string; params?: Record<string, unknown> };
    if (m.method === undefined) return;
    for (const l of this.listeners) {
      if (!wants(l.filter, message)) continue;
      // subscriptions.mdx §Receiving Notifications: every notification carries the subscription id.
      const meta = { ...((m.params?._meta as object | undefined) ?? {}), [META_SUBSCRIPTION_ID]: l.subscriptionId };
      l.send({ jsonrpc: '2.0', method: m.method, params: { ...(m.params ?? {}), _meta: meta } });
    }
  }

  get size(): number {
    return this.listeners.size;
  }

  private openStream(): void {
    // The stream tells the session's end (404, the child's exit) itself.
    this.stopWatch();
    const controller = new AbortController();
    this.stream = controller;
    let answered!: () => void;
    this.ready = new Promise<void>((resolve) => (answered = resolve));
    this.unanswered = true;
    /** When the upstream answered the GET with a stream. */
    let openedAt: number | undefined;
    void (async () => {
      try {
        const messages = await this.client.openGet(this.headers(), controller.signal).finally(() => {
          if (this.stream === controller) this.unanswered = false;
          answered();
        });
        // Answered (a stream, or none to offer): calls wait for the session's GET streams again.
        if (!controller.signal.aborted) this.slowToAnswer = false;
        if (messages) openedAt = performance.now();
        if (!messages) {
          if (this.streamed) {
            // It served this session's GET before and no longer does (a 405 from a server upgraded to
            // 2026-07-28, a 400 from one restarted that forgot the session): the session is not the one the
            // listens were served from. Taken for a server without GET streams, they stayed open, deaf, for
            // good (until 5 December); they end instead, and their clients listen again on a new session.
            if (this.stream === controller) this.stream = undefined;
            this.log.info('upstream no longer serves the session\'s GET stream; its listens end');
            this.sessionGone(false);
            return;
          }
          this.log.info('upstream offers no GET stream; list changes arrive only with call responses');
          return;
        }
        this.streamed = true;
        for await (const msg of messages) {
          if ('method' in msg && 'id' in msg && msg.id !== undefined) {
            const request = msg as JsonRpcRequest;
            if (request.method === 'ping' || !this.serverRequest(request)) this.answerServerRequest(request);
          } else this.dispatch(msg);
        }
      } catch (err) {
        if (err instanceof UpstreamSessionGone) {
          // Reopening on a session the upstream has forgotten would fail every second, and nothing would
          // arrive meanwhile: the listens end instead, and their clients listen again on a new session.
          if (this.stream === controller) this.stream = undefined;
          this.log.info('upstream session gone; its listens end', { upstream: err.upstream });
          this.sessionGone(true);
          return;
        }
        if (!controller.signal.aborted) this.log.warn('upstream GET stream failed', { err });
      }
      if (this.stream !== controller) return;
      this.stream = undefined;
      // The upstream ended its stream while listeners (or calls) remain: reopen it after a pause, not in a tight
      // loop. A stream that lived starts the pauses afresh; one that ended at once, or failed, doubles them.
      if (!controller.signal.aborted && !this.wantsStream() && this.listeners.size > 0) this.watch();
      else if (!controller.signal.aborted && this.wantsStream()) {
        const lived = openedAt !== undefined && performance.now() - openedAt >= this.reopen.livedMs;
        const pause = lived ? this.reopen.firstMs : this.reopenMs;
        this.reopenMs = lived ? this.reopen.firstMs : Math.min(this.reopen.maxMs, pause * 2);
        this.reopening = setTimeout(() => {
          this.reopening = undefined;
          if (this.stream) return;
          if (this.wantsStream()) this.openStream();
          else if (this.listeners.size > 0) this.watch();
        }, pause).unref();
      }
    })();
  }

  /**
   * A request the upstream sends on its GET stream that no call took (serverRequest). A ping MUST be answered
   * promptly (basic/utilities/ping.mdx); nothing else can be put to a modern client without a call to carry
   * it, so the rest are refused rather than left waiting forever.
   */
  private answerServerRequest(request: JsonRpcRequest): void {
    const response = request.method === 'ping' ? { jsonrpc: '2.0' as const, id: request.id, result: {} } : errorResponse(request.id, ErrorCode.MethodNotFound, `${request.method} cannot be answered outside a call`);
    void (async () => {
      const reply = await this.client.post(response, this.headers());
      for await (const _ of reply.messages) {
        // a 202: nothing to read
      }
    })().catch((err: unknown) => this.log.warn('an answer to the upstream could not be sent', { method: request.method, err }));
  }

  /** Sends one request of the hub's own upstream; false when the upstream answered it with an error. */
  private async call(method: string, params: Record<string, unknown>): Promise<boolean> {
    // Ids are never reused within a session (2025-11-25/basic/index.mdx §Requests); two listeners may subscribe in the same millisecond.
    const reply = await this.client.post({ jsonrpc: '2.0', id: `gh-${method}-${randomUUID()}`, method, params }, this.headers());
    let ok = reply.status < 400;
    for await (const m of answeringPings(reply.messages, (ping) => this.answerServerRequest(ping))) if ('error' in m && m.error !== undefined) ok = false;
    return ok;
  }
}
