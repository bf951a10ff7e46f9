// Rate limits (`policy.rateLimits`): token buckets `{rate, perSeconds, burst}` counted per ip, subject,
// key, tenant, upstream or tool, kept in the store so that replicas on one Redis enforce a limit once.
// Per-ip entries are applied at the door, after authentication and before the body is read (429 with
// Retry-After); the others by the rate-limit stage, to tools/call (`rate_limited`, a tool result). In each
// group the first entry that selects the request applies.

import type { RateLimit } from '../config/schema.generated.js';
import type { ToolRefusal, TransportRefusal } from '../errors.js';
import type { Route } from '../pipeline/context.js';
import type { Principal } from '../pipeline/principal.js';
import { ErrorCode } from '../protocol/jsonrpc.js';
import type { Answer, TokenTake } from '../store/store.js';
import { compileSelector, firstMatch, type Selector } from './selector.js';
import { tenantName } from './caller-names.js';

export interface CompiledLimit {
  id: string;
  per: RateLimit['per'];
  selector: Selector;
  bucket: { rate: number; perMs: number; burst: number };
  describe: string;
}

/** Takes `cost` tokens (1 when not given) from a bucket through the store, all or none (fails closed when the store does). */
export type TakeToken = (key: string, bucket: CompiledLimit['bucket'], cost?: number) => Answer<TokenTake>;

export function compileLimits(entries: readonly RateLimit[]): { ip: CompiledLimit[]; call: CompiledLimit[] } {
  const all = entries.map((e): CompiledLimit => {
    const perSeconds = e.perSeconds ?? 1;
    return {
      id: e.id,
      per: e.per,
      selector: compileSelector(e),
      bucket: { rate: e.rate, perMs: perSeconds * 1000, burst: e.burst ?? Math.max(1, Math.ceil(e.rate)) },
      describe: `${e.rate} call${e.rate === 1 ? '' : 's'} per ${perSeconds === 1 ? 'second' : `${perSeconds} s`}${e.burst !== undefined ? `, bursts of ${e.burst}` : ''}`,
    };
  });
  return { ip: all.filter((l) => l.per === 'ip'), call: all.filter((l) => l.per !== 'ip') };
}

/** Whose bucket a call draws from under this limit. */
export function bucketKey(limit: CompiledLimit, p: Principal, route: Route | undefined, address: string): string {
  const who =
    limit.per === 'ip'
      ? address
      : limit.per === 'subject'
        ? `${p.via}:${p.subject}`
        : limit.per === 'key'
          ? (p.keyId !== undefined ? `key:${p.keyId}` : `${p.via}:${p.subject}`)
          : limit.per === 'tenant'
            ? tenantName(p)
            : limit.per === 'upstream'
              ? (route?.upstream ?? '-')
              : toolTarget(route, limit.selector);
  return `rl:${limit.id}:${who}`;
}

/**
 * Whose tool a call is counted against under a limit or budget `per: tool`: the tool's ref, or, for a name
 * no list gave (one upstream served by pass-through answers such names itself), one count shared by all
 * such names of that upstream. Kept per name, each name a caller made up would be a fresh bucket and a
 * store row of its own: a limit evaded by renaming, and state without bound. (A ref always holds a `/`,
 * an upstream's name never does, so the two cannot meet.) An unlisted name the entry itself names, written
 * out, keeps its ref: a tool called before the catalog has a list (or while its list fails) is the same tool
 * it will be once listed, and counting it apart let it run twice its limit; the names an entry writes out
 * are the config's, so they bound the rows.
 */
export function toolTarget(route: Route | undefined, selector: Selector): string {
  if (route === undefined) return '-';
  return route.listed || selector.namesExactly(route.ref) ? route.ref : `unlisted:${route.upstream}`;
}

/**
 * At the door: the first per-ip limit that selects the caller, as a 429 when its bucket is empty. `batch`:
 * the further messages of a 2025-03-26 batch whose request took its token at the door already; they take
 * theirs at once or not at all. Taken one by one, a refused batch drained the bucket and was told to retry
 * when one token was back, into the same refusal, for good.
 */
export async function checkIpLimit(limits: readonly CompiledLimit[], p: Principal, address: string, take: TakeToken, batch = 0): Promise<TransportRefusal | undefined> {
  const limit = firstMatch(limits, p, undefined);
  if (limit === undefined) return undefined;
  const { rate, perMs, burst } = limit.bucket;
  // A batch the bucket can never hold whole: refused as it is, taking nothing.
  if (batch > 0 && batch + 1 > burst) return addressLimited(limit, Math.ceil(((batch + 1) * perMs) / rate), `a batch of ${batch + 1} messages takes ${batch + 1} tokens, more than its burst of ${burst}: send at most ${burst} at a time`);
  const taken = await take(bucketKey(limit, p, undefined, address), limit.bucket, batch > 0 ? batch : 1);
  if (taken.allowed) return undefined;
  // A retried batch takes its door token again: the wait is for that one too.
  if (batch > 0) return addressLimited(limit, taken.retryAfterMs + perMs / rate, `a batch of ${batch + 1} messages takes ${batch + 1} tokens`);
  return addressLimited(limit, taken.retryAfterMs);
}

function addressLimited(limit: CompiledLimit, retryAfterMs: number, batch?: string): TransportRefusal {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return {
    kind: 'transport',
    code: 'rate_limited',
    status: 429,
    rpcCode: ErrorCode.InvalidRequest,
    message: `Rate limit "${limit.id}" reached for this address (${limit.describe})${batch !== undefined ? `; ${batch}` : ''}; retry in ${seconds} s`,
    headers: { 'retry-after': String(seconds) },
    data: { code: 'rate_limited', rule: limit.id, retryAfter: seconds },
    rule: limit.id,
  };
}

/** The tool result for a call over its limit. */
export function rateLimited(limit: CompiledLimit, route: Route, retryAfterMs: number): ToolRefusal {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return {
    kind: 'tool',
    code: 'rate_limited',
    message: `Rate limit "${limit.id}" reached (${limit.describe}, counted per ${limit.per}); retry in ${seconds} s`,
    details: { rule: limit.id, per: limit.per, retryAfter: seconds },
    meta: { 'dev.gatehouse/tool_ref': route.ref, 'dev.gatehouse/retry_after': seconds },
    rule: limit.id,
  };
}
