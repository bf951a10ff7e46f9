// Who may see and use which tool, prompt and resource: the access part of `policy.rules`, plus the tool
// allow-list an API key carries. Lists are filtered with it and calls are checked with it, so a hidden
// item is indistinguishable from one that does not exist.
//
// Rules are read in order; the first rule that matches the caller and names the item decides. When rules
// name items of a kind and none of them matches, the item is denied: an access list is an allow-list once
// it exists. A kind no rule mentions stays visible to everyone (subject to the key's own list).

import type { PolicyRuleConfig } from '../config/types.js';
import type { Principal } from '../pipeline/principal.js';
import { compileGlob, type Glob } from './glob.js';

/** A policy glob (`*`, `?`), as `map` calls it. */
const toGlob = (glob: string): Glob => compileGlob(glob);

export type ItemKind = 'tools' | 'prompts' | 'resources';

interface CompiledRule {
  rule: PolicyRuleConfig;
  patterns: Record<ItemKind, Glob[] | undefined>;
}

export class AccessPolicy {
  private readonly rules: CompiledRule[];
  private readonly governed: Record<ItemKind, boolean>;
  /** Whether a rule answers a caller lacking its scopes with a step-up (`onMissingScopes: challenge`). */
  readonly challenges: boolean;

  constructor(rules: readonly PolicyRuleConfig[]) {
    this.rules = rules.map((rule) => ({
      rule,
      patterns: { tools: rule.tools?.map(toGlob), prompts: rule.prompts?.map(toGlob), resources: rule.resources?.map(toGlob) },
    }));
    this.governed = {
      tools: rules.some((r) => r.tools !== undefined),
      prompts: rules.some((r) => r.prompts !== undefined),
      resources: rules.some((r) => r.resources !== undefined),
    };
    this.challenges = rules.some((r) => r.onMissingScopes === 'challenge');
  }

  /**
   * True when what a caller sees depends on who it is: a key with its own tool list, a rule that selects
   * callers (subjects, tenants, groups, scopes, keys), or rules on resources (whose lists, reads and
   * update notifications only the catalog filters). Otherwise rules on tools and prompts hide the same
   * items from everyone, and a single upstream that has none of them can be passed through as it is.
   */
  perCaller(hasKeyToolLists: boolean): boolean {
    return hasKeyToolLists || this.governed.resources || this.rules.some(({ rule }) => selectsCallers(rule));
  }

  /** Whether any rule names items of this kind (then what it does not allow is hidden). */
  governs(kind: ItemKind): boolean {
    return this.governed[kind];
  }

  /** Whether rules that select no caller hide the item from everyone (meaningful when `perCaller` is false). */
  hidesFromEveryone(kind: ItemKind, ref: string): boolean {
    if (!this.governed[kind]) return false;
    for (const { rule, patterns } of this.rules) {
      if (selectsCallers(rule) || !patterns[kind]?.some((p) => p.test(ref))) continue;
      return rule.access !== 'allow';
    }
    return true;
  }

  /**
   * May this caller see the item (a tool or prompt ref `upstream/name`, or a resource URI)? An item the
   * caller could use after a step-up (`decide` gives scopes) is listed.
   */
  allows(principal: Principal, kind: ItemKind, ref: string): boolean {
    return this.decide(principal, kind, ref) !== false;
  }

  /**
   * May this caller use the item: true, false, or the scopes to ask for. The scopes come from the first
   * `onMissingScopes: challenge` rule that names the item and would match the caller but for its scopes,
   * when no rule before the deciding one lets the caller in: the caller's own scopes and the rule's, so a
   * step-up keeps what was granted (2025-11-25/basic/authorization.mdx §Runtime Insufficient Scope Errors).
   */
  decide(principal: Principal, kind: ItemKind, ref: string): boolean | { scopes: string[] } {
    if (kind === 'tools' && principal.toolGlobs !== undefined && !principal.toolGlobs.some((g) => compileGlob(g).test(ref))) return false;
    if (!this.governed[kind]) return true;
    let stepUp: PolicyRuleConfig | undefined;
    for (const { rule, patterns } of this.rules) {
      const list = patterns[kind];
      if (list === undefined || !list.some((p) => p.test(ref))) continue;
      if (!matchesCaller(rule, principal)) {
        if (stepUp === undefined && rule.onMissingScopes === 'challenge' && matchesCaller(rule, principal, true)) stepUp = rule;
        continue;
      }
      if (rule.access === 'allow') return true;
      break;
    }
    if (stepUp === undefined) return false;
    // offline_access is a refresh-token grant, not something this resource needs: never asked for.
    return { scopes: [...new Set([...principal.scopes, ...(stepUp.scopes ?? [])])].filter((scope) => scope !== 'offline_access') };
  }
}

function selectsCallers(rule: PolicyRuleConfig): boolean {
  return rule.subjects !== undefined || rule.tenants !== undefined || rule.groups !== undefined || rule.scopes !== undefined || rule.keys !== undefined;
}

/** `ignoringScopes`: whether the caller would match if it held the rule's scopes. */
function matchesCaller(rule: PolicyRuleConfig, p: Principal, ignoringScopes = false): boolean {
  if (rule.subjects && !rule.subjects.includes(p.subject)) return false;
  if (rule.tenants && (p.tenant === undefined || !rule.tenants.includes(p.tenant))) return false;
  if (rule.groups && !rule.groups.some((g) => p.groups.includes(g))) return false;
  if (!ignoringScopes && rule.scopes && !rule.scopes.every((s) => p.scopes.includes(s))) return false;
  if (rule.keys && (p.keyId === undefined || !rule.keys.includes(p.keyId))) return false;
  return true;
}

