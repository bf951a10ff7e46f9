// Public names for tools and prompts: safe for clients and model APIs (`[A-Za-z0-9_-]`, at most 64
// characters), derived from the refs (`upstream/original-name`) and the configured upstreams' order alone,
// so every replica and every restart agrees. The catalog's lists and routes, and the doctor, use it.

import { createHash } from 'node:crypto';

export const MAX_NAME_LENGTH = 64;
/** Hex characters of the ref's SHA-256 appended to names that collide or run long. */
const DIGEST_LENGTH = 8;

export type PrefixMode = 'auto' | 'always' | 'never';

export interface Ref {
  upstream: string;
  name: string;
}

export function refString(ref: Ref): string {
  return `${ref.upstream}/${ref.name}`;
}

/** The name before collisions are considered: unsafe characters replaced, the prefix added when asked. */
export function baseName(ref: Ref, prefixed: boolean): string {
  const safe = ref.name.replace(/[^A-Za-z0-9_-]/g, '_') || '_';
  return prefixed ? `${ref.upstream}_${safe}` : safe;
}

export function digestOf(ref: Ref, length = DIGEST_LENGTH): string {
  return createHash('sha256').update(refString(ref)).digest('hex').slice(0, length);
}

function withDigest(base: string, ref: Ref, length = DIGEST_LENGTH): string {
  const suffix = `_${digestOf(ref, length)}`;
  return base.slice(0, MAX_NAME_LENGTH - suffix.length) + suffix;
}

/** The ref whose upstream comes first in `upstreams`; undefined when none is configured (never, from the catalog). */
function firstConfigured(owners: readonly Ref[], upstreams: readonly string[]): Ref | undefined {
  let best: { ref: Ref; at: number } | undefined;
  for (const ref of owners) {
    const at = upstreams.indexOf(ref.upstream);
    if (at >= 0 && (best === undefined || at < best.at)) best = { ref, at };
  }
  return best?.ref;
}

/**
 * Public names for a set of refs.
 * - A ref keeps its base name when no other ref shares it and it fits in 64 characters.
 * - Where several refs share a base name, the one whose original name was already safe (its base name is
 *   that name, with the prefix when there is one) keeps it. Adding a tool that merely sanitizes to an existing name never renames the
 *   existing one. Where several were already safe (they come from different upstreams: `a/search` and
 *   `b/search` without a prefix, `a/b_c` and `a_b/c` with one), the one whose upstream comes first in
 *   `upstreams` (the config's order) keeps it.
 * - Every other ref in the group, and every name over 64 characters, gets `_` + 8 hex of SHA-256(ref),
 *   truncating before it.
 * The result depends on the set and the configured upstreams only, never on the order of the refs.
 */
export function assignPublicNames(refs: readonly Ref[], mode: PrefixMode, upstreams: readonly string[]): Map<string, string> {
  const prefixed = mode === 'always' || (mode === 'auto' && upstreams.length > 1);
  const groups = new Map<string, Ref[]>();
  for (const ref of refs) {
    const base = baseName(ref, prefixed);
    const group = groups.get(base);
    if (group) group.push(ref);
    else groups.set(base, [ref]);
  }
  const out = new Map<string, string>();
  for (const [base, group] of groups) {
    const fits = base.length <= MAX_NAME_LENGTH;
    // The owner is the ref whose name needed no replacing: with the prefix too (several upstreams, the
    // default), or a name that sanitizes to a listed one renamed both and broke the one clients had cached.
    const owners = group.filter((r) => base === (prefixed ? `${r.upstream}_${r.name}` : r.name));
    // Several owners: the upstream first in the config. Giving none the name renamed the first whenever
    // another joined (a member down since the start answering at last), and a cached name answered -32602.
    const keeper = fits && (group.length === 1 ? group[0] : owners.length === 1 ? owners[0] : firstConfigured(owners, upstreams));
    for (const ref of group) {
      const name = ref === keeper ? base : withDigest(base, ref);
      out.set(refString(ref), name);
    }
  }
  // A digest name could, in theory, equal another tool's plain name: widen the digest for those.
  const counts = new Map<string, number>();
  for (const name of out.values()) counts.set(name, (counts.get(name) ?? 0) + 1);
  for (const ref of refs) {
    const key = refString(ref);
    const name = out.get(key)!;
    if ((counts.get(name) ?? 0) > 1 && name !== baseName(ref, prefixed)) out.set(key, withDigest(baseName(ref, prefixed), ref, 16));
  }
  return out;
}
