// Whether the reviewers a config names (tools.pinningReviewers, policy.approvals[].reviewers) can ever reach
// the admin API to act. It admits admin.token and the access tokens of admin.groups, nothing else; a name
// no one who gets in can carry leaves its pins and approvals to the admin token alone, and a typo did so
// without a word (a changed tool refused until the break-glass operator stepped in).
//
// Two findings, by what the config alone can tell:
// - admin.groups empty: no access token is admitted, so every group and subject named is unreachable for
//   certain. Still a warning: the config works (admin.token decides, as break-glass), and DESIGN.md §7's
//   own example (a token-only admin API, an approval rule for `groups: [sre]`) is such a config.
// - a group that is none of admin.groups: it admits no one by itself, but group membership is the issuer's,
//   and a reviewer may hold an admin group and this one (a team group under a reviewers group), so it can be
//   right. A warning (check-config, doctor, serve and each reload log it), not a refusal of a working config.

import { formatPath } from './load.js';
import type { GatehouseConfig } from './types.js';

type Path = Array<string | number>;

interface NamedReviewers {
  path: Path;
  reviewers: { subjects: readonly string[]; groups: readonly string[] };
}

export interface UnadmittedGroup {
  /** The key path of the group, as formatPath writes it. */
  key: string;
  group: string;
  message: string;
}

/** Every list of reviewers the config names, with its key path. */
function namedReviewers(config: GatehouseConfig): NamedReviewers[] {
  return [
    ...config.tools.pinningReviewers.map((e, i) => ({ path: ['tools', 'pinningReviewers', i, 'reviewers'], reviewers: e.reviewers })),
    ...config.policy.approvals.map((r, i) => ({ path: ['policy', 'approvals', i, 'reviewers'], reviewers: r.reviewers })),
  ];
}

/** The groups and subjects named while admin.groups is empty: no access token reaches the admin API to be them. */
export function unreachableReviewers(config: GatehouseConfig): UnadmittedGroup[] {
  const { admin } = config;
  if (!admin.enabled || admin.groups.length > 0) return [];
  const out: UnadmittedGroup[] = [];
  for (const { path, reviewers } of namedReviewers(config)) {
    reviewers.groups.forEach((group, j) => out.push({ key: formatPath([...path, 'groups', j]), group, message: `group "${group}" can never review: admin.groups is empty, so the admin API admits only admin.token and no access token of any group; add "${group}" to admin.groups (with auth.oauth), or remove it` }));
    reviewers.subjects.forEach((subject, j) => out.push({ key: formatPath([...path, 'subjects', j]), group: subject, message: `subject "${subject}" can never review: admin.groups is empty, so the admin API admits only admin.token and no access token of any subject; list a group of theirs in admin.groups (with auth.oauth), or remove it` }));
  }
  return out;
}

/** Every reviewer a config names that may never reach the admin API (both findings above), as warnings. */
export function reviewerReachWarnings(config: GatehouseConfig): UnadmittedGroup[] {
  return [...unreachableReviewers(config), ...unadmittedReviewerGroups(config)];
}

/** The groups named that are none of admin.groups (those that admit access tokens to the admin API). */
export function unadmittedReviewerGroups(config: GatehouseConfig): UnadmittedGroup[] {
  const { admin } = config;
  if (!admin.enabled || admin.groups.length === 0) return [];
  const admitted = new Set(admin.groups);
  const out: UnadmittedGroup[] = [];
  for (const { path, reviewers } of namedReviewers(config)) {
    reviewers.groups.forEach((group, j) => {
      if (admitted.has(group)) return;
      const lookalike = admin.groups.find((g) => g.toLowerCase() === group.toLowerCase());
      const hint = lookalike === undefined ? '' : ` (admin.groups has "${lookalike}"; groups are compared exactly)`;
      const what = path[0] === 'tools' ? 'these tools\' changes' : 'this rule\'s approvals';
      out.push({
        key: formatPath([...path, 'groups', j]),
        group,
        message: `group "${group}" is none of admin.groups (${admin.groups.join(', ')}), the only groups the admin API admits${hint}: only a reviewer in one of those as well can review ${what}, and if "${group}" is a typo no one but admin.token can; add it to admin.groups if its members are to sign in by it`,
      });
    });
  }
  return out;
}
