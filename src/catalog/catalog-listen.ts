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

type Obj = Record<string, unknown>;
type Filter = { toolsListChanged?: boolean; promptsListChanged?: boolean; resourcesListChanged?: boolean; resourceSubscriptions?: string[] };

const LIST_CHANGED: Readonly<Record<string, 'tools' | 'prompts' | 'resources'>> = wireTable({
  'notifications/tools/list_changed': 'tools',
  'notifications/prompts/list_changed': 'prompts',
  'notifications/resources/list_changed': 'resources',
});

export function fanOutListen(
  request: JsonRpcRequest,
  members: readonly ModernMember[],
  ownerOf: (uri: string) => ModernMember | undefined,
  onListChanged: (member: ModernMember, kind: 'tools' | 'prompts' | 'resources') => void,
  signal: AbortSignal | undefined,
  log: Logger,
  /** Whether the caller may see a resource; hidden URIs are neither subscribed to nor reported. */
  mayUse: (uri: string) => boolean = () => true,
  /** The caller; members that hold sessions (legacy ones) listen in the caller's own session. */
  principal?: Principal,
): UpstreamReply {
  const queue = new CallStream({ requestId: request.id, mode: 'call', acceptsSse: true });
  const asked = ((request.params?.notifications as Filter | undefined) ?? {}) as Filter;
  const requested: Filter = asked.resourceSubscriptions ? { ...asked, resourceSubscriptions: [...new Set(asked.resourceSubscriptions)].slice(0, MAX_RESOURCE_SUBSCRIPTIONS).filter((u) => typeof u === 'string' && mayUse(u)) } : asked;
  const upstreamStops: AbortController[] = [];
  queue.onClose(() => upstreamStops.forEach((c) => c.abort()));
  signal?.addEventListener('abort', () => upstreamStops.forEach((c) => c.abort()), { once: true });

  void (async () => {
    const honoured: Filter = {};
    const streams: Array<{ member: ModernMember; messages: AsyncGenerator<JsonRpcMessage, void, void> }> = [];
    await Promise.all(
      members.map(async (member) => {
        // Resource subscriptions go to the upstream that listed the URI; unknown URIs to every upstream.
        const uris = (requested.resourceSubscriptions ?? []).filter((u) => {
          const owner = ownerOf(u);
          return owner === undefined || owner === member;
        });
        const filter: Filter = { ...requested, ...(requested.resourceSubscriptions ? { resourceSubscriptions: uris } : {}) };
        try {
          const face = await member.modernFace();
          const stop = new AbortController();
          upstreamStops.push(stop);
          const params = { ...request.params, notifications: filter, _meta: { [META_PROTOCOL_VERSION]: MODERN_VERSIONS[0], [META_CLIENT_CAPABILITIES]: {}, ...((request.params?._meta as Obj | undefined) ?? {}) } };
          const headers: Record<string, string> = face.http ? { 'mcp-protocol-version': MODERN_VERSIONS[0], 'mcp-method': 'subscriptions/listen' } : {};
          const reply = await face.messages.post({ jsonrpc: '2.0', id: `${String(request.id)}:${member.name}`, method: 'subscriptions/listen', params }, headers, stop.signal, principal);
          const first = await reply.messages.next();
          const ack = first.done ? undefined : (first.value as { method?: string; params?: { notifications?: Filter } });
          if (ack?.method !== 'notifications/subscriptions/acknowledged') return;
          mergeFilter(honoured, ack.params?.notifications ?? {});
          streams.push({ member, messages: reply.messages });
        } catch (err) {
          log.warn('an upstream could not open its listen; its changes will not be relayed', { upstream: member.name, err });
        }
      }),
    );
    let stopped = false;
    // subscriptions.mdx §Acknowledgment: the first message carries the honoured subset.
    queue.push({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { [META_SUBSCRIPTION_ID]: request.id }, notifications: honoured } });
    // The first upstream whose listen ends (its result, or a break) ends the client's: the acknowledgment
    // promised its notifications, and a listen that went on without them would promise falsely. The client
    // listens again (subscriptions.mdx §Graceful Closure), and gets every upstream's again.
    // (No upstream listening: Promise.race of nothing would never settle; the listen ends at once.)
    if (streams.length > 0) await Promise.race(
      streams.map(async ({ member, messages }) => {
        try {
          for await (const m of messages) {
            const msg = m as { method?: string; params?: Obj };
            if (msg.method === undefined) return; // that upstream ended its listen
            const kind = LIST_CHANGED[msg.method];
            if (kind) onListChanged(member, kind);
            if (msg.method === 'notifications/resources/updated' && !(typeof msg.params?.uri === 'string' && mayUse(msg.params.uri))) continue;
            const meta = { ...((msg.params?._meta as Obj | undefined) ?? {}), [META_SUBSCRIPTION_ID]: request.id };
            queue.push({ jsonrpc: '2.0', method: msg.method, params: { ...(msg.params ?? {}), _meta: meta } });
          }
        } catch (err) {
          if (!stopped) log.info('an upstream ended its listen; the client\'s listen ends so that it listens again', { upstream: member.name, err });
        }
      }),
    );
    stopped = true;
    upstreamStops.forEach((c) => c.abort());
    queue.finish({ jsonrpc: '2.0', id: request.id, result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: request.id } } });
  })().catch((err: unknown) => {
    // Nothing above should throw; if something does, this listen ends with an error of its own instead of
    // the rejection ending the process (a non-array resourceSubscriptions once did, before the front door
    // checked its type).
    log.error('a listen across upstreams failed; it ends', { err });
    upstreamStops.forEach((c) => c.abort());
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
