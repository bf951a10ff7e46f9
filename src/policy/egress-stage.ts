// The egress stage, for tools/call, prompts/get, resources/read, resources/subscribe, completion/complete and
// the resource subscriptions of subscriptions/listen (taken out of the filter when blocked: listen below):
// every URL, host and address in the arguments (egress/destinations.ts), or in the URI read or subscribed to
// when its scheme is one that is fetched (egress/resource-uri.ts), is checked against the first egress rule that selects the call (egress/egress-policy.ts;
// a rule's tool globs match a prompt's ref as access rules' do, and for a resource the whole upstream that
// reads it, `upstream/*`). The first one blocked refuses the call with `egress_blocked` naming the argument,
// the value and the rule, before anything reaches the upstream: for a tool, a tool result (the SOIT seed: "a
// blocked address ... comes back as a tool result"); for a prompt or a resource, which have no result to
// carry it, a JSON-RPC error -32602 with the same fields in `data` (server/prompts.mdx and server/
// resources.mdx §Error Handling: invalid params). A prompt's arguments are strings its server reads as it
// likes, and a resource URI is what its server reads: one that fetches the page named reaches it as a tool
// would (until 5 December neither was judged). A resource URI of a custom scheme (`demo://…`) is the
// server's identifier, not a destination: it costs two pattern tests and is never resolved. A URL nested in
// another, in an argument or a URI (`?u=http://10.0.0.1/`), is judged too; one nesting past the bounds of
// egress/destinations.ts is refused unread.

import type { ProtocolRefusal, ToolRefusal } from '../errors.js';
import { canonicalIp } from '../net/addresses.js';
import { channels, waitedOn } from '../pipeline/events.js';
import type { CallContext, Route } from '../pipeline/context.js';
import type { Principal } from '../pipeline/principal.js';
import type { Outcome } from '../pipeline/outcome.js';
import { refuseAt, type Next, type Stage } from '../pipeline/stage.js';
import { ErrorCode, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { MAX_RESOURCE_SUBSCRIPTIONS } from '../protocol/methods.js';
import { ownValue } from '../protocol/own-keys.js';
import { destinationsIn, FETCHED_SCHEMES, MAX_DEPTH, MAX_JSON_TEXT_CHARS, MAX_JSON_TEXT_LEVELS, MAX_NESTED_URLS, MAX_STRINGS, MAX_URL_NESTING, type Destination, type DestinationsFound } from './egress/destinations.js';
import type { EgressPolicy } from './egress/egress-policy.js';
import { destinationsOfUri, mayNameDestination } from './egress/resource-uri.js';

/** What a URL nesting URLs past destinations.ts's bounds is refused with. */
const NESTED_TOO_FAR = `more than ${MAX_NESTED_URLS} URLs nested in URLs (\`?u=http://…\`), or URLs nested more than ${MAX_URL_NESTING} deep`;

/** At most this many distinct destinations are checked per call; more is refused, not skipped. */
const MAX_DESTINATIONS = 64;

/**
 * The upstream a resources/read of `uri` goes to (the only one, or the catalog member that listed the URI or
 * whose uriPrefixes match it, after listing again for a URI nobody listed); undefined when none does, or
 * when `principal` may not see the URI (a hidden URI is judged as a missing one is).
 * `orTemplate`: `uri` is a completion/complete's `ref/resource`, which may be a listed resource template's.
 */
export type ResourceUpstream = (uri: string, capabilities: Record<string, unknown>, orTemplate: boolean, principal: Principal) => Promise<string | undefined>;

/** The path a completion's value is named by in a refusal (`data.argument`): where it is in the params. */
const COMPLETED_VALUE = 'argument.value';

export function compileEgressStage(policy: EgressPolicy, resourceUpstream: ResourceUpstream): Stage {
  return {
    name: 'egress',
    // A resources/read or resources/subscribe has no route (the catalog does not rename resources), nor does
    // a completion/complete of a resource template's argument; a completion of a prompt's has the prompt's
    // (resolve stage). A subscribe is judged as a read: a server may fetch the URI to watch it, though
    // nothing of it comes back on the subscribe (until 5 December it was not judged for that reason).
    applies: (ctx) => (ctx.route !== undefined ? ctx.method === 'tools/call' || ctx.method === 'prompts/get' || ctx.method === 'completion/complete' : ctx.method === 'resources/read' || ctx.method === 'resources/subscribe' || ctx.method === 'completion/complete' || ctx.method === 'subscriptions/listen'),
    // Not async: arguments that name no destination, the usual ones, are handed on without a promise of their own.
    run(ctx, next) {
      if (ctx.method === 'completion/complete') return completion(ctx, next);
      if (ctx.method === 'subscriptions/listen') return listen(ctx, next);
      if (ctx.route === undefined) return resourceRead(ctx, next);
      const args = (ctx.message as JsonRpcRequest).params!.arguments;
      if (args === undefined || args === null) return next(ctx);
      const { found, unread } = destinationsIn(args, ctx.route!.inputSchema);
      // What was not read cannot be passed: a URL 33 levels down reaches the server just the same.
      if (unread) {
        const rule = policy.ruleFor(ctx.principal, ctx.route);
        return Promise.resolve(refuseAt('egress', ctx, refusal(ctx.route!, rule?.id ?? 'default', UNREAD_ARGUMENTS, {})));
      }
      // A prompt's argument in a custom scheme (`test://example-resource`) names the server's own item, not a
      // place it fetches: only fetched schemes and bare hosts are judged there (as for a resources/read URI).
      const judged = ctx.route!.kind === 'prompts' ? fetchedOrBare(found) : found;
      return judged.length === 0 ? next(ctx) : checked(ctx, next, judged, policy.ruleFor(ctx.principal, ctx.route), undefined, false);
    },
  };

  /**
   * A resources/read or resources/subscribe: its URI judged when its scheme is one that is fetched (the front
   * door made it a string).
   */
  function resourceRead(ctx: CallContext, next: Next): Promise<Outcome> {
    const uri = (ctx.message as JsonRpcRequest).params!.uri as string;
    if (!mayNameDestination(uri)) return next(ctx);
    const { found, unread } = destinationsOfUri(uri);
    if (unread) return resourceUnread(ctx, uri);
    return found.length === 0 ? next(ctx) : resourceChecked(ctx, next, uri, found);
  }

  async function resourceChecked(ctx: CallContext, next: Next, uri: string, found: Destination[]): Promise<Outcome> {
    const upstream = await resourceUpstream(uri, ctx.clientCapabilities, false, ctx.principal);
    return checked(ctx, next, found, policy.ruleForResource(ctx.principal, upstream), uri, true);
  }

  /**
   * A modern client's subscriptions/listen: each `resourceSubscriptions` URI of a fetched scheme is judged as
   * a resources/subscribe of it is, and one blocked is taken out of the filter before anything reaches an
   * upstream, so that it is left out of the acknowledgment as a URI the server does not honour is
   * (2026-07-28 basic/patterns/subscriptions.mdx §Acknowledgment: the subset the server agreed to honour),
   * and no update about it is relayed (CallContext.withheldUris). A listen has no refusal of its own to
   * carry one URI's `egress_blocked`, and its other notifications are the client's. Past
   * MAX_RESOURCE_SUBSCRIPTIONS such URIs, the rest are taken out unjudged: what is not read does not pass.
   * (Until 5 December none was judged: a listen reached the server that a resources/subscribe could not.)
   */
  function listen(ctx: CallContext, next: Next): Promise<Outcome> {
    const notifications = (ctx.message as JsonRpcRequest).params?.notifications as { resourceSubscriptions?: string[] } | undefined;
    // The front door made the filter an object and its URIs strings.
    const uris = notifications?.resourceSubscriptions;
    if (uris === undefined || !uris.some(mayNameDestination)) return next(ctx);
    return judgedListen(ctx, next, uris);
  }

  async function judgedListen(ctx: CallContext, next: Next, uris: readonly string[]): Promise<Outcome> {
    const withheld = new Set<string>();
    let judged = 0;
    for (const uri of new Set(uris)) {
      if (!mayNameDestination(uri)) continue;
      if (++judged > MAX_RESOURCE_SUBSCRIPTIONS || (await uriBlocked(ctx, uri))) withheld.add(uri);
    }
    return next(withheld.size === 0 ? ctx : withoutSubscriptions(ctx, withheld));
  }

  function uriBlocked(ctx: CallContext, uri: string): Promise<boolean> {
    return resourceUriBlocked(policy, resourceUpstream, ctx.principal, ctx.clientCapabilities, uri);
  }

  /** A URI nesting more URLs than are read: refused under the rule that would have judged them. */
  async function resourceUnread(ctx: CallContext, uri: string): Promise<Outcome> {
    const rule = policy.ruleForResource(ctx.principal, await resourceUpstream(uri, ctx.clientCapabilities, false, ctx.principal));
    return refused(ctx, uri, rule?.id ?? 'default', `The URI holds ${NESTED_TOO_FAR}, too many to check; read it another way`, {});
  }

  /**
   * A completion/complete: a server's completion handler may fetch what it completes (a URL argument's
   * pages, a host's databases) or what the arguments chosen before it name, so `argument.value` and
   * `context.arguments` are judged as a prompt's arguments are (fetched schemes and bare hosts), under the
   * rule of the prompt, or of the upstream whose resource template is named, and refused alike (-32602,
   * egress_blocked). The value is a partial one, being typed: it is read as free text (a URL, an address or
   * a dotted name, not any word under a name like `host`); the context's values are chosen, and read as a
   * prompt's arguments are (until 5 December neither was judged).
   */
  function completion(ctx: CallContext, next: Next): Promise<Outcome> {
    const params = (ctx.message as JsonRpcRequest).params!;
    const route = ctx.route;
    const { found, unread } = completionDestinations(params, route?.inputSchema);
    if (!unread && found.length === 0) return next(ctx);
    if (route !== undefined) {
      const rule = policy.ruleFor(ctx.principal, route);
      if (unread) return Promise.resolve(refuseAt('egress', ctx, refusal(route, rule?.id ?? 'default', UNREAD_ARGUMENTS, {})));
      return checked(ctx, next, found, rule, undefined, false);
    }
    // Resolve gave a prompt reference a route, and the front door made a resource reference's uri a string.
    // A reference of another type names no uri: judged as a URI no upstream holds (rules naming no tools).
    const uri = (params.ref as { uri?: unknown }).uri;
    return templateCompletion(ctx, next, typeof uri === 'string' ? uri : '', found, unread);
  }

  async function templateCompletion(ctx: CallContext, next: Next, uri: string, found: Destination[], unread: boolean): Promise<Outcome> {
    const rule = policy.ruleForResource(ctx.principal, await resourceUpstream(uri, ctx.clientCapabilities, true, ctx.principal));
    if (unread) return refused(ctx, uri, rule?.id ?? 'default', UNREAD_ARGUMENTS, {});
    return checked(ctx, next, found, rule, uri, false);
  }

  /**
   * `uri`: the resource URI read or template completed (refused in its own words); undefined for a tool or
   * prompt. `judgedUri`: what is judged is that URI itself, not arguments.
   */
  async function checked(ctx: CallContext, next: Next, found: Destination[], rule: ReturnType<EgressPolicy['ruleFor']>, uri: string | undefined, judgedUri: boolean): Promise<Outcome> {
    const seen = new Set<string>();
    for (const d of found) {
      const key = destinationKey(d);
      if (seen.has(key)) continue;
      seen.add(key);
      if (seen.size > MAX_DESTINATIONS) return refused(ctx, uri, rule?.id ?? 'default', `The ${judgedUri ? 'URI names' : 'arguments name'} more than ${MAX_DESTINATIONS} destinations; ${judgedUri ? 'read it another way' : 'split the call'}`, {});
      const checked = policy.check(d, rule);
      // A name is resolved (or found in the resolver cache) before it is judged: a wait worth a span.
      const block = await (channels.wait.hasSubscribers && d.host !== '' && canonicalIp(d.host) === undefined ? waitedOn(ctx, 'egress', 'dns.resolve', checked) : checked);
      if (block === undefined) continue;
      const where = judgedUri ? 'The URI' : d.path === '' ? 'The arguments' : `The argument "${d.path}"`;
      // A URL with no host (egress/destinations.ts): a file: URL reaches the server's own files; data:,
      // javascript: and the like no host at all.
      const reaches = d.host === '' ? (d.scheme === 'file' ? "the server's own files" : `no host (a ${d.scheme ?? ''}: URL, judged by its scheme)`) : `${d.host}${d.port !== undefined ? `:${d.port}` : ''}`;
      return refused(ctx, uri, block.rule, `${where} names ${JSON.stringify(d.value)}, which reaches ${reaches}: blocked, because ${block.reason}`, {
        argument: d.path,
        value: d.value,
        host: d.host,
        ...(d.port !== undefined ? { port: d.port } : {}),
        ...(block.address !== undefined ? { address: block.address } : {}),
        ...(block.addressClass !== undefined ? { addressClass: block.addressClass } : {}),
        rule: block.rule,
      });
    }
    return next(ctx);
  }
}

/**
 * Whether a resource URI of a fetched scheme reaches somewhere the rule of its upstream (for `principal`)
 * blocks, or nests more than is read: a listen's URI is judged so, and a reload judges so again the
 * subscriptions legacy sessions hold (gateway.ts), as a resources/subscribe of the URI would be judged now.
 * A custom scheme's URI is the server's identifier: never blocked, never resolved.
 */
export async function resourceUriBlocked(policy: EgressPolicy, resourceUpstream: ResourceUpstream, principal: Principal, capabilities: Record<string, unknown>, uri: string): Promise<boolean> {
  if (!mayNameDestination(uri)) return false;
  const { found, unread } = destinationsOfUri(uri);
  if (unread) return true;
  if (found.length === 0) return false;
  const rule = policy.ruleForResource(principal, await resourceUpstream(uri, capabilities, false, principal));
  const seen = new Set<string>();
  for (const d of found) {
    const key = destinationKey(d);
    if (seen.has(key)) continue;
    seen.add(key);
    if (seen.size > MAX_DESTINATIONS || (await policy.check(d, rule)) !== undefined) return true;
  }
  return false;
}

/**
 * What makes two destinations one to judge: scheme, host and port. A guessed reading and a plain one of the
 * same host are judged apart: the plain one may be blocked unresolved.
 */
function destinationKey(d: Destination): string {
  return `${d.scheme ?? ''}|${d.host}|${d.port ?? ''}${d.guess === true ? '|?' : ''}`;
}

/** The listen as the upstream must see it: without the resource subscriptions `withheld`. */
function withoutSubscriptions(ctx: CallContext, withheld: ReadonlySet<string>): CallContext {
  const request = ctx.message as JsonRpcRequest;
  const notifications = request.params!.notifications as Record<string, unknown>;
  const kept = (notifications.resourceSubscriptions as string[]).filter((uri) => !withheld.has(uri));
  const message: JsonRpcRequest = { ...request, params: { ...request.params, notifications: { ...notifications, resourceSubscriptions: kept } } };
  return { ...ctx, message, body: Buffer.from(JSON.stringify(message)), withheldUris: withheld };
}

/** What arguments too deep, too many or too nested to read are refused with. */
const UNREAD_ARGUMENTS = `The arguments nest deeper than ${MAX_DEPTH} levels, hold more than ${MAX_STRINGS} strings, hold JSON text inside strings more than ${MAX_JSON_TEXT_LEVELS} levels deep or over ${MAX_JSON_TEXT_CHARS} characters in all, or hold in one string ${NESTED_TOO_FAR}, too many to check for destinations; send them flatter or split the call`;

/** The destinations a server fetches among those found: a fetched scheme's URLs and bare hosts, not a custom scheme's identifiers. */
function fetchedOrBare(found: Destination[]): Destination[] {
  return found.filter((d) => d.scheme === undefined || FETCHED_SCHEMES.has(d.scheme));
}

/**
 * The destinations of a completion/complete (see completion above): `argument.value` read as free text,
 * under the path COMPLETED_VALUE; `context.arguments` as a prompt's arguments, under `schema` (the prompt's,
 * if any), each under its name. Only fetched schemes and bare hosts.
 */
function completionDestinations(params: Record<string, unknown>, schema: unknown): DestinationsFound {
  // The front door made `argument` an object and `context`, when given, one too.
  const value = destinationsIn({ [COMPLETED_VALUE]: ownValue(params.argument as Record<string, unknown>, 'value') }, undefined);
  // A value still being typed (`https://exa`) names a host only once it resolves.
  const typed = value.found.map((d): Destination => (d.guess === true ? d : { ...d, guess: true }));
  const context = params.context === undefined ? undefined : ownValue(params.context as Record<string, unknown>, 'arguments');
  const chosen = context === undefined || context === null ? undefined : destinationsIn(context, schema);
  const found = chosen === undefined ? typed : [...typed, ...chosen.found];
  return { found: fetchedOrBare(found), unread: value.unread || chosen?.unread === true };
}

/** The refusal of a tools/call or prompts/get (`uri` undefined: by its route), or of a call about the resource `uri`. */
function refused(ctx: CallContext, uri: string | undefined, rule: string, message: string, details: Record<string, unknown>): Outcome {
  return refuseAt('egress', ctx, uri === undefined ? refusal(ctx.route!, rule, message, details) : resourceRefusal(uri, rule, message, details));
}

/** A call about a resource refused: a JSON-RPC error, as a resource has no result to carry it. */
function resourceRefusal(uri: string, rule: string, message: string, details: Record<string, unknown>): ProtocolRefusal {
  const said = `Resource ${JSON.stringify(uri.length > 200 ? `${uri.slice(0, 200)}…` : uri)}: ${message[0]!.toLowerCase()}${message.slice(1)}`;
  return { kind: 'protocol', code: 'egress_blocked', rpcCode: ErrorCode.InvalidParams, message: said, rule, data: { code: 'egress_blocked', message: said, ...details } };
}

function refusal(route: Route, rule: string, message: string, details: Record<string, unknown>): ToolRefusal | ProtocolRefusal {
  if (route.kind === 'tools') return { kind: 'tool', code: 'egress_blocked', message, details, rule, meta: { 'dev.gatehouse/tool_ref': route.ref } };
  // The sentence starts with "The argument…": it follows the prompt's name here.
  const said = `Prompt ${JSON.stringify(route.publicName)}: ${message[0]!.toLowerCase()}${message.slice(1)}`;
  return { kind: 'protocol', code: 'egress_blocked', rpcCode: ErrorCode.InvalidParams, message: said, rule, data: { code: 'egress_blocked', message: said, ...details, 'dev.gatehouse/prompt_ref': route.ref } };
}
