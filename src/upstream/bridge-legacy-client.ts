// A legacy client (2025-11-25 … 2024-11-05) in front of a modern upstream (GATEWAY-REQUIREMENTS §16.2).
// Gatehouse answers `initialize` from the upstream's DiscoverResult, holds the session (capabilities,
// client info, log level), sends each request upstream as a stateless modern request with the `_meta` and
// headers the session implies, and turns an InputRequiredResult into server-to-client requests on the
// legacy SSE stream, retrying upstream with the client's answers.

import { randomUUID } from 'node:crypto';
import { asGatewayError, duplicateId, failure, GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { addModernRequestMeta, isObject, legacyServerCapabilitiesFrom, modernCapabilitiesFrom, toLegacyResult, withLegacyOutputSchemas, withLegacyStructuredContent } from '../protocol/era-shapes.js';
import { coreTaskRefusal } from '../protocol/core-tasks.js';
import { describeValue } from '../protocol/describe.js';
import { encodeHeaderValue } from '../protocol/header-value.js';
import { ErrorCode, errorResponse, type JsonRpcId, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { MAX_RESOURCE_SUBSCRIPTIONS, META_SERVER_INFO, MODERN_ONLY_REQUESTS, META_SUBSCRIPTION_ID, NAME_FIELD } from '../protocol/methods.js';
import { negotiateLegacyVersion } from '../protocol/versions.js';
import { upstreamMessage } from '../protocol/trace-context.js';
import { acknowledgedUris } from '../protocol/answer-stream-rule.js';
import { GATEHOUSE_CLIENT_INFO, type UpstreamProfile } from './era-probe.js';
import type { Cancellation } from '../pipeline/cancellation.js';
import type { LegacyBridge, SubscriptionJudge, UpstreamMessages } from '../pipeline/ports.js';
import { BridgedSession, type SubscriptionVerdict } from './bridged-session.js';
import { resolveSession, sessionCapRefusal, SessionTable } from './session-table.js';
import type { CallContext } from '../pipeline/context.js';
import { CallStream } from '../pipeline/call-stream.js';
import { ACCEPTED, json, refused, type Outcome } from '../pipeline/outcome.js';
import { paramHeadersFor, readAnnotations } from '../protocol/param-headers.js';
import { setOwn, wireTable } from '../protocol/own-keys.js';

type Obj = Record<string, unknown>;

type UpstreamCapabilities = Record<string, { listChanged?: boolean; subscribe?: boolean } | undefined>;

/**
 * The upstream as the bridge serves it: its modern profile; undefined while its era is being found again (a
 * bridge saw it answer like another era, era-probe.ts EraVerdict.invalidate); 'other-era' once it was found
 * to be one this bridge does not serve (a modern server rolled back to a legacy one). Read anew each time:
 * the verdict changes under the bridge's sessions, whose GET streams reopen listens long after routing.
 */
export type BridgedProfile = (UpstreamProfile & { era: 'modern' }) | 'other-era' | undefined;

/** What the verdict `known` is to a legacy-client bridge that serves the modern upstreams `serves` accepts. */
export function bridgedProfile(known: UpstreamProfile | undefined, serves: (profile: UpstreamProfile & { era: 'modern' }) => boolean): BridgedProfile {
  if (known === undefined) return undefined;
  return known.era === 'modern' && serves(known) ? known : 'other-era';
}

/**
 * The requests the bridge answers itself that exist only where the server declared a capability
 * (2025-11-25 server/resources.mdx §Capabilities: `subscribe`; server/utilities/logging.mdx §Capabilities).
 */
const UPSTREAM_CAPABILITY_NEEDED: Readonly<Record<string, (capabilities: UpstreamCapabilities) => boolean>> = wireTable({
  'resources/subscribe': (c) => c.resources?.subscribe === true,
  'resources/unsubscribe': (c) => c.resources?.subscribe === true,
  'logging/setLevel': (c) => isObject(c.logging),
});

/** Input rounds one call may take before Gatehouse gives up (a server that never stops asking). */
const MAX_INPUT_ROUNDS = 10;
/** Pages of tools/list read to find a tool again after a -32020. */
const MAX_RELIST_PAGES = 10;
/** The pause before an upstream listen that ended is opened again; doubled while listens keep failing. */
const LISTEN_RETRY_MIN_MS = 1_000;
const LISTEN_RETRY_MAX_MS = 30_000;
/** A listen acknowledged this long before it ended ran: the next one starts the pauses afresh. */
const LISTEN_LIVED_MS = 10_000;
/**
 * A replacement listen the server did not take while the one it replaces was open is asked again, alone, this
 * long after that one was closed, doubling, at most REPLACE_TRIES times: the server frees the old listen's
 * place only once it has seen its connection close, which Gatehouse cannot see (measured: 10-20 ms on
 * loopback, one process serving both sides). Past the tries it is a failing listen (LISTEN_RETRY_MIN_MS...).
 */
const REPLACE_PAUSE_MS = 100;
const REPLACE_TRIES = 3;

/**
 * Waits out a replacement's pause (REPLACE_PAUSE_MS), then runs `resume`; the function it returns cancels the
 * wait. A timer, unless a test stands in to end the pause when what it tests has happened.
 */
export type ReplacePause = (resume: () => void, ms: number) => () => void;

const timedPause: ReplacePause = (resume, ms) => {
  const timer = setTimeout(resume, ms).unref();
  return () => clearTimeout(timer);
};
/**
 * How long a resources/subscribe waits for the acknowledgment of the listen that carries its URI before it is
 * answered with an error (the listen itself may be waiting out a reopen pause, or stuck upstream).
 */
const SUBSCRIBE_ACK_WAIT_MS = 5_000;

export class LegacyClientBridge implements LegacyBridge {
  private readonly sessions: SessionTable<BridgedSession>;
  private counter = 0;
  /** The rules that last judged the sessions' subscriptions, and when that judgement began (`performance.now()`). */
  private judged: { mayKeep: SubscriptionJudge; at: number } | undefined;

  constructor(
    private readonly client: UpstreamMessages,
    private readonly profile: () => BridgedProfile,
    private readonly limits: { max: number; idleTimeoutMs: number; inputTimeoutMs: number },
    private readonly staleVerdict: () => void,
    /** True when the upstream is reached over HTTP, where Mcp-Param-* headers apply. */
    private readonly http: boolean,
    private readonly log: Logger,
    private readonly replacePause: ReplacePause = timedPause,
  ) {
    this.sessions = new SessionTable(limits, (id, reason) => this.log.info('bridged session ended', { session: id.slice(0, 8), reason }));
  }

  async handle(ctx: CallContext): Promise<Outcome> {
    const message = ctx.message as (JsonRpcMessage & { method?: string }) | undefined;
    if (ctx.httpMethod === 'POST' && ctx.kind === 'request' && message?.method === 'initialize') return this.initialize(ctx);
    const found = resolveSession(this.sessions, ctx);
    if ('outcome' in found) return found.outcome;
    const session = found.session;
    if (ctx.httpMethod === 'GET') {
      const listen = session.openListenStream();
      void this.listenUpstream(session);
      return listen;
    }
    if (ctx.kind === 'response') {
      session.settleServerRequest(message as JsonRpcResponse);
      return ACCEPTED;
    }
    if (ctx.kind === 'notification') {
      if (message?.method === 'notifications/cancelled') session.cancel((message as { params?: { requestId?: JsonRpcId } }).params?.requestId);
      return ACCEPTED;
    }
    return this.request(ctx, session, upstreamMessage(ctx) as JsonRpcRequest);
  }

  async close(): Promise<void> {
    await this.sessions.closeAll();
  }

  /**
   * After a reload, each session's resource subscriptions judged again under the new rules (access rules
   * that now hide the URI, egress rules that now block it), one at a time so that a reload does not resolve
   * every session's hosts at once. One the rules no longer allow leaves the session's set and the listen
   * that carries the set is replaced without it, so the upstream stops watching it (for a server that
   * fetches the URI to watch it, a fetch the new egress rules forbid). Its client is told the one way a
   * 2025-11-25 server can tell it (server/resources.mdx §Subscriptions has no server-side unsubscribe): a
   * last `notifications/resources/updated`, whose read is now refused as a read of it by anyone would be,
   * so the client stops showing what it kept of it. Until 5 December the URI stayed in the set: the client
   * heard nothing more of it (access rules) or went on hearing of it and the upstream went on watching it
   * (egress rules, which leave the catalog and the listen as they were), and was never told.
   */
  async rejudgeSubscriptions(mayKeep: SubscriptionJudge): Promise<void> {
    this.judged = { mayKeep, at: performance.now() };
    for (const session of this.sessions.snapshot()) {
      const dropped: string[] = [];
      for (const uri of [...session.uris]) {
        if (await this.mayStillHold(session, uri, mayKeep)) continue;
        if (session.uris.delete(uri)) dropped.push(uri);
      }
      this.tookAway(session, dropped);
    }
  }

  /**
   * A subscribe that arrived before the latest judgement began (rejudgeSubscriptions) was let through by
   * older rules, and that judgement may have missed it (still in the old configuration's pipeline, its URI
   * not yet in the set): its URI is judged under the latest rules, and taken away as that judgement takes one
   * if they forbid it. Until 5 December it stayed in the set, the upstream watching it, until a later reload.
   */
  private async judgeLate(session: BridgedSession, uri: string, mayKeep: SubscriptionJudge): Promise<void> {
    if (await this.mayStillHold(session, uri, mayKeep)) return;
    if (session.uris.delete(uri)) this.tookAway(session, [uri]);
  }

  /** The session's subscriptions a reload's rules no longer allow, `dropped` from its set: the upstream and the client are told. */
  private tookAway(session: BridgedSession, dropped: readonly string[]): void {
    if (dropped.length === 0) return;
    this.log.info('a reload took resource subscriptions its rules no longer allow from a session', { upstream: this.client.upstream, session: session.id.slice(0, 8), dropped: dropped.length });
    if (!session.listening) return;
    // A listen open now is replaced; one being opened again (a reload's hand-over ends the open one, and
    // the bridge reopens it after a pause) carries the set as it is by then.
    if (session.upstreamListen !== undefined) void this.listenUpstream(session);
    for (const uri of dropped) session.notify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
  }

  /** Whether the session may keep `uri` (SubscriptionJudge); one that cannot be judged is not kept. */
  private async mayStillHold(session: BridgedSession, uri: string, mayKeep: SubscriptionJudge): Promise<boolean> {
    if (session.principal === undefined) return false;
    try {
      return await mayKeep(session.principal, uri, session.capabilities);
    } catch (err) {
      this.log.warn('a session\'s resource subscription could not be judged under the reloaded rules; it is dropped', { upstream: this.client.upstream, err });
      return false;
    }
  }

  /** 2025-11-25/basic/lifecycle.mdx §Initialization, answered from the upstream's server/discover result. */
  private initialize(ctx: CallContext): Outcome {
    const request = ctx.message as JsonRpcRequest;
    const params = request.params ?? {};
    let discover: Obj;
    try {
      discover = this.served().discover;
    } catch (err) {
      return refused(failure(err as GatewayError));
    }
    const version = negotiateLegacyVersion(params.protocolVersion);
    const serverMeta = isObject(discover._meta) ? discover._meta : {};
    const result: Obj = {
      protocolVersion: version,
      capabilities: legacyServerCapabilitiesFrom(isObject(discover.capabilities) ? discover.capabilities : {}),
      serverInfo: serverMeta[META_SERVER_INFO] ?? GATEHOUSE_CLIENT_INFO,
    };
    if (typeof discover.instructions === 'string') result.instructions = discover.instructions;
    // A session with a call in flight is never ended to make room: with one on every session, no new one.
    if (!this.sessions.makeRoom()) return refused(sessionCapRefusal(`Upstream "${this.client.upstream}" holds as many sessions as it may (sessions.max), each with a call in flight; retry later`));
    const id = this.sessions.newId();
    const capabilities = isObject(params.capabilities) ? params.capabilities : {};
    this.sessions.add(id, new BridgedSession(id, version, capabilities, params.clientInfo, ctx.principal));
    this.log.info('bridged session started', { session: id.slice(0, 8), version });
    return json({ jsonrpc: '2.0', id: request.id, result }, { 'mcp-session-id': id });
  }

  private request(ctx: CallContext, session: BridgedSession, request: JsonRpcRequest): Outcome | Promise<Outcome> {
    // Requests with no modern counterpart are answered by the session itself (GATEWAY-REQUIREMENTS §16.2).
    if (request.method === 'ping') return json({ jsonrpc: '2.0', id: request.id, result: {} });
    // 2025-11-25 core tasks have no modern counterpart, and the upstream could not tell whose a task is
    // (protocol/core-tasks.ts): refused, never sent up.
    const taskRefusal = coreTaskRefusal(request);
    if (taskRefusal !== undefined) return refused(taskRefusal);
    if (MODERN_ONLY_REQUESTS.has(request.method)) {
      // Not a method of the client's era: the modern server behind would serve it (a listen stream, its own
      // discover), so Gatehouse answers as a server of that era does (JSON-RPC 2.0 §5.1).
      return json(errorResponse(request.id, ErrorCode.MethodNotFound, `Method not found: ${request.method}`));
    }
    const lacking = UPSTREAM_CAPABILITY_NEEDED[request.method];
    if (lacking !== undefined && !lacking(capabilitiesOf(this.profile()))) {
      // The upstream did not declare what this request needs: to the client it is a method the server does
      // not have (-32601, as for any undeclared capability: 2025-11-25 server/utilities/completion.mdx §Error
      // Handling), never an empty success that says it subscribed, or set a level that nothing will honour.
      return json(errorResponse(request.id, ErrorCode.MethodNotFound, `Method not found: ${request.method} (the server did not declare the capability)`));
    }
    if (request.method === 'resources/subscribe' || request.method === 'resources/unsubscribe') {
      // 2026-07-28 replaced these RPCs with the listen filter: keep the set, and refilter the open listen.
      // The front door checked that `uri` is a string.
      const uri = request.params!.uri as string;
      if (request.method === 'resources/subscribe' && !session.uris.has(uri) && session.uris.size >= MAX_RESOURCE_SUBSCRIPTIONS) {
        // Each subscription is named in the upstream listen opened again for every change: unbounded, one
        // session's subscribes cost the upstream a listen of every URI so far, each time.
        return json(errorResponse(request.id, ErrorCode.InvalidParams, `This session holds ${MAX_RESOURCE_SUBSCRIPTIONS} resource subscriptions, the most Gatehouse keeps for one session; unsubscribe from one first`));
      }
      const added = request.method === 'resources/subscribe' && !session.uris.has(uri);
      if (request.method === 'resources/subscribe') session.uris.add(uri);
      else session.uris.delete(uri);
      const judged = this.judged;
      if (added && judged !== undefined && ctx.receivedAt < judged.at) void this.judgeLate(session, uri, judged.mayKeep);
      // Waiting registered before the listen goes up, so that its acknowledgment cannot pass it by.
      const verdict = added || (request.method === 'resources/subscribe' && session.subscribing(uri)) ? session.awaitSubscription(uri, SUBSCRIBE_ACK_WAIT_MS) : undefined;
      if (session.listening) {
        // While a replacement waits out its pause (the server had no room for it beside the listen it
        // replaces), the listen about to open carries this change: it reads the session's URIs as it goes up.
        // One opened now would be refused as that replacement was, the server not yet rid of the closed
        // listen's place, and taken for a failing upstream (a 1 s pause, doubling).
        if (session.replacing === undefined) void this.listenUpstream(session);
        else this.log.info('resources/subscribe or unsubscribe made while a replacement listen waits out its pause: the replacement carries it', { upstream: this.client.upstream, session: session.id.slice(0, 8) });
      } else if (added) void this.confirmWithoutStream(session);
      if (verdict !== undefined) return this.subscribed(session, request, uri, verdict);
      return json({ jsonrpc: '2.0', id: request.id, result: {} });
    }
    if (request.method === 'logging/setLevel') {
      session.logLevel = request.params!.level as string;
      return json({ jsonrpc: '2.0', id: request.id, result: {} });
    }
    // A cancellation names a request by its id alone: two in flight under one id could not be told apart
    // (2025-11-25/basic/index.mdx §Requests: an id is not used twice in a session).
    if (session.running(request.id)) return refused(duplicateId(request.id));
    const stream = new CallStream({ requestId: request.id, mode: 'call', acceptsSse: ctx.acceptsSse });
    if (session.cancelledBeforeArrival(request.id)) {
      // Its cancellation overtook it (BridgedSession.cancel): it is not sent, and ends as a cancelled call
      // does (see answer), once its stream is handed on: the edge drops the outcome of a call cancelled before
      // it came back.
      setImmediate(() => {
        ctx.cancel.cancel();
        stream.end();
      });
      return { kind: 'stream', stream };
    }
    void this.answer(ctx, session, request, stream);
    return { kind: 'stream', stream };
  }

  /**
   * The answer to a resources/subscribe once the listen carrying its URI was acknowledged: `{}` when the
   * acknowledgment names the URI, else an error, and the URI leaves the session's set (2026-07-28
   * basic/patterns/subscriptions.mdx §Acknowledgment: the server omits what it does not honour; a
   * 2025-11-25 client is told by the subscribe's error, server/resources.mdx §Error Handling). Until
   * 5 December it was `{}` at once, and a client whose URI the server left out believed it was subscribed and
   * heard nothing.
   */
  private async subscribed(session: BridgedSession, request: JsonRpcRequest, uri: string, pending: Promise<SubscriptionVerdict>): Promise<Outcome> {
    const verdict = await pending;
    if (verdict.honoured) return json({ jsonrpc: '2.0', id: request.id, result: {} });
    // Unsubscribed in the meantime: nothing to take back.
    if (session.uris.delete(uri) && verdict.unanswered === true && session.listening && session.upstreamListen !== undefined) {
      // No acknowledgment came in time, and the listen still on its way names the URI: it is asked anew without
      // it, so that the client does not hear of a subscription it was told failed.
      void this.listenUpstream(session);
    }
    this.log.info('resources/subscribe not honoured upstream', { upstream: this.client.upstream, code: verdict.code });
    return json(errorResponse(request.id, verdict.code, verdict.message, verdict.data));
  }

  private async answer(ctx: CallContext, session: BridgedSession, request: JsonRpcRequest, stream: CallStream): Promise<void> {
    const done = session.track(request.id);
    // A call cut at its deadline (timeouts.callMs) stops upstream as a cancelled one does.
    stream.onCut(() => done.cancel.cancel());
    try {
      await this.forward(ctx, session, request, stream, done.cancel);
    } catch (err) {
      if (done.cancel.aborted) {
        // Cancelled by the client: no response is sent for it (2025-11-25 utilities/cancellation.mdx §Behavior
        // Requirements), but the HTTP exchange itself must end, with nothing in it. The call is the client's
        // to drop: ended as if it had left (audited aborted, client_closed).
        ctx.cancel.cancel();
        stream.end();
        return;
      }
      stream.fail(asGatewayError(err, 'GW_ERR_UPSTREAM_BAD_RESPONSE', this.log, { upstream: this.client.upstream, callId: ctx.callId }));
    } finally {
      done.release();
    }
  }

  private async forward(ctx: CallContext, session: BridgedSession, request: JsonRpcRequest, channel: CallStream, cancel: Cancellation): Promise<void> {
    const profile = this.served();
    let extra: Obj = {};
    // utilities/progress.mdx: progress MUST increase with each notification. Each input round is a new
    // request upstream under the client's one token, and a stateless server may count from zero again.
    let lastProgress = -Infinity;
    /** Mcp-Param-* headers from a fresh list, once the upstream refused the route's with -32020. */
    let freshParams: Record<string, string> | undefined;
    for (let round = 0; round < MAX_INPUT_ROUNDS; round++) {
      // The client's notifications/cancelled ends the loop too: no further round goes up (GATEWAY-REQUIREMENTS
      // §16.2, cancellation: "abort any MRTR loop"). The answer's thrower below ends the exchange quietly.
      if (cancel.aborted) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'cancelled by the client', this.client.upstream);
      const upstreamId = `gh-${++this.counter}`;
      const params = addModernRequestMeta({ ...request.params, ...extra }, {
        version: profile.version,
        capabilities: modernCapabilitiesFrom(session.capabilities),
        clientInfo: session.clientInfo,
        logLevel: session.logLevel,
      });
      const headers = { ...modernHeaders(request, profile.version), ...(freshParams ?? this.paramHeaders(ctx, request)) };
      // Only the client's notifications/cancelled stops the upstream call (`cancel`). A legacy client's
      // disconnect is not a cancellation (2025-11-25/basic/transports.mdx §Sending Messages 6), while a
      // modern upstream reads a closed request as one: so the request runs on, and its answer is dropped.
      let response: JsonRpcResponse | undefined;
      // ctx.route: a catalog behind the bridge forwards to the route the stages judged (transports ignore it).
      const reply = await this.client.post({ jsonrpc: '2.0', id: upstreamId, method: request.method, params }, headers, cancel, ctx.principal, ctx.route);
      const status = reply.status;
      for await (const msg of reply.messages) {
        const m = msg as JsonRpcMessage & { method?: string; id?: JsonRpcId };
        if (m.method !== undefined) {
          // Progress and log messages related to this request go on its stream, as legacy servers do.
          if (m.id !== undefined) continue;
          if (m.method === 'notifications/progress') {
            const progress = (m as { params?: { progress?: unknown } }).params?.progress;
            if (typeof progress === 'number') {
              if (progress <= lastProgress) continue;
              lastProgress = progress;
            }
          }
          channel.push(m);
          continue;
        }
        if (m.id === upstreamId) response = m as JsonRpcResponse;
      }
      if (!response && status === 400) this.staleVerdict(); // a 400 without a modern error body: maybe no longer modern
      if (!response) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.client.upstream}" answered HTTP ${status} without a JSON-RPC response`, this.client.upstream);
      // The upstream no longer speaks the version it was found to speak (redeployed as a legacy server, or
      // as a newer one): this call fails with its error, and the next one probes again rather than waiting
      // for the verdict's periodic check.
      if (response.error?.code === ErrorCode.UnsupportedProtocolVersion) this.staleVerdict();
      if (response.error?.code === ErrorCode.HeaderMismatch && freshParams === undefined && this.http && request.method === 'tools/call') {
        // streamable-http.mdx §Client Behavior: a -32020 can mean the tool's x-mcp-header annotations
        // changed since it was listed; Gatehouse is the client here, so it lists again and sends the call
        // once more with the headers the tool now asks for (GATEWAY-REQUIREMENTS §16.2). The round is not spent.
        freshParams = await this.freshParamHeaders(request, profile.version, ctx);
        if (freshParams !== undefined) {
          round--;
          continue;
        }
      }
      if (response.error) return channel.finish(toLegacyError(request.id, response.error));
      const result = response.result ?? {};
      if (result.resultType !== undefined && result.resultType !== 'complete' && result.resultType !== 'input_required') {
        // basic/index.mdx §ResultType: a result type the client does not know is invalid (the bridge asks for
        // no extension that adds one), never a success with its fields stripped.
        throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.client.upstream}" answered with a result type Gatehouse does not know: ${describeValue(result.resultType)}`, this.client.upstream);
      }
      if (result.resultType !== 'input_required') return channel.finish({ jsonrpc: '2.0', id: request.id, result: toLegacyResult(this.legacyShaped(request.method, result)) });
      const gathered = await this.gatherInput(session, channel, result, cancel.signal);
      if ('refused' in gathered) {
        const { method, error } = gathered.refused;
        return channel.finish(errorResponse(request.id, ErrorCode.InternalError, `The client gave no answer to the server's ${method} (${error.message}), which this request needs`, { clientError: error }));
      }
      extra = gathered.extra;
    }
    channel.finish(errorResponse(request.id, ErrorCode.InternalError, `Upstream "${this.client.upstream}" asked for input more than ${MAX_INPUT_ROUNDS} times`));
  }

  /** What of a modern result a 2025-11-25 client cannot read, made readable (era-shapes.ts). */
  private legacyShaped(method: string, result: Obj): Obj {
    if (method === 'tools/list') return withLegacyOutputSchemas(this.withValidHeaders(result));
    if (method === 'tools/call') return withLegacyStructuredContent(result);
    return result;
  }

  /**
   * tools/list without the tools whose x-mcp-header annotations are invalid: an HTTP client of a modern
   * server MUST drop them (2026-07-28 server/tools.mdx §x-mcp-header), and Gatehouse is that client here.
   */
  private withValidHeaders(result: Obj): Obj {
    if (!Array.isArray(result.tools)) return result;
    const tools = (result.tools as unknown[]).filter((tool) => {
      const annotations = readAnnotations(isObject(tool) ? tool.inputSchema : undefined);
      if (!annotations.ok) this.log.warn('tool left out of the list: invalid x-mcp-header annotation', { upstream: this.client.upstream, tool: isObject(tool) ? tool.name : undefined, reason: annotations.reason });
      return annotations.ok;
    });
    return tools.length === result.tools.length ? result : { ...result, tools };
  }

  /** The modern upstream this bridge serves, or the failure of a call that needs it. */
  private served(): UpstreamProfile & { era: 'modern' } {
    const profile = this.profile();
    if (typeof profile === 'object') return profile;
    throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.client.upstream}" no longer answers as the 2026-07-28 server it was found to be; retry, or start a new session`, this.client.upstream);
  }

  /**
   * Feeds the session's GET stream from an upstream subscriptions/listen (GATEWAY-REQUIREMENTS §16.2
   * "Subscriptions ⇄ GET stream"). Filters are fixed per listen, so a change opens a new listen first and
   * then closes the old one, so that nothing goes unheard in between. That holds two of the server's listens
   * for a moment, and a server at its cap (the v2 SDK's `maxSubscriptions`) refuses the new one: it is then
   * asked again once the old one is closed (`session.replaceTries` counts those tries: REPLACE_PAUSE_MS), and what
   * changed in between is told as after any gap (catchUp). Until 5 December the refusal was taken for a
   * failing upstream: no listen for a pause that doubled with each change of filter (the client's fourth
   * subscribe in a row waited past its 5 s), and a change in that gap was never told. A change of filter
   * during that pause joins the replacement (`session.replacing`), which reads the session's URIs as it goes up.
   * One made while a retried replacement is in flight opens a listen of its own, whose refusal is a
   * replacement's too, but the tries go on counting until a listen is acknowledged: until 5 December each such
   * subscribe started them again (up to REPLACE_TRIES more), so a client subscribing on and on kept a refused
   * replacement asked again every few hundred milliseconds, never taken for the failing listen it was.
   */
  private async listenUpstream(session: BridgedSession): Promise<void> {
    const profile = this.profile();
    if (typeof profile !== 'object') {
      // Reopened on a timer, long after the call that routed here, the verdict may have changed: until
      // 5 December this read it as a modern one whatever it was, threw outside any handler, and the
      // unhandled rejection ended the process. Unknown (being found again): asked again after a pause.
      // Another era: requests under this session id now go past the bridge, so it serves nothing more; it is
      // ended, with its GET stream, and its client starts anew with the upstream as it now is.
      if (profile === 'other-era') this.sessions.end(session.id, 'unknown');
      else if (!session.upstreamListen && session.listening) this.reopenLater(session, false);
      return;
    }
    // Whoever opens (or closes) the session's listen now does what a replacement waiting out its pause would.
    if (session.replacing !== undefined) {
      session.replacing();
      session.replacing = undefined;
    }
    const caps = capabilitiesOf(profile);
    const notifications: Obj = {};
    if (caps.tools?.listChanged) notifications.toolsListChanged = true;
    if (caps.prompts?.listChanged) notifications.promptsListChanged = true;
    if (caps.resources?.listChanged) notifications.resourcesListChanged = true;
    if (caps.resources?.subscribe && session.uris.size > 0) notifications.resourceSubscriptions = [...session.uris];
    /** The URIs this listen asks for: their waiting subscribes are answered by its acknowledgment. */
    const asked = (notifications.resourceSubscriptions as string[] | undefined) ?? [];
    if (Object.keys(notifications).length === 0) {
      // Nothing the upstream declared could come on a listen (no listChanged, no subscription yet): none is
      // opened, or kept (the last URI unsubscribed). Until 5 December every GET stream held an empty listen
      // upstream, a connection and one of its `maxSubscriptions`, for as long as its client stayed. A
      // resources/subscribe opens one when it comes.
      const open = session.upstreamListen;
      session.upstreamListen = undefined;
      session.heardUris = undefined;
      session.unheard = false;
      open?.abort();
      return;
    }
    // A listen asking about subscribes made before the GET stream opened (confirmWithoutStream) is replaced as
    // an open listen is: closed once this one is answered, whose acknowledgment answers them too.
    const previous = session.upstreamListen ?? session.confirmation;
    const controller = new AbortController();
    session.upstreamListen = controller;
    const id = `gh-listen-${++this.counter}`;
    const params = addModernRequestMeta({ notifications }, { version: profile.version, capabilities: modernCapabilitiesFrom(session.capabilities), clientInfo: session.clientInfo });
    /** When the upstream took the listen (performance.now()). */
    let acknowledgedAt: number | undefined;
    /** The error the upstream refused the listen with. */
    let refusal: { code?: unknown } | undefined;
    try {
      // The listen it replaces ends once this one is answered, or failed: left open after a failure, nothing
      // would ever end it (the session knows only its newest listen), and its client would hear twice.
      const reply = await this.client
        .post({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params }, { 'mcp-protocol-version': profile.version, 'mcp-method': 'subscriptions/listen' }, controller.signal, session.principal)
        .finally(() => previous?.abort());
      for await (const msg of reply.messages) {
        const m = msg as { method?: string; params?: Obj; error?: { code?: unknown } };
        if (m.method === undefined) {
          // The listen's result: the upstream ended it gracefully; or its error: the upstream refused it.
          // A refused listen does not answer the subscribes it carried: the refusal may pass (this very listen
          // counted against the upstream's maxSubscriptions while the one it replaces was still open), and the
          // listen opened again after its pause carries them, its acknowledgment answering them (or their wait
          // running out: SUBSCRIBE_ACK_WAIT_MS).
          refusal = m.error;
          break;
        }
        if (m.method === 'notifications/subscriptions/acknowledged') {
          acknowledgedAt = performance.now();
          // The server had room for a listen: a later refused replacement has its tries afresh.
          session.replaceTries = 0;
          const honoured = acknowledgedUris(m.params?.notifications);
          // Judged before settleSubscriptions answers the waiting ones: only a URI its client was already told it holds can be withdrawn.
          const withdrawn = session.upstreamListen === controller && asked.length > 0 ? withdrawnUris(session, asked, honoured) : undefined;
          if (asked.length > 0) session.settleSubscriptions(asked, honoured);
          if (withdrawn !== undefined) this.withdraw(session, withdrawn);
          if (session.upstreamListen === controller) {
            if (session.unheard) this.catchUp(session, m.params?.notifications, honoured);
            session.unheard = false;
            session.heardUris = new Set(honoured);
          }
          continue;
        }
        session.notify({ jsonrpc: '2.0', method: m.method, params: withoutSubscriptionId(m.params) });
      }
    } catch (err) {
      if (!controller.signal.aborted) this.log.warn('upstream listen failed', { err });
    }
    // Ended by the upstream while the client still listens: reopen after a pause, and let the client refetch.
    // A listen that never got going (refused with an error, failed, ended before its acknowledgment or within
    // LISTEN_LIVED_MS of it) doubles the pause, up to LISTEN_RETRY_MAX_MS: asked again every second, an
    // upstream past its limit of listens (the v2 SDK's maxSubscriptions) would refuse every second for as long
    // as the client stays, and one that acknowledges and ends at once (until 4 December taken for a listen
    // that ran) had its listen reopened, and the client told to refetch every list, every second.
    if (session.upstreamListen === controller && !controller.signal.aborted && session.listening) {
      session.upstreamListen = undefined;
      // Nothing feeds the GET stream until the next listen is acknowledged.
      session.unheard = true;
      const replaceTry = session.replaceTries;
      if (acknowledgedAt === undefined && (previous !== undefined || replaceTry > 0) && replaceTry < REPLACE_TRIES) {
        // A replacement that did not get going while the listen it replaces was open, which is closed now
        // (above): the server may have room for one listen of this session, not two. Asked again alone, once
        // the server has had the time to see the old one close; not the pause of a failing upstream.
        if (replaceTry === 0) this.log.info('upstream did not take the listen that replaces the open one; asking again once that one is closed', { upstream: this.client.upstream, code: refusal?.code });
        session.replaceTries = replaceTry + 1;
        session.replacing = this.replacePause(() => {
          session.replacing = undefined;
          if (session.listening && !session.upstreamListen) void this.listenUpstream(session);
        }, REPLACE_PAUSE_MS * 2 ** replaceTry);
        return;
      }
      if (refusal !== undefined) this.log.warn('upstream refused the listen', { upstream: this.client.upstream, code: refusal.code });
      this.reopenLater(session, acknowledgedAt !== undefined && performance.now() - acknowledgedAt >= LISTEN_LIVED_MS);
    }
  }

  /**
   * Subscriptions the upstream no longer honours though its client was told it held them: a later listen's
   * acknowledgment left them out (the server honours less after a filter change, basic/patterns/subscriptions.mdx
   * §Acknowledgment). 2025-11-25 has no unsubscribe from the server (server/resources.mdx §Subscriptions): its
   * client is told the way a reload's dropped subscription is (rejudgeSubscriptions), one last
   * `notifications/resources/updated`, so that it reads again and may subscribe again, and the URI leaves the
   * session's set. Until 5 December the URI stayed in the set, asked for by every listen and left out of every
   * acknowledgment, and its client believed it was subscribed and never heard of it again.
   */
  private withdraw(session: BridgedSession, withdrawn: readonly string[]): void {
    if (withdrawn.length === 0) return;
    this.log.info('upstream listen no longer honours resource subscriptions its client holds; they are dropped', { upstream: this.client.upstream, session: session.id.slice(0, 8), dropped: withdrawn.length });
    for (const uri of withdrawn) {
      session.uris.delete(uri);
      session.notify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
    }
  }

  /**
   * A listen acknowledged after a time when none fed the GET stream (the upstream ended the last one, or a
   * replacement had to wait for the old one to close): whatever changed meanwhile went unheard, and cannot be replayed, so
   * the client is told to refetch each list the new listen covers (GATEWAY-REQUIREMENTS §16.2) and to read
   * again each resource it was already hearing of and still does (`notifications/resources/updated`: a read
   * that finds nothing new costs the client one request; a change never told leaves it stale).
   */
  private catchUp(session: BridgedSession, filter: unknown, honoured: readonly string[]): void {
    for (const method of listsCovered(filter)) session.notify({ jsonrpc: '2.0', method, params: {} });
    const heard = session.heardUris;
    if (heard === undefined) return;
    for (const uri of honoured) if (heard.has(uri)) session.notify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
  }

  /**
   * Answers the subscribes a client made with no GET stream open: a short upstream listen asks for their URIs
   * alone and ends at its acknowledgment, which answers them as a GET stream's listen would (subscribed). The
   * URIs stay in the session's set, and the listen its GET stream opens carries them. Until 5 December such a
   * subscribe was `{}` at once, unasked: a URI the server then left out of that listen's acknowledgment, or a
   * listen it refused (past its `maxSubscriptions`), left the client believing it was subscribed, hearing
   * nothing. One such listen per session at a time; subscribes that come while it asks are asked next.
   */
  private async confirmWithoutStream(session: BridgedSession): Promise<void> {
    if (session.confirmation !== undefined) return;
    // Bounded: each round answers every subscribe it asked about, and a session holds at most
    // MAX_RESOURCE_SUBSCRIPTIONS URIs.
    for (let round = 0; round <= MAX_RESOURCE_SUBSCRIPTIONS; round++) {
      // The GET stream opened meanwhile: its listen carries them, and its acknowledgment answers them.
      if (session.listening) return;
      const asked = session.awaitedUris();
      if (asked.length === 0) return;
      const controller = new AbortController();
      session.confirmation = controller;
      try {
        await this.confirmOnce(session, asked, controller.signal);
      } finally {
        controller.abort();
        if (session.confirmation === controller) session.confirmation = undefined;
      }
    }
  }

  /** One listen asking for `asked` only, until its acknowledgment (SUBSCRIBE_ACK_WAIT_MS at most). */
  private async confirmOnce(session: BridgedSession, asked: string[], signal: AbortSignal): Promise<void> {
    const profile = this.profile();
    if (typeof profile !== 'object') return session.refuseSubscriptions(asked, `Upstream "${this.client.upstream}" is not known to be the 2026-07-28 server it was found to be; subscribe again`);
    const id = `gh-confirm-${++this.counter}`;
    const params = addModernRequestMeta({ notifications: { resourceSubscriptions: asked } }, { version: profile.version, capabilities: modernCapabilitiesFrom(session.capabilities), clientInfo: session.clientInfo });
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(SUBSCRIBE_ACK_WAIT_MS)]);
    let why = `Upstream "${this.client.upstream}" ended the listen that would carry the subscription before acknowledging it`;
    try {
      const reply = await this.client.post({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params }, { 'mcp-protocol-version': profile.version, 'mcp-method': 'subscriptions/listen' }, deadline, session.principal);
      for await (const msg of reply.messages) {
        const m = msg as { method?: string; params?: Obj; error?: { code?: unknown; message?: unknown } };
        if (m.method === 'notifications/subscriptions/acknowledged') return session.settleSubscriptions(asked, acknowledgedUris(m.params?.notifications));
        if (m.method !== undefined) continue;
        if (m.error !== undefined) why = `Upstream "${this.client.upstream}" refused the listen that would carry the subscription: ${describeValue(typeof m.error.message === 'string' ? m.error.message : m.error.code)}`;
        break;
      }
    } catch (err) {
      // Replaced by the GET stream's listen, which answers them, or the session ended, which did.
      if (signal.aborted) return;
      if (deadline.aborted) why = `Upstream "${this.client.upstream}" did not acknowledge the listen that would carry the subscription within ${SUBSCRIBE_ACK_WAIT_MS / 1000} s`;
      else {
        this.log.warn('upstream listen failed', { err });
        why = `Upstream "${this.client.upstream}" could not be asked to carry the subscription`;
      }
    }
    // The GET stream opened meanwhile, and its listen, which carries them, may be what took this one's place
    // at the server: its acknowledgment answers them (or their wait runs out), not this refusal.
    if (session.listening) return;
    session.refuseSubscriptions(asked, why);
  }

  /** Opens the session's listen again after a pause: the shortest after one that `lived`, else doubling. */
  private reopenLater(session: BridgedSession, lived: boolean): void {
    const pause = lived ? LISTEN_RETRY_MIN_MS : (session.listenRetryMs ?? LISTEN_RETRY_MIN_MS);
    session.listenRetryMs = lived ? undefined : Math.min(LISTEN_RETRY_MAX_MS, pause * 2);
    setTimeout(() => {
      if (session.listening && !session.upstreamListen) void this.listenUpstream(session);
    }, pause).unref();
  }

  /**
   * Mcp-Param-* headers a modern upstream expects for this tool call (tools.mdx §x-mcp-header), from the
   * annotations the resolve stage found. Only HTTP upstreams take them (stdio MAY ignore them).
   */
  private paramHeaders(ctx: CallContext, request: JsonRpcRequest): Record<string, string> {
    if (!this.http || request.method !== 'tools/call' || ctx.route === undefined) return {};
    return paramHeadersFor(ctx.route.params, request.params?.arguments);
  }

  /**
   * The Mcp-Param-* headers of the called tool as a fresh tools/list describes it (a few pages at most);
   * undefined when the list cannot be read, does not show the tool, or its annotations are invalid.
   */
  private async freshParamHeaders(request: JsonRpcRequest, version: string, ctx: CallContext): Promise<Record<string, string> | undefined> {
    const name = request.params?.name;
    let cursor: string | undefined;
    for (let page = 0; page < MAX_RELIST_PAGES; page++) {
      const params = addModernRequestMeta(cursor !== undefined ? { cursor } : {}, { version, capabilities: {}, clientInfo: GATEHOUSE_CLIENT_INFO });
      const id = `gh-relist-${++this.counter}`;
      let result: Obj | undefined;
      try {
        const reply = await this.client.post({ jsonrpc: '2.0', id, method: 'tools/list', params }, { 'mcp-protocol-version': version, 'mcp-method': 'tools/list' }, undefined, ctx.principal);
        for await (const m of reply.messages) if ('id' in m && m.id === id && 'result' in m) result = m.result as Obj;
      } catch {
        return undefined;
      }
      if (result === undefined) return undefined;
      const tool = Array.isArray(result.tools) ? (result.tools as unknown[]).find((t) => isObject(t) && t.name === name) : undefined;
      if (isObject(tool)) {
        const annotations = readAnnotations(tool.inputSchema);
        return annotations.ok ? paramHeadersFor(annotations.headers, request.params?.arguments) : undefined;
      }
      if (typeof result.nextCursor !== 'string') return undefined;
      cursor = result.nextCursor;
    }
    return undefined;
  }

  /**
   * mrtr.mdx, seen from a legacy client: each input request becomes a server-to-client request on this POST's
   * SSE stream (2025-11-25/basic/transports.mdx §Sending Messages 6); the answers go back as inputResponses.
   */
  private async gatherInput(session: BridgedSession, channel: CallStream, result: Obj, signal: AbortSignal): Promise<{ extra: Obj } | { refused: { method: string; error: NonNullable<JsonRpcResponse['error']> } }> {
    const inputRequests = isObject(result.inputRequests) ? result.inputRequests : {};
    const inputResponses: Obj = {};
    for (const [key, req] of Object.entries(inputRequests)) {
      // Cancelled while an earlier question was out: the rest are not asked.
      if (signal.aborted) break;
      if (!isObject(req) || typeof req.method !== 'string') continue;
      const id = `gh-s-${++this.counter}`;
      const answer = session.awaitServerRequest(id, this.limits.inputTimeoutMs, signal);
      const params = isObject(req.params) ? req.params : {};
      // A 2025-11-25 URL elicitation names itself (elicitationId, required there); a modern one has no id.
      const asked = req.method === 'elicitation/create' && params.mode === 'url' && params.elicitationId === undefined ? { ...params, elicitationId: randomUUID() } : params;
      if (!channel.push({ jsonrpc: '2.0', id, method: req.method, params: asked })) {
        session.abandonServerRequest(id, 'no stream to ask on');
        throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'The upstream needs client input, but this request cannot carry server requests (send Accept: text/event-stream)', this.client.upstream);
      }
      const { response, abandoned } = await answer;
      // Gatehouse stopped waiting (no answer in time, the call cancelled or cut): the client's handler (a form
      // before its user, a sampling approval) would otherwise wait on, and its answer go nowhere. A sender that
      // stops waiting SHOULD cancel its request (2025-11-25/basic/lifecycle.mdx §Timeouts): on the call's stream,
      // before its end, or on the GET stream once the call's is over (cut at its deadline).
      if (abandoned !== undefined) {
        const cancelled = { jsonrpc: '2.0' as const, method: 'notifications/cancelled', params: { requestId: id, reason: abandoned } };
        if (!channel.push(cancelled)) session.notify(cancelled);
      }
      if (signal.aborted) break;
      // A client error (or no answer in time) has no MRTR slot (GATEWAY-REQUIREMENTS §16.2 "Impossible /
      // lossy"). Left out, the server would ask the same again (mrtr.mdx §Error Handling), and be refused alike
      // round after round: the refusal ends the call instead.
      if (response.error !== undefined || response.result === undefined) {
        return { refused: { method: req.method, error: response.error ?? { code: ErrorCode.InternalError, message: 'no result' } } };
      }
      setOwn(inputResponses, key, response.result);
    }
    return { extra: { inputResponses, ...(typeof result.requestState === 'string' ? { requestState: result.requestState } : {}) } };
  }
}

/** The upstream's capabilities, from its discover result (none while it is not known to be modern). */
function capabilitiesOf(profile: BridgedProfile): UpstreamCapabilities {
  const discover = typeof profile === 'object' ? profile.discover : undefined;
  return (isObject(discover?.capabilities) ? discover.capabilities : {}) as UpstreamCapabilities;
}

/**
 * The URIs of `asked` that its acknowledgment left out, the session still holds, and no subscribe waits for:
 * confirmed to the client earlier (a waiting one is answered by the acknowledgment itself: subscribed).
 */
function withdrawnUris(session: BridgedSession, asked: readonly string[], honoured: readonly string[]): string[] {
  const withdrawn: string[] = [];
  for (const uri of asked) if (!honoured.includes(uri) && session.uris.has(uri) && !session.subscribing(uri)) withdrawn.push(uri);
  return withdrawn;
}

/** The list_changed notifications for the lists an acknowledged filter covers. */
function listsCovered(filter: unknown): string[] {
  if (!isObject(filter)) return [];
  return (['tools', 'prompts', 'resources'] as const).filter((kind) => filter[`${kind}ListChanged`] === true).map((kind) => `notifications/${kind}/list_changed`);
}

/** Headers every modern POST carries (streamable-http.mdx §Protocol Version Header, §Standard Request Headers). */
function modernHeaders(request: JsonRpcRequest, version: string): Record<string, string> {
  const headers: Record<string, string> = { 'mcp-protocol-version': version, 'mcp-method': request.method };
  const field = NAME_FIELD[request.method];
  const name = field ? request.params?.[field] : undefined;
  if (typeof name === 'string') headers['mcp-name'] = encodeHeaderValue(name);
  return headers;
}

/** Modern-only errors told in legacy terms; the rest pass as they are. */
function toLegacyError(id: JsonRpcId, error: NonNullable<JsonRpcResponse['error']>): JsonRpcResponse {
  if (error.code === ErrorCode.MissingClientCapability) {
    return errorResponse(id, ErrorCode.InvalidParams, `The server needs a client capability this session did not declare: ${error.message}`, error.data);
  }
  return { jsonrpc: '2.0', id, error };
}

function withoutSubscriptionId(params: Obj | undefined): Obj {
  if (!params || !isObject(params._meta)) return params ?? {};
  const meta: Obj = { ...params._meta };
  delete meta[META_SUBSCRIPTION_ID];
  const out: Obj = { ...params };
  if (Object.keys(meta).length === 0) delete out._meta;
  else out._meta = meta;
  return out;
}
