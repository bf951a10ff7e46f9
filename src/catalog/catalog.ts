// Several upstreams behind one endpoint, presented as one 2026-07-28 server (`UpstreamMessages`): merged
// tools, prompts and resources with safe public names, calls routed to the upstream that owns them, and
// the union of capabilities for server/discover. Each upstream is reached through its modern face, so its
// era and transport do not matter here; legacy clients reach the catalog through the legacy bridge.

import { createHash } from 'node:crypto';
import { signalOf, type Cancellation } from '../pipeline/cancellation.js';
import type { Principal } from '../pipeline/principal.js';
import type { Logger } from '../log/logger.js';
import { AccessPolicy, type ItemKind } from '../policy/access.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import { sha256Hex } from '../protocol/sha256.js';
import { growingLru } from '../lru.js';
import { isObject, toModernResult } from '../protocol/era-shapes.js';
import { describeValue } from '../protocol/describe.js';
import { encodeHeaderValue } from '../protocol/header-value.js';
import { ErrorCode, errorResponse, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { MODERN_VERSIONS } from '../protocol/versions.js';
import { MAX_RESOURCE_SUBSCRIPTIONS, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION } from '../protocol/methods.js';
import type { Route as CallRoute } from '../pipeline/context.js';
import type { ModernFace, ModernMember, UpstreamMessages, UpstreamReply } from '../pipeline/ports.js';

import { fanOutListen } from './catalog-listen.js';
import { mergeCapabilities } from './capabilities.js';
import { mcpParamHeaders, paramHeadersFor, readAnnotations, type ParamHeader } from '../protocol/param-headers.js';
import { assignPublicNames, baseName, MAX_NAME_LENGTH, type PrefixMode } from './public-names.js';
import { nestedDeeperThan } from '../protocol/value-depth.js';
import { notFoundInOurWords, resourceNotFound } from '../protocol/resource-not-found.js';

type Obj = Record<string, unknown>;

/** `_meta` keys carrying each entry's original reference (DESIGN.md §5: our keys use `dev.gatehouse/`). */
export const TOOL_REF_META = 'dev.gatehouse/tool_ref';
export const PROMPT_REF_META = 'dev.gatehouse/prompt_ref';
/**
 * How deep a tool's or prompt's definition may nest. Real schemas stay within a few dozen levels; the
 * bound only keeps the recursive walks over a definition (digest, schema compilation, writing it again)
 * off a stack overflow.
 */
const MAX_DEFINITION_DEPTH = 256;
/** Pages read from one upstream for one list; a server paginating forever is cut off. */
const MAX_PAGES = 50;
/** Longest a call waits for the list its unknown name caused (the list itself goes on). */
const RESOLVE_WAIT_MS = 5_000;
/** Least time between two lists caused by names (or resource URIs) the routes do not know, per kind and capability set. */
const RELIST_FLOOR_MS = 1_000;
/**
 * Most such lists in one second over every kind and capability set: the capability set is the caller's to
 * choose, and a new one each call would otherwise make every call with an unknown name list every upstream.
 */
const MAX_RELISTS_PER_SECOND = 10;
/**
 * Member lists kept at once. They are kept per capability set, which the caller chooses: a new set with
 * each list kept another list for as long as the process lived, until 3 December.
 */
const MAX_CACHED_LISTS = 1_000;
/** A capability set longer than this as JSON is known by its SHA-256 in the catalog's keys. */
const MAX_KEY_CHARS = 256;

/** A capability set as a key of the catalog's lists: its canonical JSON, or that text's digest when long. */
export function capabilitiesKey(capabilities: unknown): string {
  const text = canonicalJson(capabilities);
  return text.length <= MAX_KEY_CHARS ? text : `sha256:${sha256Hex(text)}`;
}

/** Entries per page of a merged list. */
export const PAGE_SIZE = 100;

/** One kind's merged catalog, and the member lists it was built from. */
interface MergedList {
  inputs: readonly Obj[][];
  routes: Map<string, Route>;
  /** The same routes by ref: where a call the pipeline judged goes (routeByName). */
  byRef: Map<string, Route>;
  sorted: Array<{ ref: string; name: string; item: Obj }>;
  /**
   * Items the members listed that the catalog left out as too deep to handle. (A tool with an invalid
   * x-mcp-header annotation is left out too, but not counted: every HTTP client must drop it itself.)
   */
  leftOut: number;
}

interface Route {
  upstream: ModernMember;
  /** What the pipeline sees of it (resolve stage). */
  call: CallRoute;
}

export class Catalog implements UpstreamMessages {
  readonly upstream = 'catalog';
  private routes = { tools: new Map<string, Route>(), prompts: new Map<string, Route>() };
  /** The routes of the last list by ref (`upstream/original`). */
  private byRef = { tools: new Map<string, Route>(), prompts: new Map<string, Route>() };
  private readonly lastMerged: { tools?: MergedList; prompts?: MergedList } = {};
  /** Per member and kind, the names of its last list read whole: what names it while its list fails (merged). */
  private readonly lastRefs = { tools: new Map<ModernMember, readonly string[]>(), prompts: new Map<ModernMember, readonly string[]>() };
  /**
   * Per member, the URIs of the resources its last list read gave: where a resources/read goes. Replaced at
   * each list, so a URI a member no longer lists is forgotten (one map of every URI ever listed grew for as
   * long as an upstream's resources changed, until 3 December).
   */
  private readonly resourceUris = new Map<ModernMember, { items: readonly Obj[]; uris: ReadonlySet<string> }>();
  /**
   * Per member, the URI templates of its last resources/templates/list read, the same way: where a
   * completion/complete on a template goes (never learnt, so refused -32602, until 3 December).
   */
  private readonly templateUris = new Map<ModernMember, { items: readonly Obj[]; uris: ReadonlySet<string> }>();
  private counter = 0;
  /** When each kind was last listed again because of a name nobody listed (see relist). */
  private readonly relisted = new Map<string, number>();
  /** Lists under way, by kind and capability set: a call that arrives meanwhile waits for the same list. */
  private readonly relisting = new Map<string, Promise<void>>();
  /** Lists caused by unknown names in the current second (MAX_RELISTS_PER_SECOND). */
  private relistsThisSecond = { second: 0, count: 0 };
  /** The member lists read whole (every page came), as collect returned them. */
  private readonly wholeLists = new WeakSet<readonly Obj[]>();
  /**
   * Member lists kept for the `ttlMs` their server gave (caching.mdx §Time-to-Live), per caller capability
   * set; dropped early when the member says its list changed.
   */
  private readonly listCache = growingLru<string, { until: number; items: Obj[] }>(MAX_CACHED_LISTS);
  /** Per member and kind (`<member>|tools`): how many times its lists were dropped as changed (bounded by members × 3). */
  private readonly generations = new Map<string, number>();
  /** Background listens that tell the catalog when a member's lists change, by member (see watch()). */
  private readonly watchers = new Map<ModernMember, { kinds: Set<string>; stop: AbortController }>();

  /** The members' names in the config's order: which of two already-safe names keeps it (public-names.ts). */
  private readonly upstreamNames: readonly string[];

  constructor(
    private readonly members: readonly ModernMember[],
    private readonly uriPrefixes: ReadonlyMap<ModernMember, readonly string[]>,
    private readonly prefix: PrefixMode,
    private readonly log: Logger,
    private readonly access: AccessPolicy = new AccessPolicy([]),
  ) {
    this.upstreamNames = members.map((m) => m.name);
  }

  /** The keys of the member lists kept now (for tests). */
  cachedListKeys(): string[] {
    return [...this.listCache.keys()];
  }

  knowsTool(name: string): boolean {
    return this.routes.tools.has(name);
  }

  /** The route of the last list for a public name, without listing again (undefined: `resolve` may list). */
  known(kind: 'tools' | 'prompts', publicName: string): CallRoute | undefined {
    return this.routes[kind].get(publicName)?.call;
  }

  /**
   * Where a public name goes (the resolve stage). The routes of the last list are used as they are; a name
   * they do not know makes the catalog list again once, with the caller's capabilities (a legacy server may
   * offer tools only to clients that declared a capability), before it is called unknown.
   */
  async resolve(kind: 'tools' | 'prompts', publicName: string, capabilities: Record<string, unknown>, fresh = false): Promise<CallRoute | undefined> {
    let route = fresh ? undefined : this.routes[kind].get(publicName);
    if (!route) {
      // A slow list delays the call at most this long; the name is then judged on the routes at hand.
      await this.waitBounded(this.relist(kind, capabilities));
      route = this.routes[kind].get(publicName);
    }
    return route?.call;
  }

  /**
   * Lists one kind again and waits for it as a call naming something nobody listed does (at most
   * RESOLVE_WAIT_MS): what the access stage does for a hidden item, so that it takes the time a missing one takes.
   */
  relistAsUnknown(kind: 'tools' | 'prompts' | 'resources' | 'resources/templates', capabilities: Record<string, unknown>): Promise<void> {
    return this.waitBounded(this.relist(kind, capabilities));
  }

  /** Waits for a list caused by an unknown name at most RESOLVE_WAIT_MS; a failed one is logged. */
  private async waitBounded(listing: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((r) => (timer = setTimeout(r, RESOLVE_WAIT_MS).unref()));
    await Promise.race([listing.catch((err: unknown) => this.log.warn('the catalog could not be listed to resolve a name', { err })), waited]);
    clearTimeout(timer);
  }

  /**
   * Lists one kind again, as the gateway (the routes are rebuilt from it; for resources, where reads go).
   * Names and URIs nobody lists cannot make Gatehouse list an upstream more than once a second per kind and
   * capability set, nor more than MAX_RELISTS_PER_SECOND times a second in all. A call that arrives
   * while such a list is under way waits for it: at start, the first calls must not run on routes that
   * do not know the tool yet (its annotations decide whether it is a write).
   */
  async relist(kind: 'tools' | 'prompts' | 'resources' | 'resources/templates', capabilities: Record<string, unknown>): Promise<void> {
    const key = `${kind}|${capabilitiesKey(capabilities)}`;
    const pending = this.relisting.get(key);
    if (pending) return pending;
    const now = Date.now();
    if (now - (this.relisted.get(key) ?? -Infinity) < RELIST_FLOOR_MS) return;
    const second = Math.floor(now / 1000);
    if (this.relistsThisSecond.second !== second) this.relistsThisSecond = { second, count: 0 };
    if (++this.relistsThisSecond.count > MAX_RELISTS_PER_SECOND) {
      // Over the cap: a list of the same kind under way (at start, the first) still decides the call.
      for (const [other, listing] of this.relisting) if (other.startsWith(`${kind}|`)) return listing;
      return;
    }
    if (this.relisted.size >= 1_000) this.relisted.clear();
    this.relisted.set(key, now);
    const meta = { [META_PROTOCOL_VERSION]: MODERN_VERSIONS[0], [META_CLIENT_CAPABILITIES]: capabilities };
    const request: JsonRpcRequest = { jsonrpc: '2.0', id: `gh-resolve-${++this.counter}`, method: `${kind}/list`, params: { _meta: meta } };
    const listing = (kind === 'tools' || kind === 'prompts' ? this.namedList(request, kind, undefined) : this.resourceList(request, undefined)).then(() => undefined);
    this.relisting.set(key, listing);
    try {
      await listing;
    } finally {
      this.relisting.delete(key);
    }
  }

  /**
   * The member a resources/read of `uri` goes to, by name (routeByUri's choice: the member that listed it,
   * else the one whose uriPrefixes match), for the egress stage to judge it under that upstream's rule.
   * `orTemplate`: for a completion/complete's `ref/resource`, a listed resource template's member comes first.
   */
  resourceOwner(uri: string, orTemplate = false, principal?: Principal): string | undefined {
    // A URI the caller may not see has no owner for it, as a missing one has none: a hidden subscribe goes
    // on past the access stage (listen, below, answers it), and judged under its member's rule it could get
    // another verdict than a missing one (until 5 December it did).
    if (principal !== undefined && !this.visible(principal, 'resources', uri)) return undefined;
    return ((orTemplate ? this.listedOwner(uri, this.templateUris) : undefined) ?? this.listedOwner(uri) ?? this.ownerByPrefix(uri))?.name;
  }

  /** Whether the caller may see a resource URI (the access stage asks for resources/read). */
  mayUseResource(principal: Principal, uri: string): boolean {
    return this.visible(principal, 'resources', uri);
  }

  /** Whether the caller may subscribe to a resource and hear of its changes (mayHear): a reload asks it again. */
  mayHearResource(principal: Principal, uri: string): boolean {
    return this.mayHear(principal, uri);
  }

  /**
   * May a listen subscribe the caller to a resource, and tell it of its changes? Only one the caller may use
   * as it is: one it could use after a step-up is listed (so that it knows to step up), but not readable yet,
   * and its changes are no more its to hear than its content (until 5 December they were).
   */
  private mayHear(principal: Principal | undefined, uri: string): boolean {
    return principal === undefined || this.access.decide(principal, 'resources', uri) === true;
  }

  /** May the caller see and use the item? No principal means the gateway itself asking (internal). */
  private visible(principal: Principal | undefined, kind: ItemKind, ref: string): boolean {
    return principal === undefined || this.access.allows(principal, kind, ref);
  }

  /**
   * True when every tool and prompt's public name is its original name and none is hidden by the access
   * rules (which then hide the same items from everyone: AccessPolicy.perCaller), so a single upstream can
   * be served by byte pass-through without misleading anyone. Lists are read as the gateway itself, with the
   * capabilities of the client the answer is for: a legacy server may offer some tools only to clients that
   * declared a capability, and a check made without them let such a tool's unsafe or hidden name through.
   */
  async namesUnchanged(capabilities: Record<string, unknown> = {}): Promise<boolean> {
    const meta = { [META_PROTOCOL_VERSION]: MODERN_VERSIONS[0], [META_CLIENT_CAPABILITIES]: capabilities };
    for (const kind of ['tools', 'prompts'] as const) {
      const response = await this.namedList({ jsonrpc: '2.0', id: 'gh-names', method: `${kind}/list`, params: { _meta: meta } }, kind, undefined, true);
      // An item the catalog left out would reach clients in the upstream's own list.
      if ((this.lastMerged[kind]?.leftOut ?? 0) > 0) return false;
      for (const item of (response.result?.[kind] as Obj[] | undefined) ?? []) {
        const ref = (item._meta as Obj)[kind === 'tools' ? TOOL_REF_META : PROMPT_REF_META] as string;
        if (ref.slice(ref.indexOf('/') + 1) !== item.name || this.access.hidesFromEveryone(kind, ref)) return false;
      }
    }
    return true;
  }

  /**
   * Whether the catalog would show a member's list item under the name the member gave it, as a page passed
   * through shows it: a safe name (public-names.ts, no prefix), not hidden from everyone by the access rules,
   * not left out as too deep. namesUnchanged's test, for one item of a page it never read (single-upstream.ts).
   */
  showsAsWritten(kind: 'tools' | 'prompts', upstream: string, item: unknown): boolean {
    if (!isObject(item) || typeof item.name !== 'string') return false;
    const name = item.name;
    const prefixed = this.prefix === 'always' || (this.prefix === 'auto' && this.members.length > 1);
    if (name.length > MAX_NAME_LENGTH || baseName({ upstream, name }, prefixed) !== name) return false;
    return !this.access.hidesFromEveryone(kind, `${upstream}/${name}`) && !nestedDeeperThan(item, MAX_DEFINITION_DEPTH);
  }

  /**
   * The items of a member's page passed through, named as the catalog names them: the member listed again
   * afresh (its cached list may predate the page), each item under its public name with its ref in `_meta`,
   * and items the catalog does not show (not in that list, left out, hidden from the caller) taken out. The
   * page keeps its own shape (era, cursor); only names and `_meta` change.
   */
  async asCatalogued(kind: 'tools' | 'prompts', upstream: string, items: readonly unknown[], capabilities: Record<string, unknown>, principal: Principal | undefined): Promise<Obj[]> {
    for (const member of this.members) if (member.name === upstream) this.dropCached(member, kind);
    const meta = { [META_PROTOCOL_VERSION]: MODERN_VERSIONS[0], [META_CLIENT_CAPABILITIES]: capabilities };
    await this.namedList({ jsonrpc: '2.0', id: `gh-page-${++this.counter}`, method: `${kind}/list`, params: { _meta: meta } }, kind, undefined);
    const byRef = this.byRef[kind];
    const refKey = kind === 'tools' ? TOOL_REF_META : PROMPT_REF_META;
    const out: Obj[] = [];
    for (const item of items) {
      if (!isObject(item) || typeof item.name !== 'string') continue;
      const ref = `${upstream}/${item.name}`;
      const route = byRef.get(ref);
      if (route === undefined || !this.visible(principal, kind, ref)) continue;
      out.push({ ...item, name: route.call.publicName, _meta: { ...(isObject(item._meta) ? item._meta : {}), [refKey]: ref } });
    }
    return out;
  }

  /** The merged discover result (2026-07-28/server/discover.mdx); see discoverMembers. */
  async discover(): Promise<Obj> {
    return (await this.discoverMembers()).result;
  }

  /**
   * The merged discover result, built from the members that answer, and the names of those that did not.
   * A member that is down is left out and logged, as lists leave it out, and is asked again next time (its
   * era probe failing is not remembered): one member down made every legacy initialize and every
   * server/discover fail, until 3 December. Only when no member answers is it a failure.
   */
  async discoverMembers(): Promise<{ result: Obj; missing: string[] }> {
    const settled = await Promise.allSettled(this.members.map((m) => m.modernFace()));
    const faces: Array<{ member: ModernMember; face: ModernFace }> = [];
    const missing: string[] = [];
    let failure: unknown;
    settled.forEach((s, i) => {
      const member = this.members[i]!;
      if (s.status === 'fulfilled') return void faces.push({ member, face: s.value });
      failure ??= s.reason;
      missing.push(member.name);
      this.log.warn('an upstream could not be reached; the catalog answers initialize and server/discover from the others', { upstream: member.name, err: s.reason });
    });
    if (faces.length === 0 && missing.length > 0) throw failure;
    const result: Obj = { supportedVersions: [...MODERN_VERSIONS], capabilities: mergeCapabilities(faces.map((f) => f.face.capabilities)) };
    const instructions = faces.map(({ member, face }) => (face.instructions ? `${member.name}: ${face.instructions}` : undefined)).filter(Boolean);
    if (instructions.length > 0) result.instructions = instructions.join('\n\n');
    // An answer that lacks a member is stale at once (caching.mdx §Time-to-Live): the member may be back soon.
    const ttlMs = missing.length > 0 ? 0 : 60_000;
    return { result: toModernResult('server/discover', result, GATEHOUSE_SERVER_INFO, { ttlMs, cacheScope: 'public' }), missing };
  }

  /**
   * One request as the given caller: lists show only what the principal may use, and calls to anything
   * else are answered exactly like calls to something that does not exist.
   */
  async post(message: JsonRpcMessage, headers: Record<string, string>, signal?: AbortSignal | Cancellation, principal?: Principal, judged?: CallRoute): Promise<UpstreamReply> {
    if (!('id' in message) || !('method' in message)) return { status: 202, headers: {}, messages: none() };
    const request = message as JsonRpcRequest;
    const params = request.params ?? {};
    // streamable-http.mdx §Server Behavior for Custom Headers: the asker's Mcp-Param headers go on with the
    // request; those of the tool's own x-mcp-header annotations are made again from the body (routeByName).
    const passed = mcpParamHeaders(headers);
    switch (request.method) {
      case 'server/discover':
        return single({ jsonrpc: '2.0', id: request.id, result: await this.discover() });
      case 'tools/list':
        return single(await this.namedList(request, 'tools', principal));
      case 'prompts/list':
        return single(await this.namedList(request, 'prompts', principal));
      case 'resources/list':
      case 'resources/templates/list':
        return single(await this.resourceList(request, principal));
      case 'tools/call':
        return this.routeByName(request, 'tools', params.name, signal, 'name', principal, passed, judged);
      case 'prompts/get':
        return this.routeByName(request, 'prompts', params.name, signal, 'name', principal, passed, judged);
      case 'resources/read':
        return this.routeByUri(request, params.uri, signal, principal, passed);
      case 'completion/complete': {
        const ref = (params.ref ?? {}) as { type?: string; name?: unknown; uri?: unknown };
        return ref.type === 'ref/prompt' ? this.routeByName(request, 'prompts', ref.name, signal, 'ref', principal, passed, judged) : this.routeByUri(request, ref.uri, signal, principal, passed, true);
      }
      case 'subscriptions/listen':
        return this.listen(request, signal, principal);
      default:
        return single(errorResponse(request.id, ErrorCode.MethodNotFound, `${request.method} is not available when several upstreams are aggregated`));
    }
  }

  async openGet(): Promise<null> {
    return null;
  }

  async deleteSession(): Promise<void> {}

  /**
   * tools/list or prompts/list over every member: public names from refs (public-names.ts), the ref in
   * `_meta`, sorted by name; one page holds them all. Tools with invalid x-mcp-header annotations are left
   * out with a warning (2026-07-28/server/tools.mdx §x-mcp-header).
   */
  private async namedList(request: JsonRpcRequest, kind: 'tools' | 'prompts', principal: Principal | undefined, whole = false): Promise<JsonRpcResponse> {
    // The gateway's own check (`whole`) must know when a member could not be listed at all.
    const perMember = await Promise.all(this.members.map((m) => this.collect(m, request, `${kind}/list`, kind, whole)));
    const merged = this.merged(kind, perMember);
    this.routes[kind] = merged.routes;
    this.byRef[kind] = merged.byRef;
    // Names come from the whole catalog, so a caller's view never changes anyone's names; then the
    // caller's view is cut from it.
    const listed: Obj[] = [];
    for (const e of merged.sorted) if (this.visible(principal, kind, e.ref)) listed.push(e.item);
    return whole ? { jsonrpc: '2.0', id: request.id, result: { [kind]: listed } } : page(request, kind, listed);
  }

  /**
   * The named, sorted catalog of one kind. Remembered while every member's list is the very array it was
   * built from (members' lists are cached), so a tools/list costs a filter and a page, not a rebuild.
   */
  private merged(kind: 'tools' | 'prompts', perMember: readonly Obj[][]): MergedList {
    const last = this.lastMerged[kind];
    if (last && last.inputs.length === perMember.length && last.inputs.every((items, i) => items === perMember[i])) return last;
    const entries: Array<{ member: ModernMember; item: Obj; params: ParamHeader[] }> = [];
    let leftOut = 0;
    perMember.forEach((items, i) => {
      const member = this.members[i]!;
      // caching.mdx §Interaction with Pagination: a list that shifts between pages may repeat an item. One
      // ref is one tool: taken twice, it lost its name to the digest and was listed twice under one name.
      // The later copy, from the fresher page, stands.
      const seen = new Map<string, number>();
      for (const item of items) {
        if (typeof item.name !== 'string') continue;
        if (nestedDeeperThan(item, MAX_DEFINITION_DEPTH)) {
          // Digesting, checking or writing it again would overflow the stack: one such item made the whole
          // list fail (every member's tools unknown), or a single upstream's calls pass on unchecked.
          this.log.warn(`${kind === 'tools' ? 'tool' : 'prompt'} left out of the catalog: its definition nests deeper than ${MAX_DEFINITION_DEPTH} levels`, { upstream: member.name, name: item.name.slice(0, 200) });
          leftOut++;
          continue;
        }
        let params: ParamHeader[] = [];
        if (kind === 'tools') {
          const annotations = readAnnotations(item.inputSchema);
          if (!annotations.ok) {
            this.log.warn('tool left out of the catalog: invalid x-mcp-header annotation', { upstream: member.name, tool: item.name, reason: annotations.reason });
            continue;
          }
          params = annotations.headers;
        }
        const earlier = seen.get(item.name);
        if (earlier !== undefined) entries[earlier] = { member, item, params };
        else seen.set(item.name, entries.push({ member, item, params }) - 1);
      }
    });
    // A member whose list failed (down, or cut short) is named as it was last listed whole: its refs leaving
    // the set renamed the others' tools while it was away, and again when it came back.
    const absent: Array<{ upstream: string; name: string }> = [];
    perMember.forEach((items, i) => {
      const member = this.members[i]!;
      if (this.wholeLists.has(items)) this.lastRefs[kind].set(member, entries.filter((e) => e.member === member).map((e) => e.item.name as string));
      else {
        const present = new Set(entries.filter((e) => e.member === member).map((e) => e.item.name as string));
        for (const name of this.lastRefs[kind].get(member) ?? []) if (!present.has(name)) absent.push({ upstream: member.name, name });
      }
    });
    const names = assignPublicNames([...entries.map((e) => ({ upstream: e.member.name, name: e.item.name as string })), ...absent], this.prefix, this.upstreamNames);
    const routes = new Map<string, Route>();
    const byRef = new Map<string, Route>();
    const sorted: MergedList['sorted'] = [];
    for (const e of entries) {
      const ref = `${e.member.name}/${e.item.name as string}`;
      const publicName = names.get(ref)!;
      const call: CallRoute = { kind, ref, publicName, original: e.item.name as string, upstream: e.member.name, listed: true, params: e.params };
      if (isObject(e.item.annotations)) call.annotations = e.item.annotations;
      if (e.item.inputSchema !== undefined) call.inputSchema = e.item.inputSchema;
      if (e.item.outputSchema !== undefined) call.outputSchema = e.item.outputSchema;
      if (kind === 'tools') {
        // The contract a pin holds the upstream to; computed once per list, never per call.
        call.definition = toolContract(e.item);
        call.definitionSha256 = createHash('sha256').update(canonicalJson(call.definition)).digest('hex');
      }
      const route = { upstream: e.member, call };
      routes.set(publicName, route);
      byRef.set(ref, route);
      const meta = { ...((e.item._meta as Obj | undefined) ?? {}), [kind === 'tools' ? TOOL_REF_META : PROMPT_REF_META]: ref };
      sorted.push({ ref, name: publicName, item: { ...e.item, name: publicName, _meta: meta } });
    }
    sorted.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const result: MergedList = { inputs: perMember, routes, byRef, sorted, leftOut };
    this.lastMerged[kind] = result;
    return result;
  }

  private async resourceList(request: JsonRpcRequest, principal: Principal | undefined): Promise<JsonRpcResponse> {
    const key = request.method === 'resources/list' ? 'resources' : 'resourceTemplates';
    const perMember = await Promise.all(this.members.map((m) => this.collect(m, request, request.method, key)));
    const merged: Obj[] = [];
    perMember.forEach((items, i) => {
      this.learnUris(this.members[i]!, items, key === 'resources' ? this.resourceUris : this.templateUris);
      for (const item of items) {
        const address = item.uri ?? item.uriTemplate;
        if (typeof address === 'string' && !this.visible(principal, 'resources', address)) continue;
        merged.push(item);
      }
    });
    return page(request, key, merged);
  }

  /** A member's resources, as its last list read gave them (a list kept in the cache is not read again). */
  private learnUris(member: ModernMember, items: readonly Obj[], learnt: Map<ModernMember, { items: readonly Obj[]; uris: ReadonlySet<string> }>): void {
    if (learnt.get(member)?.items === items) return;
    // A list that failed (nothing read) says nothing of what is gone: reads keep going where they went.
    if (items.length === 0 && !this.wholeLists.has(items)) return;
    const uris = new Set<string>();
    for (const item of items) {
      const address = learnt === this.templateUris ? item.uriTemplate : item.uri;
      if (typeof address === 'string') uris.add(address);
    }
    learnt.set(member, { items, uris });
  }

  /** The member that listed a URI; where two did, the later in the configured order (as before). */
  private listedOwner(uri: string, learnt = this.resourceUris): ModernMember | undefined {
    for (let i = this.members.length - 1; i >= 0; i--) if (learnt.get(this.members[i]!)?.uris.has(uri)) return this.members[i];
    return undefined;
  }

  /** Every page of one list from one member; a member that fails is left out and logged, not fatal. */
  private async collect(member: ModernMember, request: JsonRpcRequest, method: string, key: string, strict = false): Promise<Obj[]> {
    const capabilities = (request.params?._meta as Obj | undefined)?.['io.modelcontextprotocol/clientCapabilities'];
    const cacheKey = `${member.name}|${method}|${capabilitiesKey(capabilities ?? {})}`;
    const cached = this.listCache.get(cacheKey);
    // A change announced while this list is read (dropCached) makes what it reads stale before it arrives:
    // it is answered, not kept.
    const generation = this.generationOf(member.name, method);
    if (cached && cached.until > Date.now()) return cached.items;
    let out: Obj[] = [];
    let ttlMs = 0;
    try {
      const face = await member.modernFace();
      let whole = false;
      let notOffered = false;
      // 2026-07-28 caching.mdx §Interaction with Pagination: a later page that fails (a cursor gone stale)
      // discards the pages before it, and the list is read again from its start, once.
      for (let attempt = 0; attempt < 2 && !whole; attempt++) {
        const read = await this.pages(face, request, method, key);
        ({ items: out, ttlMs, whole } = read);
        notOffered = read.pages === 0 && read.errorCode === ErrorCode.MethodNotFound;
        // The first page itself failed: the member is not answering lists, and a second try would not either.
        if (!whole && read.pages === 0) break;
      }
      // A list read in part is answered, but not kept. Asked strictly (the names check of a single upstream,
      // which decides whether its lists pass straight through), a part is no answer: judged on it, a hidden
      // or unsafe name on the missing pages would pass.
      if (!whole) {
        // (A member without the method at all has nothing to show: that is an answer.)
        if (strict && !notOffered) throw new Error(`upstream "${member.name}" did not answer ${method} whole`);
        return out;
      }
      this.wholeLists.add(out);
      // A legacy server's list has no ttlMs: it is kept until the member says it changed, when a watcher hears
      // it. A modern server's ttlMs is its own word: 0 (or less, or none) is stale at once and never kept
      // (caching.mdx §Time-to-Live), whatever the watcher would hear.
      const kind = method.split('/')[0]!;
      if (face.bridged === true) {
        if ((await this.watch(member, face)).has(kind) && this.generationOf(member.name, method) === generation) this.listCache.set(cacheKey, { until: Infinity, items: out });
      } else if (ttlMs > 0 && this.generationOf(member.name, method) === generation) this.listCache.set(cacheKey, { until: Date.now() + ttlMs, items: out });
    } catch (err) {
      if (strict) throw err;
      this.log.warn('an upstream could not be listed; the catalog shows the others', { upstream: member.name, method, err });
    }
    return out;
  }

  /**
   * One reading of a list, page by page. `whole`: every page came (its last had no nextCursor); `ttlMs`: the
   * shortest any page gave, since the list is as fresh as its stalest page; `pages`: how many answered.
   */
  private async pages(face: ModernFace, request: JsonRpcRequest, method: string, key: string): Promise<{ items: Obj[]; ttlMs: number; whole: boolean; pages: number; errorCode?: number }> {
    const items: Obj[] = [];
    let ttlMs: number | undefined;
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const params: Obj = { _meta: request.params?._meta ?? {}, ...(cursor !== undefined ? { cursor } : {}) };
      const response = await this.ask(face, { jsonrpc: '2.0', id: `gh-cat-${++this.counter}`, method, params });
      const result = response?.result;
      if (!result) return { items, ttlMs: 0, whole: false, pages: page, ...(typeof response?.error?.code === 'number' ? { errorCode: response.error.code } : {}) };
      ttlMs = Math.min(ttlMs ?? Infinity, typeof result.ttlMs === 'number' ? result.ttlMs : 0);
      items.push(...((result[key] as Obj[] | undefined) ?? []));
      if (typeof result.nextCursor !== 'string') return { items, ttlMs, whole: true, pages: page + 1 };
      cursor = result.nextCursor;
    }
    // More pages than Gatehouse reads: what it has is answered, and not kept as the whole list.
    return { items, ttlMs: 0, whole: false, pages: MAX_PAGES };
  }

  /** The upstream whose configured `uriPrefixes` match the URI, longest prefix first. */
  private ownerByPrefix(uri: string): ModernMember | undefined {
    let best: { member: ModernMember; length: number } | undefined;
    for (const [member, prefixes] of this.uriPrefixes) {
      for (const p of prefixes) if (uri.startsWith(p) && (!best || p.length > best.length)) best = { member, length: p.length };
    }
    return best?.member;
  }

  /**
   * Opens (once) a background subscriptions/listen on a member for the list kinds it announces changes of,
   * and returns the kinds it is watched for. A watcher that ends forgets the member's cached lists.
   */
  private async watch(member: ModernMember, face: ModernFace): Promise<Set<string>> {
    const existing = this.watchers.get(member);
    if (existing) return existing.kinds;
    const caps = face.capabilities as Record<string, { listChanged?: boolean } | undefined>;
    const filter: Obj = {};
    if (caps.tools?.listChanged) filter.toolsListChanged = true;
    if (caps.prompts?.listChanged) filter.promptsListChanged = true;
    if (caps.resources?.listChanged) filter.resourcesListChanged = true;
    const watcher = { kinds: new Set<string>(), stop: new AbortController() };
    this.watchers.set(member, watcher);
    if (Object.keys(filter).length === 0) return watcher.kinds;
    try {
      const id = `gh-watch-${++this.counter}`;
      const params = { notifications: filter, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_VERSIONS[0], 'io.modelcontextprotocol/clientCapabilities': {} } };
      const reply = await face.messages.post({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params }, face.http ? modernHeaders('subscriptions/listen') : {}, watcher.stop.signal);
      const first = await reply.messages.next();
      const ack = (first.done ? undefined : first.value) as { method?: string; params?: { notifications?: Obj } } | undefined;
      if (ack?.method !== 'notifications/subscriptions/acknowledged') return watcher.kinds;
      const honoured = ack.params?.notifications ?? {};
      if (honoured.toolsListChanged) watcher.kinds.add('tools');
      if (honoured.promptsListChanged) watcher.kinds.add('prompts');
      if (honoured.resourcesListChanged) watcher.kinds.add('resources');
      void (async () => {
        try {
          for await (const m of reply.messages) {
            const kind = (m as { method?: string }).method?.match(/^notifications\/(tools|prompts|resources)\/list_changed$/)?.[1];
            if (kind) this.dropCached(member, kind as 'tools' | 'prompts' | 'resources');
          }
        } catch {
          // fall through: the watcher is gone
        }
        if (this.watchers.get(member) === watcher) this.watchers.delete(member);
        for (const k of ['tools', 'prompts', 'resources'] as const) this.dropCached(member, k);
      })();
    } catch (err) {
      this.log.warn('could not watch an upstream for list changes; its lists are read each time', { upstream: member.name, err });
    }
    return watcher.kinds;
  }

  /** Stops the background watchers (shutdown). */
  close(): void {
    for (const w of this.watchers.values()) w.stop.abort();
    this.watchers.clear();
  }

  /** How many times a member's lists of one kind were dropped as changed: a read that spans a drop is stale. */
  private generationOf(member: string, method: string): number {
    return this.generations.get(`${member}|${method.split('/')[0]}`) ?? 0;
  }

  private dropCached(member: ModernMember, kind: 'tools' | 'prompts' | 'resources'): void {
    const g = `${member.name}|${kind}`;
    this.generations.set(g, (this.generations.get(g) ?? 0) + 1);
    for (const key of [...this.listCache.keys()]) if (key.startsWith(`${member.name}|${kind}/`)) this.listCache.delete(key);
  }

  /**
   * Forwards a call to the upstream that owns it, under its original name. The pipeline has resolved the
   * name (`judged`, its route) and checked access, arguments and policy on that route's ref before this
   * runs, so the call goes to that ref: a list read meanwhile (a member's list_changed, another client's
   * tools/list) may have given the public name to another upstream's tool, which looking the name up again
   * here reached (approved for one tool, run on another, until 5 December). A ref no longer listed (the
   * list changed in between) gets the unknown-item answer (tools.mdx §Error Handling: -32602). Without a
   * judged route (no pipeline in front) the public name is looked up. `passed`: the asker's Mcp-Param
   * headers, forwarded as they came.
   */
  private async routeByName(request: JsonRpcRequest, kind: 'tools' | 'prompts', publicName: unknown, signal: AbortSignal | Cancellation | undefined, field: 'name' | 'ref', principal: Principal | undefined, passed: Record<string, string>, judged: CallRoute | undefined, relisted = false): Promise<UpstreamReply> {
    let route = this.routeOf(kind, publicName, judged);
    // A hidden name takes the same path as an unknown one (a fresh list, then -32602), so neither the
    // answer nor its timing tells that it exists.
    const hidden = route !== undefined && !this.visible(principal, kind, route.call.ref);
    if ((!route || hidden || relisted) && typeof publicName === 'string') {
      await this.namedList({ ...request, method: `${kind}/list`, params: { _meta: request.params?._meta } }, kind, principal);
      route = this.routeOf(kind, publicName, judged);
    }
    if (route && !this.visible(principal, kind, route.call.ref)) route = undefined;
    if (!route) return single(errorResponse(request.id, ErrorCode.InvalidParams, unknownItemMessage(kind, publicName)));
    const params = { ...(request.params ?? {}) };
    const original = route.call.original;
    if (field === 'ref') params.ref = { ...(params.ref as Obj), name: original };
    else params.name = original;
    const face = await route.upstream.modernFace();
    const headers = face.http ? { ...passed, ...modernHeaders(request.method, original), ...(kind === 'tools' ? paramHeadersFor(route.call.params, params.arguments) : {}) } : {};
    const reply = await face.messages.post({ ...request, params }, headers, signal, principal);
    if (kind !== 'tools' || !face.http || reply.status !== 400 || relisted) return reply;
    // streamable-http.mdx §Client Behavior: -32020 can mean the tool's x-mcp-header annotations changed
    // since it was listed. Its list is read again and the call sent once more, with the headers it now asks for.
    const messages: JsonRpcMessage[] = [];
    for await (const m of reply.messages) messages.push(m);
    if (!messages.some((m) => 'error' in m && m.error?.code === ErrorCode.HeaderMismatch)) return { ...reply, messages: replay(messages) };
    this.log.info('an upstream refused the headers of a listed tool; its list is read again', { upstream: route.upstream.name, tool: original });
    this.dropCached(route.upstream, 'tools');
    return this.routeByName(request, kind, publicName, signal, field, principal, passed, judged, true);
  }

  /** The route of the last list for the judged ref, or (no route judged) for the public name. */
  private routeOf(kind: 'tools' | 'prompts', publicName: unknown, judged: CallRoute | undefined): Route | undefined {
    if (judged !== undefined) return judged.kind === kind ? this.byRef[kind].get(judged.ref) : undefined;
    return typeof publicName === 'string' ? this.routes[kind].get(publicName) : undefined;
  }

  /**
   * Forwards a request about a resource to the member that listed its URI. `orTemplate`: the URI may be a
   * listed resource template's too (completion/complete's `ref/resource`, completion.mdx §Data Types: "a
   * URI or URI template"), which comes first.
   */
  private async routeByUri(request: JsonRpcRequest, uri: unknown, signal: AbortSignal | Cancellation | undefined, principal: Principal | undefined, passed: Record<string, string>, orTemplate = false): Promise<UpstreamReply> {
    const listed = (u: string): ModernMember | undefined => (orTemplate ? this.listedOwner(u, this.templateUris) : undefined) ?? this.listedOwner(u);
    let listedBy = typeof uri === 'string' ? listed(uri) : undefined;
    let owner = listedBy ?? (typeof uri === 'string' ? this.ownerByPrefix(uri) : undefined);
    if (!owner && typeof uri === 'string') {
      // A URI nobody listed makes the catalog list resources again, as an unknown name does: at most once a
      // second per capability set, and the read waits for it at most RESOLVE_WAIT_MS. (Each such read listed
      // every upstream, every page, until 3 December.)
      const capabilities = (request.params?._meta as Obj | undefined)?.[META_CLIENT_CAPABILITIES];
      // A URI template has braces (RFC 6570), a URI never does: it is looked for where it can be.
      const kind = orTemplate && uri.includes('{') ? 'resources/templates' : 'resources';
      await this.waitBounded(this.relist(kind, isObject(capabilities) ? capabilities : {}));
      owner = listedBy = listed(uri);
    }
    if (owner && typeof uri === 'string' && !this.visible(principal, 'resources', uri)) owner = undefined;
    // server/resources.mdx §Error Handling: a resource nobody listed is -32602 in 2026-07-28.
    if (!owner) return single(resourceNotFound(request.id, uri));
    const face = await owner.modernFace();
    const headers = face.http ? { ...passed, ...modernHeaders(request.method, request.method === 'resources/read' && typeof uri === 'string' ? uri : undefined) } : {};
    const reply = await face.messages.post(request, headers, signal, principal);
    // Where rules hide resources, a missing one must read as a hidden one does (the access stage's answer):
    // the member's own not-found words (a uriPrefixes owner's) would tell the two apart. For a read, and for
    // a completion about a URI no member listed: a listed one the caller may see is no secret, and its
    // member's -32602 may be about the argument (completion.mdx §Error Handling), which it keeps.
    if (!this.access.governs('resources') || (request.method !== 'resources/read' && listedBy !== undefined)) return reply;
    return { ...reply, messages: notFoundInOurWords(reply.messages, request.id, uri) };
  }

  /**
   * A client's subscriptions/listen over the members (catalog-listen.ts). Where access rules govern
   * resources, a URI is subscribed to only where a read of it would go (routeByUri): one no member listed or
   * holds by prefix, after the list a URI nobody listed makes, is honoured by none, and a hidden one takes
   * that very path, so that the acknowledgment, and a legacy client's subscribe answered from it, tell
   * neither apart (subscriptions.mdx §Acknowledgment: what is not honoured is omitted). Until 5 December a
   * URI nobody held went to every member, which could honour it, while a hidden one was left out at once.
   */
  private async listen(request: JsonRpcRequest, signal: AbortSignal | Cancellation | undefined, principal: Principal | undefined): Promise<UpstreamReply> {
    const ownerOf = (uri: string): ModernMember | undefined => this.listedOwner(uri) ?? this.ownerByPrefix(uri);
    const mayHear = (uri: string): boolean => this.mayHear(principal, uri);
    const open = (maySubscribe?: (uri: string) => boolean): UpstreamReply => fanOutListen(request, this.members, ownerOf, (member, kind) => this.dropCached(member, kind), signalOf(signal), this.log, mayHear, principal, maySubscribe);
    if (!this.access.governs('resources')) return open();
    const routable = (uri: unknown): boolean => typeof uri === 'string' && mayHear(uri) && ownerOf(uri) !== undefined;
    const asked = (request.params?.notifications as { resourceSubscriptions?: unknown } | undefined)?.resourceSubscriptions;
    if (Array.isArray(asked) && ![...new Set(asked)].slice(0, MAX_RESOURCE_SUBSCRIPTIONS).every(routable)) {
      const capabilities = (request.params?._meta as Obj | undefined)?.[META_CLIENT_CAPABILITIES];
      await this.relistAsUnknown('resources', isObject(capabilities) ? capabilities : {});
    }
    return open(routable);
  }

  private async ask(face: ModernFace, request: JsonRpcRequest): Promise<JsonRpcResponse | undefined> {
    const reply = await face.messages.post(request, face.http ? modernHeaders(request.method) : {}, AbortSignal.timeout(30_000));
    for await (const m of reply.messages) if ('id' in m && m.id === request.id && !('method' in m)) return m as JsonRpcResponse;
    return undefined;
  }
}

/** The answer to a tool or prompt nobody listed (or the caller may not see): the same words either way. */
export function unknownItemMessage(kind: 'tools' | 'prompts', name: unknown): string {
  return `Unknown ${kind === 'tools' ? 'tool' : 'prompt'}: ${describeValue(name)}`;
}

/**
 * One page of a merged list (basic/utilities/pagination): the cursor is opaque to clients, an offset into
 * the deterministic order here; a cursor that is not ours is -32602. The list depends on which upstreams
 * answered and, for legacy ones, on the caller's capabilities: private, not cached.
 */
function page(request: JsonRpcRequest, key: string, all: Obj[]): JsonRpcResponse {
  const cursor = request.params?.cursor;
  let offset = 0;
  if (cursor !== undefined) {
    const m = typeof cursor === 'string' ? /^o:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8')) : null;
    if (!m || Number(m[1]) > all.length) return errorResponse(request.id, ErrorCode.InvalidParams, 'Invalid cursor');
    offset = Number(m[1]);
  }
  const result: Obj = { [key]: all.slice(offset, offset + PAGE_SIZE) };
  if (offset + PAGE_SIZE < all.length) result.nextCursor = Buffer.from(`o:${offset + PAGE_SIZE}`).toString('base64url');
  return { jsonrpc: '2.0', id: request.id, result: toModernResult(request.method, result, GATEHOUSE_SERVER_INFO, { ttlMs: 0, cacheScope: 'private' }) };
}

/**
 * Who answers a catalog's own results (its discover and merged lists): Gatehouse, in every one of them
 * (2026-07-28/basic/index.mdx §_meta, per-response fields: serverInfo in every result's _meta).
 */
const GATEHOUSE_SERVER_INFO = { name: 'gatehouse', version: '0.1.0' };

function modernHeaders(method: string, name?: string): Record<string, string> {
  return { 'mcp-protocol-version': MODERN_VERSIONS[0], 'mcp-method': method, ...(name !== undefined ? { 'mcp-name': encodeHeaderValue(name) } : {}) };
}

function single(response: JsonRpcResponse): UpstreamReply {
  return { status: 200, headers: {}, messages: (async function* () {
    yield response as JsonRpcMessage;
  })() };
}

async function* none(): AsyncGenerator<JsonRpcMessage, void, void> {}

/** Messages already read, as a reply's stream again. */
async function* replay(messages: JsonRpcMessage[]): AsyncGenerator<JsonRpcMessage, void, void> {
  yield* messages;
}

/** What a tool promises: the parts of its definition a model reads or a call is checked against. */
function toolContract(item: Obj): Record<string, unknown> {
  const contract: Record<string, unknown> = { name: item.name };
  for (const key of ['title', 'description', 'inputSchema', 'outputSchema', 'annotations'] as const) if (item[key] !== undefined) contract[key] = item[key];
  return contract;
}
