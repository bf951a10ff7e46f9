// Which calls a policy entry applies to: the access rules' selectors (subjects, tenants, groups, scopes,
// keys, tool globs) plus tool annotations. Every listed selector must match; an entry that lists none
// applies to everyone. Compiled once per config.

import type { Principal } from '../pipeline/principal.js';
import type { Route } from '../pipeline/context.js';
import { compileGlob } from './glob.js';

export interface SelectorConfig {
  subjects?: string[];
  tenants?: string[];
  groups?: string[];
  scopes?: string[];
  keys?: string[];
  tools?: string[];
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
}

export interface Selector {
  /** The caller alone (subjects, tenants, groups, scopes, keys). */
  matchesCaller(p: Principal): boolean;
  /** The caller and the tool (its ref and annotations); without a route, entries naming tools do not match. */
  matches(p: Principal, route: Route | undefined): boolean;
  /** Whether it names tools or annotations (so it needs a route). */
  readonly namesTools: boolean;
  /** Whether one of its tool patterns is this very ref, written out without `*` or `?`. */
  namesExactly(ref: string): boolean;
}

export function compileSelector(c: SelectorConfig): Selector {
  const tools = c.tools?.map((g) => compileGlob(g));
  const annotations = c.annotations ? Object.entries(c.annotations) : undefined;
  const exact = new Set(c.tools?.filter((g) => !/[*?]/.test(g)));
  const matchesCaller = (p: Principal): boolean => {
    if (c.subjects && !c.subjects.includes(p.subject)) return false;
    if (c.tenants && (p.tenant === undefined || !c.tenants.includes(p.tenant))) return false;
    if (c.groups && !c.groups.some((g) => p.groups.includes(g))) return false;
    if (c.scopes && !c.scopes.every((s) => p.scopes.includes(s))) return false;
    if (c.keys && (p.keyId === undefined || !c.keys.includes(p.keyId))) return false;
    return true;
  };
  return {
    namesTools: tools !== undefined || annotations !== undefined,
    namesExactly: (ref) => exact.has(ref),
    matchesCaller,
    matches(p, route) {
      if (!matchesCaller(p)) return false;
      if (tools && (route === undefined || !tools.some((t) => t.test(route.ref)))) return false;
      if (annotations) {
        const declared = route?.annotations;
        if (declared === undefined) return false;
        for (const [hint, value] of annotations) if (declared[hint as keyof typeof declared] !== value) return false;
      }
      return true;
    },
  };
}

/** The first entry whose selector matches: "within each list the first matching entry applies" (DESIGN.md §7). */
export function firstMatch<T extends { selector: Selector }>(entries: readonly T[], p: Principal, route: Route | undefined): T | undefined {
  for (const e of entries) if (e.selector.matches(p, route)) return e;
  return undefined;
}
