// What one reviewer may do with one approval. A rule's `reviewers` (subjects or groups) limit who may
// decide it; and whoever decides, an approval is a second pair of eyes, so no one approves the call they
// made themselves (separation of duties). The admin token has no subject of its own: it is the break-glass
// operator, and may always decide. A reviewer is shown only the approvals they may decide: a preview is
// the call's arguments, redacted of credentials but not of what the call is about (the refund, the mail,
// the customer), which is for the reviewers the rule names, not for every member of an admin group.

import type { Approval } from './approval.js';
import { mayReview } from './rules.js';

/** Who is deciding: `admin` for the admin token, otherwise an OAuth subject and its groups. */
export interface ReviewerIdentity {
  subject: string;
  groups: readonly string[];
  admin: boolean;
}

/** Why a decision is refused for who asked: not among the rule's reviewers, or approving one's own call. */
export type DecisionRefusal = 'forbidden' | 'self_approval';

/**
 * Whether this reviewer may make this decision, or why not. A rejection by the caller is let through: it
 * only withdraws the call (nothing runs), which is no reason to wait for someone else. An approval by the
 * caller is refused whichever rule it is under, one naming them among its reviewers or naming no one.
 * "The caller" is the approval's caller subject: the OAuth `sub` both were verified with (an API key's
 * caller is `key:<id>`, which no reviewer's token names unless its issuer says so, and then it is refused:
 * an equal subject is taken for the same person, whatever the tenant).
 */
export function decisionRefusal(a: Pick<Approval, 'reviewers' | 'caller'>, reviewer: ReviewerIdentity, approve: boolean): DecisionRefusal | undefined {
  if (reviewer.admin) return undefined;
  if (!mayReview(a, reviewer)) return 'forbidden';
  if (approve && isOwnCall(a, reviewer)) return 'self_approval';
  return undefined;
}

/** Whether the approval holds back a call this reviewer made (never true of the admin token). */
export function isOwnCall(a: Pick<Approval, 'caller'>, reviewer: ReviewerIdentity): boolean {
  return !reviewer.admin && a.caller.subject === reviewer.subject;
}

/**
 * Whether this reviewer is shown this approval (listed, shown, on the inbox page): the admin token sees
 * every one; a reviewer those of rules naming them (by subject or group) or naming no one, that is, the
 * approvals they may decide one way or the other (their own call included, which they may reject).
 */
export function mayView(a: Pick<Approval, 'reviewers'>, reviewer: ReviewerIdentity): boolean {
  return reviewer.admin || mayReview(a, reviewer);
}
