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
  /**
   * SHA-256 of the canonical arguments, redacted values included: for the audit records only, never shown
   * to reviewers (with the preview in hand, a low-entropy redacted value falls to trying candidates).
   */
  argumentsSha256: string;
  /**
   * HMAC-SHA256 of the canonical arguments under this gateway's key (ArgumentsKey): what reviewers are shown
   * to tell calls apart (equal exactly when the arguments are, redacted values included), and what the
   * binding is made from. Absent from approvals opened before it was introduced.
   */
  argumentsDigest?: string;
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

/** An approval as reviewers see it (admin API, CLI, inbox page). */
export type ApprovalView = Omit<Approval, 'binding' | 'argumentsSha256'> & { invalidated: boolean; ageSeconds: number };

/**
 * What the admin API shows: the approval, its state now, and whether the policy it was made under still
 * holds. Not the plain SHA-256 of the arguments, nor the binding made from arguments: with the redacted
 * preview, the caller and the policy version in the view, either let a reviewer try candidates for a
 * redacted value. (The id is made from the keyed binding, and gives nothing away.)
 */
export function approvalView(a: Approval, now: number, policyVersion: string): ApprovalView {
  const { binding: _binding, argumentsSha256: _sha256, ...shown } = a;
  return { ...shown, state: effectiveState(a, now), invalidated: a.policyVersion !== policyVersion, ageSeconds: Math.max(0, Math.round((now - a.createdAt) / 1000)) };
}

export function isApproval(doc: unknown): doc is Approval {
  return typeof doc === 'object' && doc !== null && typeof (doc as Approval).id === 'string' && (doc as Approval).id.startsWith('ap_') && typeof (doc as Approval).binding === 'string';
}
