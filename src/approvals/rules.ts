// Which calls need approval (policy.approvals): the policy selectors (caller, tool globs, annotations)
// plus a match on argument values by dotted path. Compiled once per config; the first rule that selects a
// call decides.

import { createHash } from 'node:crypto';
import type { ApprovalRule } from '../config/schema.generated.js';
import type { Principal } from '../pipeline/principal.js';
import type { Route } from '../pipeline/context.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import { compileSelector, type Selector } from '../policy/selector.js';
import { compileGlob } from '../policy/glob.js';

export interface CompiledApprovalRule {
  id: string;
  by: 'reviewer' | 'user';
  reviewers: { subjects: readonly string[]; groups: readonly string[] };
  deadlineMs: number;
  reuse: number;
  selector: Selector;
  /** Whether the arguments have the values the rule names (true when it names none). */
  matchesArguments(args: Record<string, unknown>): boolean;
}

export function compileApprovalRules(rules: readonly ApprovalRule[]): CompiledApprovalRule[] {
  return rules.map((r) => {
    const checks = Object.entries(r.arguments ?? {}).map(([path, expected]) => ({ path: path.split('.'), test: valueTest(expected) }));
    return {
      id: r.id,
      by: r.by,
      reviewers: { subjects: r.reviewers.subjects, groups: r.reviewers.groups },
      deadlineMs: r.deadlineSeconds * 1000,
      reuse: r.reuse,
      selector: compileSelector(r),
      matchesArguments: (args) => checks.every((c) => c.test(valueAt(args, c.path))),
    };
  });
}

/** The first rule that selects this call by caller, tool and arguments. */
export function approvalRuleFor(rules: readonly CompiledApprovalRule[], principal: Principal, route: Route, args: Record<string, unknown>): CompiledApprovalRule | undefined {
  for (const rule of rules) if (rule.selector.matches(principal, route) && rule.matchesArguments(args)) return rule;
  return undefined;
}

/**
 * The policy version an approval is bound to: a digest of the whole policy section. Any change to it
 * (a rule tightened, a reviewer removed) makes pending approvals invalid and identical calls ask anew.
 */
export function policyVersion(policy: unknown): string {
  return createHash('sha256').update(canonicalJson(policy)).digest('hex').slice(0, 16);
}

/** May this reviewer decide on calls of this rule? Subjects or groups, any one; a rule naming none lets any admin decide. */
export function mayReview(rule: { reviewers: { subjects: readonly string[]; groups: readonly string[] } }, reviewer: { subject: string; groups: readonly string[] }): boolean {
  const { subjects, groups } = rule.reviewers;
  if (subjects.length === 0 && groups.length === 0) return true;
  return subjects.includes(reviewer.subject) || groups.some((g) => reviewer.groups.includes(g));
}

function valueAt(value: unknown, path: readonly string[]): unknown {
  let at = value;
  for (const key of path) {
    if (typeof at !== 'object' || at === null || Array.isArray(at) || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

function valueTest(expected: string | number | boolean): (actual: unknown) => boolean {
  if (typeof expected !== 'string') return (actual) => actual === expected;
  // `*` any run, `?` itself, case ignored (policy/glob.ts: no regular expression, so no backtracking).
  const pattern = compileGlob(expected, { anyOne: false, ignoreCase: true });
  return (actual) => (typeof actual === 'string' || typeof actual === 'number' || typeof actual === 'boolean') && pattern.test(String(actual));
}
