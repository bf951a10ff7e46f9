// An approval as the store keeps it: one JSON document per request for approval, bound to the exact call
// (caller, upstream, tool ref, SHA-256 of the canonical arguments, policy version) and to a deadline.

export type ApprovalState = 'pending' | 'approved' | 'rejected' | 'expired' | 'used';

export interface ApprovalCaller {
  subject: string;
  tenant?: string;
  keyId?: string;
  via: string;
}

export interface ApprovalDecision {
  /** Who decided: a reviewer's subject, `admin-token`, or `user` for an elicitation answer. */
  by: string;
  at: number;
  reason?: string;
  /** SHA-256 of the redacted preview the decision was made on. */
  previewSha256: string;
}

export interface Approval {
  id: string;
  /** SHA-256 of the binding: the same call by the same caller under the same policy. */
  binding: string;
  /** How many approvals of this binding came before (each one used up, refused or expired). */
  generation: number;
  /** The policy.approvals entry that asked for it. */
  rule: string;
  by: 'reviewer' | 'user';
  reviewers: { subjects: string[]; groups: string[] };
  /** How many times the approved call may run. */
  reuse: number;
  caller: ApprovalCaller;
  upstream: string;
  toolRef: string;
  /** The name the client called. */
  tool: string;
  argumentsSha256: string;
  /** The arguments with secrets redacted: what reviewers see. */
  preview: unknown;
  previewSha256: string;
  policyVersion: string;
  createdAt: number;
  /** The deadline: for the decision, and then for running the approved call. */
  expiresAt: number;
  state: ApprovalState;
  decision?: ApprovalDecision;
  /** The caller has been answered the rejection or expiry; the next identical call asks anew. */
  told?: boolean;
  /**
   * The decision is saved but not yet known to be audited, so it is not in effect (ApprovalBook reads the
   * approval as pending, or as decided once the decision's slot says its audit record was written).
   */
  unaudited?: true;
}

/** The state as of `now`: a pending or approved approval past its deadline has expired. */
export function effectiveState(a: Approval, now: number): ApprovalState {
  return (a.state === 'pending' || a.state === 'approved') && now >= a.expiresAt ? 'expired' : a.state;
}

/** What the admin API shows: the approval, its state now, and whether the policy it was made under still holds. */
export function approvalView(a: Approval, now: number, policyVersion: string): Approval & { invalidated: boolean; ageSeconds: number } {
  return { ...a, state: effectiveState(a, now), invalidated: a.policyVersion !== policyVersion, ageSeconds: Math.max(0, Math.round((now - a.createdAt) / 1000)) };
}

export function isApproval(doc: unknown): doc is Approval {
  return typeof doc === 'object' && doc !== null && typeof (doc as Approval).id === 'string' && (doc as Approval).id.startsWith('ap_') && typeof (doc as Approval).binding === 'string';
}
