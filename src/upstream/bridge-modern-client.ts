// A modern (2026-07-28) client in front of a legacy upstream (GATEWAY-REQUIREMENTS §16.1). Gatehouse answers
// `server/discover` itself, forwards requests on pooled legacy sessions with modern `_meta` removed and ids
// and progress tokens made unique, turns results modern, and turns requests the upstream sends mid-call
// (elicitation, sampling, roots) into an InputRequiredResult whose retry resumes the parked upstream call.

import { atOrAbove } from '../protocol/log-levels.js';
import { onAbort, signalOf } from '../pipeline/cancellation.js';
import type { CallContext } from '../pipeline/context.js';
import { CallStream, type MessageSink } from '../pipeline/call-stream.js';
import { ACCEPTED, refused, type Outcome } from '../pipeline/outcome.js';
import { principalKey } from '../pipeline/principal.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { isObject, legacyCapabilitiesFrom, stripModernRequestMeta, toModernResult, withoutTaskOnlyTools } from '../protocol/era-shapes.js';
import { describeValue } from '../protocol/describe.js';
import { coreTaskRefusal, coreTaskResponse } from '../protocol/core-tasks.js';
import { ErrorCode, errorResponse, type JsonRpcId, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_SUBSCRIPTION_ID, NAME_FIELD } from '../protocol/methods.js';
import { MODERN_VERSIONS } from '../protocol/versions.js';
import { wireTable } from '../protocol/own-keys.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import { upstreamMessage } from '../protocol/trace-context.js';
import type { UpstreamProfile } from './era-probe.js';
import { LegacyClientSessions, type LegacyClientSession, type PoolOptions } from './legacy-client-sessions.js';
import type { UpstreamMessages } from '../pipeline/ports.js';
import { ParkedRequests, type Parked } from './parked-requests.js';
import { CallInbox, MAX_HELD_NOTIFICATIONS } from './call-inbox.js';
import { answeringPings, pong } from './answering-pings.js';
import { sessionUnknown } from './session-unknown.js';
import { honouredFilter, ListenHub, wants, type Listener, type SubscriptionFilter } from './listen-hub.js';

type Obj = Record<string, unknown>;

/** Server-to-client requests that MRTR can carry, and the client capability each needs (mrtr.mdx §Server Requirements 6). */
export const INPUT_REQUEST_CAPABILITY: Readonly<Record<string, string>> = wireTable({
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
});

/** 2025-11-25's URLElicitationRequiredError; 2026-07-28 servers MUST NOT emit it (basic/index.mdx §Error Codes). */
const URL_ELICITATION_REQUIRED = -32042;

/** A 2025-11-25 URL elicitation's params in 2026-07-28 terms: the elicitationId (and task) have no place there. */
function modernUrlElicitation(params: Obj): Obj {
  const { elicitationId: _id, task: _task, ...rest } = params;
  return rest;
}

/**
 * A legacy server's -32042 (the client must visit URLs first, then retry) for a modern client. A client
 * that takes URL elicitations gets them as an InputRequiredResult without requestState: its retry is a new
 * request, which the server then serves, as the legacy client's own retry would be (mrtr.mdx). Any other
 * client is told what it lacks (-32021).
 */
function urlElicitationsFor(request: JsonRpcRequest, error: NonNullable<JsonRpcResponse['error']>, capabilities: Obj): JsonRpcResponse {
  const listed = (error.data as { elicitations?: unknown } | undefined)?.elicitations;
  const elicitations = Array.isArray(listed) ? listed.filter(isObject) : [];
  const elicitation = capabilities.elicitation;
  if (MRTR_METHODS.has(request.method) && elicitations.length > 0 && isObject(elicitation) && isObject(elicitation.url)) {
    const inputRequests = Object.fromEntries(elicitations.map((e, i) => [`url-${i + 1}`, { method: 'elicitation/create', params: modernUrlElicitation({ ...e, mode: 'url' }) }]));
    return { jsonrpc: '2.0', id: request.id, result: { resultType: 'input_required', inputRequests } };
  }
  return errorResponse(request.id, ErrorCode.MissingClientCapability, `The server needs the client to visit a URL first (URL elicitation), which this client did not declare: ${error.message}`, { requiredCapabilities: { elicitation: { url: {} } } });
}

/** Names of task-only tools remembered (callableTools): a list cannot make the bridge keep more. */
const MAX_TASK_ONLY_TOOLS = 1024;

/**
 * Sessions whose GET stream calls may hold open at once (holdGetStream): a quarter of an upstream's default
 * pool of 64 connections, so held streams can never take the connections the calls themselves need.
 */
const MAX_HELD_GET_STREAMS = 16;

/**
 * Capability sets one caller may listen with at once (admitListen). Each is a session of its own, and its GET
 * stream keeps one of the upstream's pooled connections (or, over stdio, a child) for as long as the listens
 * last; listens on one set share it. The pool's own per-caller bound (8 sessions) gives way to sessions with
 * listens on them, so this is what bounds a caller's streams.
 */
const MAX_LISTENED_SETS_PER_CALLER = 4;
/** Capability sets listened with at once by all callers: half an upstream's default pool of 64 connections. */
const MAX_LISTENED_SETS = 32;

/** Whether a request declares anything a server may ask its client for (INPUT_REQUEST_CAPABILITY). */
function mayBeAsked(capabilities: Obj): boolean {
  return Object.values(INPUT_REQUEST_CAPABILITY).some((capability) => isObject(capabilities[capability]));
}

/** The requests that may be answered with an InputRequiredResult (2026-07-28 mrtr.mdx §Supported Requests). */
const MRTR_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read']);

/**
 * Whether the client declared what this server request needs, down to its mode (mrtr.mdx §Server
 * Requirements 6): an elicitation's mode (form unless said otherwise; an empty `elicitation` declares form
 * only, as in 2025-11-25), and sampling with tools.
 */
export function declaresInput(capabilities: Record<string, unknown>, method: string, params: Record<string, unknown> | undefined): boolean {
  const needed = INPUT_REQUEST_CAPABILITY[method];
  const declared = needed === undefined ? undefined : capabilities[needed];
  if (!isObject(declared)) return false;
  if (method === 'elicitation/create') {
    const mode = params?.mode ?? 'form';
    const modes = Object.keys(declared).filter((k) => k === 'form' || k === 'url');
    if (mode === 'form') return modes.length === 0 || isObject(declared.form);
    return mode === 'url' && isObject(declared.url);
  }
  if (method === 'sampling/createMessage' && params?.tools !== undefined) return isObject(declared.tools);
  return true;
}

interface ParkedCall extends Parked {
  session: LegacyClientSession;
  /** The caller the call belongs to (principalKey); only they may resume it. */
  owner: string;
  /** Ends the call's hold on its session (see LegacyClientSessions.use), once it is over. */
  release: () => void;
  upstreamId: string;
  /** inputRequests key → the upstream's id for that server request. */
  pending: Map<string, JsonRpcId>;
  /** inputRequests key → what was asked, to ask again when a retry leaves it unanswered. */
  asked: Map<string, { method: string; params: Obj }>;
  messages: AsyncGenerator<JsonRpcMessage, void, void>;
  progress: ProgressMap;
  capabilities: Obj;
  logLevel?: string;
  /** Aborts the upstream HTTP request that carries this call's stream. */
  upstreamRequest: AbortController;
}

interface ProgressMap {
  /** Our token upstream → the client's token. */
  upstreamToken?: string;
  clientToken?: string | number;
}

export class ModernClientBridge {
  private readonly sessions: LegacyClientSessions;
  private readonly parked: ParkedRequests<ParkedCall>;
  private readonly hubs = new WeakMap<LegacyClientSession, ListenHub>();
  private readonly activeListens = new Set<() => void>();
  /** The listens open on each session, ended when the session ends. */
  private readonly listensOn = new Map<LegacyClientSession, Set<() => void>>();
  /** The calls in flight on each session (see callsOn). */
  private readonly working = new Map<LegacyClientSession, Set<CallInbox>>();
  /** Sessions whose GET stream calls hold open, with how many calls hold it (see holdGetStream). */
  private readonly heldOn = new Map<LegacyClientSession, number>();
  private counter = 0;
  /** Each caller's listens (not Gatehouse's own), by the canonical capability set they declared (see admitListen). */
  private readonly listening = new Map<string, Map<string, number>>();
  private listenedSets = 0;
  /** Tools the upstream lists as callable only as a task (see callableTools), by name. */
  private readonly taskOnlyTools = new Set<string>();

  /**
   * `inputTimeoutMs` bounds how long a parked call waits for the client's retry; `staleVerdict` is called when
   * the upstream stops behaving like a legacy server, so its era is probed again; `pool` shapes how
   * sessions are shared and ended (stdio upstreams, where each session is a child process).
   */
  constructor(
    private readonly client: UpstreamMessages,
    private readonly profile: () => UpstreamProfile & { era: 'legacy' },
    inputTimeoutMs: number,
    private readonly staleVerdict: () => void,
    private readonly log: Logger,
    pool: Omit<PoolOptions, 'onEnd'> = {},
  ) {
    this.sessions = new LegacyClientSessions(client, log, { ...pool, onEnd: (session) => this.sessionEnded(session) });
    this.parked = new ParkedRequests(inputTimeoutMs);
  }

  async handle(ctx: CallContext): Promise<Outcome> {
    // Modern clients over HTTP cancel by closing the stream; other notifications have no legacy target.
    if (ctx.kind !== 'request') return ACCEPTED;
    const request = upstreamMessage(ctx) as JsonRpcRequest;
    // Refused as Gatehouse's own answer (see serve), so a stage before knows nothing went up.
    const taskRefusal = coreTaskRefusal(request);
    if (taskRefusal !== undefined) return refused(taskRefusal);
    // A listen is a listening stream: its headers go at once (not with the acknowledgment, which waits for
    // the upstream's resources/subscribe), and the edge keeps it alive with comments while it is quiet.
    const stream = new CallStream({ requestId: request.id, mode: request.method === 'subscriptions/listen' ? 'listen' : 'call', acceptsSse: ctx.acceptsSse });
    // Stopped when the client leaves, or when the call is cut at its deadline (timeouts.callMs).
    const stop = stream.stopsOn(ctx.cancel);
    void this.serve(request, stream, stop.cancel.signal, principalKey(ctx.principal)).finally(stop.dispose);
    return { kind: 'stream', stream };
  }

  /**
   * The same bridge read as a modern upstream (`UpstreamMessages`): the catalog posts 2026-07-28 requests
   * and reads the answer's messages, whatever era the server behind speaks.
   */
  asModernUpstream(): UpstreamMessages {
    return {
      upstream: this.client.upstream,
      post: async (message, _headers, cancel, principal) => {
        const signal = signalOf(cancel);
        if (!('id' in message) || !('method' in message)) return { status: 202, headers: {}, messages: (async function* () {})() };
        const stream = new CallStream({ requestId: message.id as JsonRpcId, mode: 'call', acceptsSse: true });
        // The asker going away is the reader going away: a listen then leaves its session's hub (else the
        // hub, which lives with the session, would keep the listen and everything its reader holds).
        // At once when the asker has already gone: a listener added to a fired signal is never called.
        onAbort(signal, () => stream.cancel());
        void this.serve(message as JsonRpcRequest, stream, signal ?? new AbortController().signal, principal ? principalKey(principal) : '');
        return { status: 200, headers: {}, messages: stream.messages() };
      },
      openGet: async () => null,
      deleteSession: async () => {},
    };
  }

  /** One modern request, answered into `sink`; `signal` aborts when the asker goes away. */
  private async serve(request: JsonRpcRequest, sink: MessageSink, signal: AbortSignal, owner: string): Promise<void> {
    try {
      if (request.method === 'server/discover') return sink.finish(this.discover(request.id));
      if (request.method === 'subscriptions/listen') return await this.listen(request, sink, owner);
      const params = request.params ?? {};
      // A legacy task made on a pooled session (one child for every caller, in `single`) would be readable by
      // whoever names it, and its result would escape the call's governance (protocol/core-tasks.ts).
      const taskRefusal = coreTaskResponse(request);
      if (taskRefusal !== undefined) return sink.finish(taskRefusal);
      if (request.method === 'tools/call' && this.taskOnlyTools.has(params.name as string)) {
        // Not offered (callableTools): to the client it is no tool at all (server/tools.mdx §Error Handling).
        return sink.finish(errorResponse(request.id, ErrorCode.InvalidParams, `Unknown tool: ${describeValue(params.name)}`));
      }
      if (typeof params.requestState === 'string') return await this.resume(signal, request, sink, owner);
      await this.forward(signal, request, sink, owner);
    } catch (err) {
      sink.fail(err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', String((err as Error)?.message ?? err), this.client.upstream));
    }
  }

  async close(): Promise<void> {
    // subscriptions.mdx §Graceful Closure: a listen ended by the server gets its result before the stream closes.
    for (const end of this.activeListens) end();
    this.parked.clear();
    await this.sessions.closeAll();
  }

  /**
   * subscriptions/listen (2026-07-28/basic/patterns/subscriptions.mdx) on a legacy upstream: acknowledge the
   * subset the upstream can honour, then relay its list-change and resource-update notifications.
   */
  private async listen(request: JsonRpcRequest, sink: MessageSink, owner: string): Promise<void> {
    const meta = isObject(request.params?._meta) ? request.params._meta : {};
    const capabilities = legacyCapabilitiesFrom(isObject(meta[META_CLIENT_CAPABILITIES]) ? meta[META_CLIENT_CAPABILITIES] : {});
    const admitted = this.admitListen(owner, canonicalJson(capabilities));
    if (typeof admitted === 'string') {
      return sink.finish(errorResponse(request.id, ErrorCode.InvalidRequest, admitted, { details: { reason: 'listen_cap' } }));
    }
    let session: LegacyClientSession;
    try {
      session = await this.sessions.get(capabilities, owner);
    } catch (err) {
      admitted();
      // As for a call (forward): a session that cannot be opened may mean the upstream changed era.
      if (!(err instanceof GatewayError && err.code === 'GW_ERR_SESSION_LIMIT')) this.staleVerdict();
      throw err;
    }
    // A caller's listen keeps its session open; Gatehouse's own (the catalog's watcher) does not.
    const used = owner === '' ? () => {} : this.sessions.use(session, owner);
    const release = (): void => {
      used();
      admitted();
    };
    const requested = (isObject(request.params?.notifications) ? request.params.notifications : {}) as SubscriptionFilter;
    const filter = honouredFilter(requested, (session.init.capabilities ?? {}) as Parameters<typeof honouredFilter>[1]);
    const subscriptionId = request.id;
    const hub = this.hubFor(session);
    // subscriptions.mdx §Acknowledgment: nothing comes before the acknowledgment. What the shared GET stream
    // delivers while this listen subscribes waits, and goes after it, if the final filter still wants it.
    let early: JsonRpcMessage[] | undefined = [];
    const listener: Listener = { filter, subscriptionId, send: (m) => void (early !== undefined ? early.push(m) : sink.push(m)) };
    // Subscribed first: the acknowledgment names only the resources the upstream accepted (subscriptions.mdx §Acknowledgment).
    await hub.add(listener);
    if (!this.sessions.holds(session)) {
      // The session was found gone while subscribing (its child had died, say): the listen ends at once,
      // and the client's next one gets a new session.
      void hub.remove(listener);
      release();
      return sink.finish({ jsonrpc: '2.0', id: request.id, result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: subscriptionId } } });
    }
    sink.push({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { [META_SUBSCRIPTION_ID]: subscriptionId }, notifications: listener.filter } });
    const waiting = early;
    early = undefined;
    for (const m of waiting) if (wants(listener.filter, m)) sink.push(m);
    // Keep-alive comments: the edge writes them on every listening stream (this one included, in its mode).
    const end = (): void => sink.finish({ jsonrpc: '2.0', id: request.id, result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: subscriptionId } } });
    this.activeListens.add(end);
    let onSession = this.listensOn.get(session);
    if (!onSession) this.listensOn.set(session, (onSession = new Set()));
    onSession.add(end);
    sink.onClose(() => {
      this.activeListens.delete(end);
      onSession.delete(end);
      if (onSession.size === 0 && this.listensOn.get(session) === onSession) this.listensOn.delete(session);
      release();
      void hub.remove(listener);
    });
  }

  /**
   * Counts a caller's listen under the capability set it declared, or says why it is refused: a set the
   * caller does not listen with yet is one more session with a GET stream, and those are bounded per caller
   * (MAX_LISTENED_SETS_PER_CALLER) and in all (MAX_LISTENED_SETS). Gatehouse's own listens are not counted.
   * The function returned ends the count, once.
   */
  private admitListen(owner: string, capabilities: string): (() => void) | string {
    if (owner === '') return () => {};
    let sets = this.listening.get(owner);
    const open = sets?.get(capabilities) ?? 0;
    if (open === 0) {
      if ((sets?.size ?? 0) >= MAX_LISTENED_SETS_PER_CALLER) {
        return `This caller already listens with ${MAX_LISTENED_SETS_PER_CALLER} capability sets, the most Gatehouse holds for one caller on this upstream; listen with the capabilities of an open listen, or end one first`;
      }
      if (this.listenedSets >= MAX_LISTENED_SETS) return `Gatehouse holds ${MAX_LISTENED_SETS} listening sessions on this upstream, its most; try again later`;
      this.listenedSets++;
    }
    if (!sets) this.listening.set(owner, (sets = new Map()));
    sets.set(capabilities, open + 1);
    let counted = true;
    return () => {
      if (!counted) return;
      counted = false;
      const left = (sets.get(capabilities) ?? 1) - 1;
      if (left > 0) return void sets.set(capabilities, left);
      sets.delete(capabilities);
      this.listenedSets--;
      if (sets.size === 0 && this.listening.get(owner) === sets) this.listening.delete(owner);
    };
  }

  /**
   * An upstream that refuses the session's legacy version with a 2026-07-28 UnsupportedProtocolVersionError
   * (-32022 listing what it supports: versioning.mdx §Protocol Version Negotiation) is no longer the legacy
   * server it was found to be (upgraded in place): its verdict is dropped, so the next request probes it and
   * goes to it as it is, and so is the session, whose listens end and are asked again. Until 5 December every
   * call failed so until the verdict's re-probe, five minutes later. The server issued that session and may
   * still hold it (a deployment upgraded replica by replica, a server that dropped only this version): it is
   * DELETEd there, best effort, once the calls on it are over (giveUp). Until 5 December it was only forgotten.
   */
  private refusedVersion(session: LegacyClientSession, response: JsonRpcResponse): void {
    const error = response.error;
    if (error?.code !== ErrorCode.UnsupportedProtocolVersion || !Array.isArray((error.data as { supported?: unknown } | undefined)?.supported)) return;
    this.log.warn('upstream refused the legacy version it was found to speak; its era is probed again', { upstream: this.client.upstream, version: session.version });
    this.staleVerdict();
    this.sessions.giveUp(session);
  }

  /** A session ended (idle, or gone upstream): the listens on it end as a server ends them (subscriptions.mdx §Graceful Closure). */
  private sessionEnded(session: LegacyClientSession): void {
    const ends = this.listensOn.get(session);
    this.listensOn.delete(session);
    for (const end of ends ?? []) end();
    this.hubs.delete(session);
    this.working.delete(session);
  }

  private hubFor(session: LegacyClientSession): ListenHub {
    let hub = this.hubs.get(session);
    if (!hub) {
      hub = new ListenHub(this.client, () => this.sessions.headersFor(session), this.log, (forgotten) => (forgotten ? this.sessions.discard(session) : this.sessions.giveUp(session)), (request) => this.routeServerRequest(session, request));
      this.hubs.set(session, hub);
    }
    return hub;
  }

  /** 2026-07-28/server/discover.mdx: answered from the upstream's InitializeResult. */
  private discover(id: JsonRpcId): JsonRpcResponse {
    const init = this.profile().init;
    const capabilities = isObject(init.capabilities) ? { ...init.capabilities } : {};
    // Legacy core tasks are not the 2026 tasks extension (GATEWAY-REQUIREMENTS §16.1 "Impossible / lossy").
    delete capabilities.tasks;
    const result: Obj = { supportedVersions: [...MODERN_VERSIONS], capabilities };
    if (typeof init.instructions === 'string') result.instructions = init.instructions;
    return { jsonrpc: '2.0', id, result: toModernResult('server/discover', result, init.serverInfo, { ttlMs: 60_000, cacheScope: 'public' }) };
  }

  private async forward(signal: AbortSignal, request: JsonRpcRequest, channel: MessageSink, owner: string, retried = false): Promise<void> {
    const meta = isObject(request.params?._meta) ? request.params._meta : {};
    const capabilities = isObject(meta[META_CLIENT_CAPABILITIES]) ? meta[META_CLIENT_CAPABILITIES] : {};
    const logLevel = typeof meta[META_LOG_LEVEL] === 'string' ? meta[META_LOG_LEVEL] : undefined;
    let session: LegacyClientSession;
    try {
      session = await this.sessions.get(legacyCapabilitiesFrom(capabilities), owner);
    } catch (err) {
      // A pool with no room says nothing of the upstream's era; probing it again would start a child.
      if (!(err instanceof GatewayError && err.code === 'GW_ERR_SESSION_LIMIT')) this.staleVerdict();
      throw err;
    }
    const release = this.sessions.use(session, owner);
    let parked = false;
    try {
      parked = await this.send(signal, request, channel, owner, retried, { session, capabilities, logLevel, release });
    } finally {
      if (!parked) release();
    }
  }

  /** Sends one request on `session` and relays its answer; true when the call was parked for client input. */
  private async send(signal: AbortSignal, request: JsonRpcRequest, channel: MessageSink, owner: string, retried: boolean, on: { session: LegacyClientSession; capabilities: Obj; logLevel: string | undefined; release: () => void }): Promise<boolean> {
    const { session, capabilities, logLevel, release } = on;
    const meta = isObject(request.params?._meta) ? request.params._meta : {};
    if (logLevel !== undefined) await this.applyLogLevel(session, logLevel);
    const upstreamId = `gh-${++this.counter}`;
    const progress: ProgressMap = {};
    // A retry without requestState (after a URL elicitation) is a new request; legacy servers know neither field.
    const { inputResponses: _answers, requestState: _state, ...params } = stripModernRequestMeta(request.params) ?? {};
    const clientToken = (meta as { progressToken?: string | number }).progressToken;
    if (clientToken !== undefined) {
      // Many clients share one upstream session; tokens must be unique within it (basic/utilities/progress).
      progress.clientToken = clientToken;
      progress.upstreamToken = `${upstreamId}-progress`;
      params._meta = { ...(isObject(params._meta) ? params._meta : {}), progressToken: progress.upstreamToken };
    }
    const upstreamRequest = new AbortController();
    // Armed before the request goes: a legacy server answering with one JSON body runs the whole call
    // inside the POST, and a client that leaves meanwhile must stop it (streamable-http.mdx: closing a
    // modern request is its cancellation). Until it goes there is nothing upstream to cancel.
    let issued = false;
    this.cancelOnDisconnect(signal, session, upstreamId, upstreamRequest, () => issued);
    // A server request that names no call (a v1 server's server.listRoots(), say) goes on the session's GET
    // stream, and nowhere if none is open: the GET is held open while a call that may be asked something is
    // in flight, and such a request is this call's while it is the one call on the session (routeServerRequest).
    const unhold = MRTR_METHODS.has(request.method) && mayBeAsked(capabilities) ? await this.holdGetStream(session) : undefined;
    const inbox = new CallInbox(this.client.upstream, () =>
      this.log.warn('an upstream sent more notifications than a waiting call holds; the rest are dropped', { upstream: this.client.upstream, held: MAX_HELD_NOTIFICATIONS, method: request.method }),
    );
    const onSession = this.callsOn(session);
    onSession.add(inbox);
    let over = false;
    const finished = (): void => {
      if (over) return;
      over = true;
      onSession.delete(inbox);
      if (onSession.size === 0 && this.working.get(session) === onSession) this.working.delete(session);
      unhold?.();
    };
    let parked = false;
    try {
      // The client left while its session was being opened or readied: the call is not sent at all.
      if (signal.aborted) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'the client left before the request went upstream', this.client.upstream);
      issued = true;
      const replied = this.client.post({ jsonrpc: '2.0', id: upstreamId, method: request.method, params }, this.sessions.headersFor(session), upstreamRequest.signal);
      // A server that answers with one JSON body once the call is done may ask its question (on the GET
      // stream) before any answer comes: then the call is read at once, the answer's messages following.
      const first = await Promise.race([replied.then((reply) => ({ reply })), inbox.handedIn.then(() => undefined)]);
      const reply = first?.reply;
      if (reply !== undefined && reply.status >= 400 && session.id !== undefined && !retried && sessionUnknown(reply)) {
        // The upstream ended our session (a 404, or a 400 that says so: session-unknown.ts): open a new one
        // and send the request again, once. The request it answered is over: a cancellation names the one
        // sent again.
        issued = false;
        this.sessions.discard(session);
        release();
        await this.forward(signal, request, channel, owner, true);
        return false;
      }
      if (reply !== undefined && reply.status >= 400) {
        const upstreamError = await firstError(reply.messages);
        if (upstreamError) {
          this.refusedVersion(session, upstreamError);
          channel.finish(this.toClientResponse(request, upstreamError, session, capabilities));
          return false;
        }
        throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.client.upstream}" answered HTTP ${reply.status}`, this.client.upstream);
      }
      inbox.follow(
        replied.then((r) => r.messages),
        (ping) => void this.answerUpstream(session, { jsonrpc: '2.0', id: ping.id, result: {} }).catch((err: unknown) => this.log.warn('an answer to the upstream could not be sent', { method: 'ping', err })),
      );
      const callRelease = (): void => {
        finished();
        release();
      };
      parked = await this.pump(request, channel, { session, owner, release: callRelease, upstreamId, messages: inbox.messages(), progress, capabilities, logLevel, upstreamRequest });
      return parked;
    } finally {
      if (!parked) finished();
    }
  }

  /**
   * Holds the session's GET stream for a call (ListenHub.hold). Each held stream keeps one of the upstream's
   * pooled connections for as long as the calls on it last, and the calls' own requests need connections
   * too: past MAX_HELD_GET_STREAMS sessions at once, a call goes up without one, as before.
   */
  private async holdGetStream(session: LegacyClientSession): Promise<(() => void) | undefined> {
    const holding = this.heldOn.get(session) ?? 0;
    if (holding === 0 && this.heldOn.size >= MAX_HELD_GET_STREAMS) return undefined;
    this.heldOn.set(session, holding + 1);
    let unhold: (() => void) | undefined;
    try {
      unhold = await this.hubFor(session).hold();
    } finally {
      if (unhold === undefined) this.letGo(session);
    }
    return () => {
      unhold();
      this.letGo(session);
    };
  }

  private letGo(session: LegacyClientSession): void {
    const holding = (this.heldOn.get(session) ?? 1) - 1;
    if (holding > 0) this.heldOn.set(session, holding);
    else this.heldOn.delete(session);
  }

  /** The calls in flight on a session, each by the inbox its upstream messages come through. */
  private callsOn(session: LegacyClientSession): Set<CallInbox> {
    let calls = this.working.get(session);
    if (!calls) this.working.set(session, (calls = new Set()));
    return calls;
  }

  /**
   * A server request from the session's GET stream, which names no call: it goes to the call in flight when
   * there is exactly one (whose pump then relays or refuses it as it would one of its own stream); with
   * none or several it is refused (ListenHub), never guessed, as on a stdio child (stdio-messages.ts).
   */
  private routeServerRequest(session: LegacyClientSession, request: JsonRpcRequest): boolean {
    const calls = this.working.get(session);
    if (calls === undefined || calls.size !== 1) return false;
    for (const inbox of calls) return inbox.put(request);
    return false;
  }

  /**
   * Relays the upstream's messages for one call until its response, or until it needs client input; true
   * when the call was parked (it still holds its session until it is resumed and answered, or expires).
   */
  private async pump(request: JsonRpcRequest, channel: MessageSink, call: Omit<ParkedCall, 'pending' | 'asked' | 'method' | 'name' | 'expire'>): Promise<boolean> {
    for (;;) {
      const next = await call.messages.next();
      if (next.done) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.client.upstream}" ended the stream without answering`, this.client.upstream);
      const msg = next.value as JsonRpcMessage & { method?: string; id?: JsonRpcId; params?: Obj };
      if (msg.method === undefined) {
        if (msg.id === call.upstreamId) {
          this.refusedVersion(call.session, msg as JsonRpcResponse);
          channel.finish(this.toClientResponse(request, msg as JsonRpcResponse, call.session, call.capabilities));
          return false;
        }
        continue;
      }
      if (msg.id === undefined) {
        this.relayNotification(channel, msg, call);
        continue;
      }
      if (msg.method === 'ping') {
        await this.answerUpstream(call.session, { jsonrpc: '2.0', id: msg.id, result: {} });
        continue;
      }
      if (!MRTR_METHODS.has(request.method) || !declaresInput(call.capabilities, msg.method, msg.params)) {
        // Only input types this request declared may be asked for, and only on the requests that can
        // carry an InputRequiredResult; refuse the rest upstream.
        const refusal = msg.method === 'elicitation/create' ? { jsonrpc: '2.0' as const, id: msg.id, result: { action: 'cancel' } } : errorResponse(msg.id, ErrorCode.MethodNotFound, `The client did not declare support for ${msg.method}`);
        await this.answerUpstream(call.session, refusal);
        continue;
      }
      const key = `input-${msg.id}`;
      const nameField = NAME_FIELD[request.method];
      const asked = msg.method === 'elicitation/create' && msg.params?.mode === 'url' ? modernUrlElicitation(msg.params) : (msg.params ?? {});
      const requestState = this.parked.park({
        ...call,
        method: request.method,
        name: nameField ? request.params?.[nameField] : undefined,
        pending: new Map([[key, msg.id]]),
        asked: new Map([[key, { method: msg.method, params: asked }]]),
        expire: () => void this.abandon(call.session, call.upstreamId, msg.id!, call.upstreamRequest, msg.method!).finally(call.release),
      });
      // mrtr.mdx §InputRequiredResult: the client gathers the input and retries with inputResponses.
      channel.finish({ jsonrpc: '2.0', id: request.id, result: { resultType: 'input_required', inputRequests: { [key]: { method: msg.method, params: asked } }, requestState } });
      return true;
    }
  }

  /** The client's retry: hand its answers to the parked upstream call and keep relaying that call. */
  private async resume(signal: AbortSignal, request: JsonRpcRequest, channel: MessageSink, owner: string): Promise<void> {
    const params = request.params ?? {};
    const nameField = NAME_FIELD[request.method];
    // A requestState is bound to the caller that got it (mrtr.mdx §Security Considerations): another
    // caller presenting it is told it is invalid, and it stays parked for its owner.
    const call = this.parked.take(params.requestState as string, request.method, nameField ? params[nameField] : undefined, (c) => c.owner === owner);
    if (!call) {
      return channel.finish(errorResponse(request.id, ErrorCode.InvalidParams, 'requestState is invalid, expired or already used; send the request again without it'));
    }
    const responses = isObject(params.inputResponses) ? params.inputResponses : {};
    const missing = [...call.asked].filter(([key]) => !isObject(responses[key]));
    if (missing.length > 0) {
      // mrtr.mdx §Error Handling: a retry without every answer is asked again for what it lacks; the call
      // stays parked (under a new requestState) until the answers come or its wait runs out.
      const requestState = this.parked.park(call);
      return channel.finish({ jsonrpc: '2.0', id: request.id, result: { resultType: 'input_required', inputRequests: Object.fromEntries(missing), requestState } });
    }
    // From here the retry's client is the one whose leaving cancels the call.
    this.cancelOnDisconnect(signal, call.session, call.upstreamId, call.upstreamRequest);
    // From here the call answers the retry: its progress goes under the retry's own token, or nowhere when
    // it has none (utilities/progress.mdx: only tokens of active requests; the first request is over).
    const retryMeta = isObject(request.params?._meta) ? request.params._meta : {};
    const retryToken = (retryMeta as { progressToken?: string | number }).progressToken;
    call.progress.clientToken = retryToken;
    // mrtr.mdx §Server Requirements 6: what may be asked is what *this* request declares; a retry may declare
    // less than the first request did.
    call.capabilities = isObject(retryMeta[META_CLIENT_CAPABILITIES]) ? retryMeta[META_CLIENT_CAPABILITIES] : {};
    // logging.mdx §Per-request log level: so are the log messages it gets, by its own logLevel; a retry
    // naming none gets none, whatever the first request asked for.
    const logLevel = typeof retryMeta[META_LOG_LEVEL] === 'string' ? retryMeta[META_LOG_LEVEL] : undefined;
    call.logLevel = logLevel;
    let parked = false;
    try {
      // The session's level is set before the answers go up: what the server logs after them is at it.
      if (logLevel !== undefined) await this.applyLogLevel(call.session, logLevel);
      for (const [key, upstreamRequestId] of call.pending) {
        await this.answerUpstream(call.session, { jsonrpc: '2.0', id: upstreamRequestId, result: responses[key] as Obj });
      }
      parked = await this.pump(request, channel, call);
    } finally {
      if (!parked) call.release();
    }
  }

  /**
   * Legacy log levels are per session (logging/setLevel); modern ones per request. The session follows the
   * level of the latest request that names one; requests without one get no log messages at all. The level
   * is recorded once the upstream took it: recorded before (until 5 December), a refused setLevel left the
   * session at a level it never had, and no later request at that level asked again.
   */
  private async applyLogLevel(session: LegacyClientSession, level: string): Promise<void> {
    const capabilities = session.init.capabilities;
    if (!isObject(capabilities) || !isObject(capabilities.logging)) return;
    const asked = session.levelAsked;
    // Requests at a level being set wait for that answer, as one setLevel for them all.
    if (asked?.level === level) return void (await asked.answer);
    if (asked === undefined && session.logLevel === level) return;
    const answer = this.setLevel(session, level);
    const asking = { level, answer };
    session.levelAsked = asking;
    try {
      // Only the latest setLevel's answer says where the session is: an earlier one answered after it does not.
      if ((await answer) && session.levelAsked === asking) session.logLevel = level;
    } finally {
      if (session.levelAsked === asking) session.levelAsked = undefined;
    }
  }

  /** Sends logging/setLevel on the session; true when the upstream took it. */
  private async setLevel(session: LegacyClientSession, level: string): Promise<boolean> {
    const headers = this.sessions.headersFor(session);
    const reply = await this.client.post({ jsonrpc: '2.0', id: `gh-${++this.counter}`, method: 'logging/setLevel', params: { level } }, headers);
    let taken = reply.status < 400;
    for await (const m of answeringPings(reply.messages, (ping) => pong(this.client, headers, ping, this.log))) {
      if ('error' in m && m.error !== undefined) taken = false;
    }
    if (!taken) this.log.warn('upstream refused logging/setLevel; the next request at that level asks again', { upstream: this.client.upstream, level, status: reply.status });
    return taken;
  }

  private relayNotification(channel: MessageSink, msg: JsonRpcMessage & { method?: string; params?: Obj }, call: { progress: ProgressMap; logLevel?: string; session: LegacyClientSession }): void {
    if (msg.method === 'notifications/progress') {
      if (call.progress.upstreamToken === undefined || call.progress.clientToken === undefined || msg.params?.progressToken !== call.progress.upstreamToken) return;
      channel.push({ jsonrpc: '2.0', method: msg.method, params: { ...msg.params, progressToken: call.progress.clientToken } });
      return;
    }
    // logging.mdx §Per-request log level: without a logLevel the client gets no log messages, and with one
    // only those at or above it (the session's level is the latest request's, which may be lower).
    if (msg.method === 'notifications/message') {
      if (call.logLevel !== undefined && atOrAbove(msg.params?.level, call.logLevel)) channel.push(msg);
      return;
    }
    // List changes and resource updates belong to listen streams, wherever the upstream sent them.
    this.hubs.get(call.session)?.dispatch(msg);
  }

  private toClientResponse(request: JsonRpcRequest, upstream: JsonRpcResponse, session: LegacyClientSession, capabilities: Obj): JsonRpcResponse {
    if (upstream.error?.code === URL_ELICITATION_REQUIRED) return urlElicitationsFor(request, upstream.error, capabilities);
    if (upstream.error) {
      // Modern servers MUST NOT emit -32002 (resource not found is -32602 now: server/resources.mdx §Error Handling).
      const code = upstream.error.code;
      if (code === -32002) return { jsonrpc: '2.0', id: request.id, error: { ...upstream.error, code: ErrorCode.InvalidParams } };
      // -32020…-32099 are the modern protocol's own (GATEWAY-REQUIREMENTS §16.1: never emit one it does not
      // define): a legacy server's code there means something else, and is told as an internal error naming it.
      if (code <= -32020 && code >= -32099) {
        const data = isObject(upstream.error.data) ? upstream.error.data : upstream.error.data === undefined ? {} : { upstreamData: upstream.error.data };
        return { jsonrpc: '2.0', id: request.id, error: { code: ErrorCode.InternalError, message: upstream.error.message, data: { ...data, upstreamCode: code } } };
      }
      return { jsonrpc: '2.0', id: request.id, error: upstream.error };
    }
    const serverInfo = session.init.serverInfo;
    let legacy = upstream.result ?? {};
    if (request.method === 'tools/list') legacy = this.callableTools(legacy);
    const result = toModernResult(request.method, legacy, serverInfo, { ttlMs: 0, cacheScope: 'private' });
    return { jsonrpc: '2.0', id: request.id, result };
  }

  /**
   * A legacy tools/list page without the tools only a 2025-11-25 task may call (era-shapes.ts
   * withoutTaskOnlyTools), whose names are kept so a call naming one is refused here rather than sent.
   */
  private callableTools(result: Obj): Obj {
    const { result: callable, taskOnly } = withoutTaskOnlyTools(result);
    if (Array.isArray(callable.tools)) for (const tool of callable.tools) if (isObject(tool) && typeof tool.name === 'string') this.taskOnlyTools.delete(tool.name);
    for (const name of taskOnly) if (this.taskOnlyTools.size < MAX_TASK_ONLY_TOOLS) this.taskOnlyTools.add(name);
    return callable;
  }

  private async answerUpstream(session: LegacyClientSession, response: JsonRpcResponse): Promise<void> {
    const reply = await this.client.post(response, this.sessions.headersFor(session));
    for await (const _ of reply.messages) {
      // 202 expected; nothing to read
    }
  }

  /**
   * Closing a modern request's stream is its cancellation; legacy servers need notifications/cancelled, which
   * may only name a request that was sent (2025-11-25/basic/utilities/cancellation.mdx §Behavior Requirements
   * 1): `issued` says whether it was.
   */
  private cancelOnDisconnect(signal: AbortSignal, session: LegacyClientSession, upstreamId: string, upstreamRequest: AbortController, issued: () => boolean = () => true): void {
    const cancel = (): void => {
      upstreamRequest.abort();
      if (!issued()) return;
      void this.client
        .post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: upstreamId, reason: 'client closed the request' } }, this.sessions.headersFor(session))
        .then((r) => r.messages.return(), () => {});
    };
    onAbort(signal, cancel);
  }

  private async abandon(session: LegacyClientSession, upstreamId: string, serverRequestId: JsonRpcId, upstreamRequest: AbortController, method: string): Promise<void> {
    this.log.info('parked call expired without a retry', { upstreamId });
    // An elicitation can be cancelled; a sampling or roots request has no such answer, and gets an error.
    const answer: JsonRpcResponse = method === 'elicitation/create' ? { jsonrpc: '2.0', id: serverRequestId, result: { action: 'cancel' } } : errorResponse(serverRequestId, ErrorCode.InternalError, 'The client did not answer in time');
    await this.answerUpstream(session, answer).catch(() => {});
    await this.client.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: upstreamId, reason: 'input not provided in time' } }, this.sessions.headersFor(session)).catch(() => {});
    upstreamRequest.abort();
  }
}

async function firstError(messages: AsyncGenerator<JsonRpcMessage, void, void>): Promise<JsonRpcResponse | undefined> {
  for await (const m of messages) if ('error' in m && m.error) return m as JsonRpcResponse;
  return undefined;
}

