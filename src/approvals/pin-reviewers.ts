// Who may review a changed tool definition (tools.pinningReviewers). Accepting a change makes a rewritten
// description or a widened schema the pin every call is judged by, so it is as much a decision as approving
// a call: it is limited per tool, as approvals are per rule. The first entry whose globs match the tool's
// ref decides, and only its reviewers (by subject or group, any one) are shown that pin and may accept it.
// A ref no entry matches may be reviewed by anyone the admin API admits (as before this setting existed).
// The admin token, the break-glass operator, may review every pin.

import type { PinningReviewer } from '../config/schema.generated.js';
import { compileGlob, type Glob } from '../policy/glob.js';
import type { ReviewerIdentity } from './reviewer-rights.js';
import { mayReview } from './rules.js';

export interface PinReviewers {
  /** Whether this reviewer is shown the pin of `ref` and may accept its change. */
  mayReview(ref: string, reviewer: ReviewerIdentity): boolean;
}

interface CompiledEntry {
  tools: readonly Glob[];
  reviewers: { subjects: readonly string[]; groups: readonly string[] };
}

/** Compiled once per config; a ref is then judged by a few glob tests, only on the admin API. */
export function compilePinReviewers(entries: readonly PinningReviewer[]): PinReviewers {
  const compiled: CompiledEntry[] = entries.map((e) => ({
    // As the policy's tool globs (selector.ts): `*` any run, `?` one character, case kept.
    tools: e.tools.map((g) => compileGlob(g)),
    reviewers: { subjects: e.reviewers.subjects, groups: e.reviewers.groups },
  }));
  return {
    mayReview(ref, reviewer) {
      if (reviewer.admin) return true;
      const entry = compiled.find((e) => e.tools.some((t) => t.test(ref)));
      return entry === undefined || mayReview(entry, reviewer);
    },
  };
}
