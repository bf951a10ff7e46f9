// The egress stage, for tools/call and prompts/get: every URL, host and address in the arguments
// (egress/destinations.ts) is checked against the first egress rule that selects the call (egress/egress-
// policy.ts; a rule's tool globs match a prompt's ref as access rules' do). The first one blocked refuses
// the call with `egress_blocked` naming the argument, the value and the rule, before anything reaches the
// upstream: for a tool, a tool result (the SOIT seed: "a blocked address ... comes back as a tool result");
// for a prompt, which has no result to carry it, a JSON-RPC error -32602 with the same fields in `data`
// (server/prompts.mdx §Error Handling: invalid params). A prompt's arguments are strings its server reads as
// it likes, and one that fetches the page a prompt names reaches it as a tool would (until 5 December they
// were not judged).

import type { ProtocolRefusal, ToolRefusal } from '../errors.js';
import { canonicalIp } from '../net/addresses.js';
import { channels, waitedOn } from '../pipeline/events.js';
import type { CallContext, Route } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';
import { refuseAt, type Next, type Stage } from '../pipeline/stage.js';
import { ErrorCode, type JsonRpcRequest } from '../protocol/jsonrpc.js';
import { destinationsIn, MAX_DEPTH, MAX_JSON_TEXT_CHARS, MAX_JSON_TEXT_LEVELS, MAX_STRINGS, type Destination } from './egress/destinations.js';
import type { EgressPolicy } from './egress/egress-policy.js';

/** At most this many distinct destinations are checked per call; more is refused, not skipped. */
const MAX_DESTINATIONS = 64;

export function compileEgressStage(policy: EgressPolicy): Stage {
  return {
    name: 'egress',
    // The route of a completion/complete naming a prompt is the prompt's (resolve stage), but its arguments
    // are a partial value to complete, not the prompt's: only a prompts/get is judged here.
    applies: (ctx) => (ctx.method === 'tools/call' || ctx.method === 'prompts/get') && ctx.route !== undefined,
    // Not async: arguments that name no destination, the usual ones, are handed on without a promise of their own.
    run(ctx, next) {
      const args = (ctx.message as JsonRpcRequest).params!.arguments;
      if (args === undefined || args === null) return next(ctx);
      const { found, unread } = destinationsIn(args, ctx.route!.inputSchema);
      // What was not read cannot be passed: a URL 33 levels down reaches the server just the same.
      if (unread) {
        const rule = policy.ruleFor(ctx.principal, ctx.route);
        return Promise.resolve(refuseAt('egress', ctx, refusal(ctx.route!, rule?.id ?? 'default', `The arguments nest deeper than ${MAX_DEPTH} levels, hold more than ${MAX_STRINGS} strings, or hold JSON text inside strings more than ${MAX_JSON_TEXT_LEVELS} levels deep or over ${MAX_JSON_TEXT_CHARS} characters in all, too many to check for destinations; send them flatter or split the call`, {})));
      }
      return found.length === 0 ? next(ctx) : checked(ctx, next, found);
    },
  };

  async function checked(ctx: CallContext, next: Next, found: Destination[]): Promise<Outcome> {
    const route = ctx.route!;
    const rule = policy.ruleFor(ctx.principal, route);
    const seen = new Set<string>();
    for (const d of found) {
      const key = `${d.scheme ?? ''}|${d.host}|${d.port ?? ''}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (seen.size > MAX_DESTINATIONS) return refuseAt('egress', ctx, refusal(route, rule?.id ?? 'default', `The arguments name more than ${MAX_DESTINATIONS} destinations; split the call`, {}));
      const checked = policy.check(d, rule);
      // A name is resolved (or found in the resolver cache) before it is judged: a wait worth a span.
      const block = await (channels.wait.hasSubscribers && d.host !== '' && canonicalIp(d.host) === undefined ? waitedOn(ctx, 'egress', 'dns.resolve', checked) : checked);
      if (block === undefined) continue;
      const where = d.path === '' ? 'The arguments' : `The argument "${d.path}"`;
      // A URL with no host (egress/destinations.ts): a file: URL reaches the server's own files; data:,
      // javascript: and the like no host at all.
      const reaches = d.host === '' ? (d.scheme === 'file' ? "the server's own files" : `no host (a ${d.scheme ?? ''}: URL, judged by its scheme)`) : `${d.host}${d.port !== undefined ? `:${d.port}` : ''}`;
      return refuseAt(
        'egress',
        ctx,
        refusal(route, block.rule, `${where} names ${JSON.stringify(d.value)}, which reaches ${reaches}: blocked, because ${block.reason}`, {
          argument: d.path,
          value: d.value,
          host: d.host,
          ...(d.port !== undefined ? { port: d.port } : {}),
          ...(block.address !== undefined ? { address: block.address } : {}),
          ...(block.addressClass !== undefined ? { addressClass: block.addressClass } : {}),
          rule: block.rule,
        }),
      );
    }
    return next(ctx);
  }
}

function refusal(route: Route, rule: string, message: string, details: Record<string, unknown>): ToolRefusal | ProtocolRefusal {
  if (route.kind === 'tools') return { kind: 'tool', code: 'egress_blocked', message, details, rule, meta: { 'dev.gatehouse/tool_ref': route.ref } };
  // The sentence starts with "The argument…": it follows the prompt's name here.
  const said = `Prompt ${JSON.stringify(route.publicName)}: ${message[0]!.toLowerCase()}${message.slice(1)}`;
  return { kind: 'protocol', code: 'egress_blocked', rpcCode: ErrorCode.InvalidParams, message: said, rule, data: { code: 'egress_blocked', message: said, ...details, 'dev.gatehouse/prompt_ref': route.ref } };
}
