// Tool and prompt refs in the config (`upstream/name`, globs) that name an upstream the config does not have.
// Such a ref can never match: a deny rule denies nothing, an approval rule lets its calls run unapproved, a
// limit limits nothing, a key's list hides a tool for good. A typo, or an upstream renamed or removed, passed
// every check; it is refused instead, as every other config a gateway cannot mean is.

import type { GatehouseConfig } from './types.js';
import { formatPath } from './load.js';

type Path = Array<string | number>;

/** Each list of refs in the config, with its key path. */
function refLists(config: GatehouseConfig): Array<[Path, readonly string[] | undefined]> {
  const lists: Array<[Path, readonly string[] | undefined]> = [];
  config.auth.apiKeys.forEach((k, i) => lists.push([['auth', 'apiKeys', i, 'tools'], k.tools]));
  const { policy } = config;
  policy.rules.forEach((r, i) => lists.push([['policy', 'rules', i, 'tools'], r.tools], [['policy', 'rules', i, 'prompts'], r.prompts]));
  for (const name of ['egress', 'rateLimits', 'budgets', 'breakers', 'approvals'] as const) {
    policy[name].forEach((e: { tools?: string[] }, i: number) => lists.push([['policy', name, i, 'tools'], e.tools]));
  }
  lists.push([['idempotency', 'tools'], config.idempotency.tools], [['idempotency', 'exempt'], config.idempotency.exempt]);
  // A pin entry matching nothing fails open: its tools' changes are any admin's to accept, not its reviewers'.
  config.tools.pinningReviewers.forEach((e, i) => lists.push([['tools', 'pinningReviewers', i, 'tools'], e.tools]));
  return lists;
}

/** One problem per ref whose upstream part is written out (no `*` or `?`) and is no configured upstream's name. */
export function toolRefProblems(config: GatehouseConfig): string[] {
  const names = new Set(config.upstreams.map((u) => u.name));
  const known = [...names].join(', ');
  const example = config.upstreams[0]?.name ?? 'upstream';
  const problems: string[] = [];
  for (const [path, refs] of refLists(config)) {
    refs?.forEach((ref, j) => {
      const slash = ref.indexOf('/');
      const upstream = slash < 0 ? ref : ref.slice(0, slash);
      // A glob may match any upstream's refs (`*`, `*/delete_*`, `*search`): nothing to judge; nor a secret
      // absent here (check-config --env-optional keeps its `${...}` text).
      if (/[*?]/.test(upstream) || ref.includes('${')) return;
      const at = formatPath([...path, j]);
      if (slash < 0) problems.push(`${at}: "${ref}" names no upstream; tool refs are upstream/name (${example}/${ref})`);
      else if (!names.has(upstream)) problems.push(`${at}: "${ref}" names the upstream "${upstream}", which is not configured (upstreams: ${known}); tool refs are upstream/name`);
    });
  }
  return problems;
}
