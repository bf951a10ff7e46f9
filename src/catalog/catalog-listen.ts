// subscriptions/listen over several upstreams (2026-07-28/basic/patterns/subscriptions.mdx): one listen per
// upstream that can honour part of the filter, one acknowledgement with the union of what they honour, and
// their notifications relayed under the client's subscription id. A list change also tells the catalog
// (so cached lists are dropped).

import type { Principal } from '../pipeline/principal.js';
import type { Logger } from '../log/logger.js';
import { ErrorCode, errorResponse, type JsonRpcMessage, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { MAX_RESOURCE_SUBSCRIPTIONS, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SUBSCRIPTION_ID } from '../protocol/methods.js';
import { wireTable } from '../protocol/own-keys.js';
import { MODERN_VERSIONS } from '../protocol/versions.js';
import type { UpstreamReply } from '../pipeline/ports.js';
import type { ModernMember } from '../pipeline/ports.js';
import { CallStream } from '../pipeline/call-stream.js';
import { onAbort } from '../pipeline/cancellation.js';
import { listenCarries } from '../protocol/answer-stream-rule.js';

type Obj = Record<string, unknown>;
type Filter = { toolsListChanged?: boolean; promptsListChanged?: boolean; resourcesListChanged?: boolean; resourceSubscriptions?: string[] };

const LIST_CHANGED: Readonly<Record<string, 'tools' | 'prompts' | 'resources'>> = wireTable({
  'notifications/tools/list_changed': 'tools',
  'notifications/prompts/list_changed': 'prompts',
  'notifications/resources/list_changed': 'resources',
});

/** First and longest wait before a member that was down when the listen opened is tried again. */
const LATE_RETRY_FIRST_MS = 1_000;
const LATE_RETRY_MAX_MS = 30_000;
const LATE_KINDS = [['toolsListChanged', 'tools'], ['promptsListChanged', 'prompts'], ['resourcesListChanged', 'resources']] as const;

export function fanOutListen(
  request: JsonRpcRequest,
  members: readonly ModernMember[],
  ownerOf: (uri: string) => ModernMember | undefined,
  onListChanged: (member: ModernMember, kind: 'tools' | 'prompts' | 'resources') => void,
  signal: AbortSignal | undefined,
  log: Logger,
  /** Whether the caller may use a resource; updates about other URIs are not reported. */
  mayUse: (uri: string) => boolean = () => true,
  /** The caller; members that hold sessions (legacy ones) listen in the caller's own session. */
  principal?: Principal,
  /** Whether a URI asked for is subscribed to at all (else honoured by none); by default, when it may be used. */
  maySubscribe: (uri: string) => boolean = mayUse,
): UpstreamReply {
  const queue = new CallStream({ requestId: request.id, mode: 'call', acceptsSse: true });
  const asked = ((request.params?.notifications as Filter | undefined) ?? {}) as Filter;
  const requested: Filter = asked.resourceSubscriptions ? { ...asked, resourceSubscriptions: [...new Set(asked.resourceSubscriptions)].slice(0, MAX_RESOURCE_SUBSCRIPTIONS).filter((u) => typeof u === 'string' && maySubscribe(u)) } : asked;
  const upstreamStops: AbortController[] = [];
  /** What the acknowledgment promised: the union of what the members that took the listen honour. */
  const honoured: Filter = {};
  /** Set when the client's listen ends: members still down are no longer tried. */
  let stopped = false;
  const stopAll = (): void => {
    stopped = true;
    upstreamStops.forEach((c) => c.abort());
  };
  queue.onClose(stopAll);
  onAbort(signal, stopAll);
  type Opened = { member: ModernMember; messages: AsyncGenerator<JsonRpcMessage, void, void>; honours: Filter };
  /**
   * Whether the client's filter asked for a notification (protocol/answer-stream-rule.ts: only the types
   * asked for, never a member's requests, progress or log messages); a resource update also needs a URI
   * the caller may use. The client's acknowledgment is the fan-out's own: a member's second one is dropped.
   */
  const asksFor = (method: string, params: Obj | undefined): boolean =>
    method !== 'notifications/subscriptions/acknowledged' && listenCarries(method, requested) && (method !== 'notifications/resources/updated' || (typeof params?.uri === 'string' && mayUse(params.uri)));
  const filterFor = (member: ModernMember): Filter => {
    // Resource subscriptions go to the upstream that listed the URI; unknown URIs to every upstream (only
    // where no access rule governs resources: catalog.ts listen keeps them out otherwise).
    const uris = (requested.resourceSubscriptions ?? []).filter((u) => {
      const owner = ownerOf(u);
      return owner === undefined || owner === member;
    });
    return { ...requested, ...(requested.resourceSubscriptions ? { resourceSubscriptions: uris } : {}) };
  };
  const open = async (member: ModernMember, filter: Filter): Promise<Opened | undefined> => {
    const face = await member.modernFace();
    // The client left while the member was being reached: nothing is opened. (A listen posted with a
    // signal that had already fired was never told to stop, since an abort listener added then is never
    // called, and the member held it, and the client's whole exchange with it, for good.)
    if (stopped) return undefined;
    const stop = new AbortController();
    upstreamStops.push(stop);
    const params = { ...request.params, notifications: filter, _meta: { [META_PROTOCOL_VERSION]: MODERN_VERSIONS[0], [META_CLIENT_CAPABILITIES]: {}, ...((request.params?._meta as Obj | undefined) ?? {}) } };
    const headers: Record<string, string> = face.http ? { 'mcp-protocol-version': MODERN_VERSIONS[0], 'mcp-method': 'subscriptions/listen' } : {};
    try {
      const reply = await face.messages.post({ jsonrpc: '2.0', id: `${String(request.id)}:${member.name}`, method: 'subscriptions/listen', params }, headers, stop.signal, principal);
      const first = await reply.messages.next();
      const ack = first.done ? undefined : (first.value as { method?: string; params?: { notifications?: Filter } });
      if (ack?.method !== 'notifications/subscriptions/acknowledged') return undefined;
      return { member, messages: reply.messages, honours: ack.params?.notifications ?? {} };
    } catch (err) {
      // A try that failed leaves nothing to stop: a listen held for days must not keep one per try.
      upstreamStops.splice(upstreamStops.indexOf(stop), 1);
      throw err;
    }
  };

  /** Tries a member that was down again, backing off, until it listens or the client's listen ends. */
  const retryLate = async (member: ModernMember, relay: (opened: Opened) => Promise<void>): Promise<void> => {
    for (let delay = LATE_RETRY_FIRST_MS; !stopped; delay = Math.min(delay * 2, LATE_RETRY_MAX_MS)) {
      await new Promise((r) => setTimeout(r, delay).unref());
      if (stopped) return;
      let opened: Opened | undefined;
      try {
        opened = await open(member, filterFor(member));
      } catch {
        continue; // still down
      }
      if (!opened || stopped) return;
      // Its items join the lists whether or not it announces its own changes: each list the client asked
      // about and was promised (the acknowledgment) or the member now promises is told of once.
      for (const [flag, kind] of LATE_KINDS) {
        if (!requested[flag] || !(honoured[flag] || opened.honours[flag])) continue;
        onListChanged(member, kind);
        queue.push({ jsonrpc: '2.0', method: `notifications/${kind}/list_changed`, params: { _meta: { [META_SUBSCRIPTION_ID]: request.id } } });
      }
      return relay(opened);
    }
  };

  void (async () => {
    const streams: Opened[] = [];
    const down: ModernMember[] = [];
    await Promise.all(
      members.map(async (member) => {
        // A filter that cannot be split (not past the front door's checks) fails the whole listen, below.
        const filter = filterFor(member);
        try {
          const opened = await open(member, filter);
          if (!opened) return;
          mergeFilter(honoured, opened.honours);
          streams.push(opened);
        } catch (err) {
          down.push(member);
          log.warn('an upstream could not open its listen; it is tried again while the client listens', { upstream: member.name, err });
        }
      }),
    );
    // subscriptions.mdx §Acknowledgment: the first message carries the honoured subset.
    queue.push({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { [META_SUBSCRIPTION_ID]: request.id }, notifications: honoured } });
    // The first upstream whose listen ends (its result, or a break) ends the client's: the acknowledgment
    // promised its notifications, and a listen that went on without them would promise falsely. The client
    // listens again (subscriptions.mdx §Graceful Closure), and gets every upstream's again.
    // (No upstream listening: there is nothing to wait for; the listen ends at once.)
    if (streams.length > 0) {
      let ended!: () => void;
      const anyEnded = new Promise<void>((r) => (ended = r));
      const relay = async ({ member, messages }: Opened): Promise<void> => {
        let strays = 0;
        try {
          for await (const m of messages) {
            const msg = m as { id?: unknown; method?: string; params?: Obj };
            if (msg.method === undefined) return; // that upstream ended its listen
            const kind = LIST_CHANGED[msg.method];
            // The catalog hears every list change (its cached lists), asked for or not.
            if (kind && msg.id === undefined) onListChanged(member, kind);
            if (msg.id !== undefined || !asksFor(msg.method, msg.params)) {
              if (strays++ === 0) log.warn('an upstream sent a message the client\'s listen did not ask for; such messages are dropped', { upstream: member.name, method: msg.method.slice(0, 100) });
              continue;
            }
            const meta = { ...((msg.params?._meta as Obj | undefined) ?? {}), [META_SUBSCRIPTION_ID]: request.id };
            queue.push({ jsonrpc: '2.0', method: msg.method, params: { ...(msg.params ?? {}), _meta: meta } });
          }
        } catch (err) {
          if (!stopped) log.info('an upstream ended its listen; the client\'s listen ends so that it listens again', { upstream: member.name, err });
        } finally {
          ended();
        }
      };
      streams.forEach((s) => void relay(s));
      // A member down now is tried again while the client listens: when it comes up, its items join the
      // lists (a change the client is told of, tools.mdx §List Changed Notification), and its own changes
      // are relayed from then on. Until 4 December it was tried once, and a member that came up later was
      // never heard.
      for (const member of down) void retryLate(member, relay);
      await anyEnded;
    }
    stopAll();
    queue.finish({ jsonrpc: '2.0', id: request.id, result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: request.id } } });
  })().catch((err: unknown) => {
    // Nothing above should throw; if something does, this listen ends with an error of its own instead of
    // the rejection ending the process (a non-array resourceSubscriptions once did, before the front door
    // checked its type).
    log.error('a listen across upstreams failed; it ends', { err });
    stopAll();
    queue.finish(errorResponse(request.id, ErrorCode.InternalError, 'Gatehouse could not keep this listen open; listen again'));
  });
  return { status: 200, headers: {}, messages: queue.messages() };
}

function mergeFilter(into: Filter, more: Filter): void {
  if (more.toolsListChanged) into.toolsListChanged = true;
  if (more.promptsListChanged) into.promptsListChanged = true;
  if (more.resourcesListChanged) into.resourcesListChanged = true;
  if (more.resourceSubscriptions?.length) into.resourceSubscriptions = [...new Set([...(into.resourceSubscriptions ?? []), ...more.resourceSubscriptions])];
}
