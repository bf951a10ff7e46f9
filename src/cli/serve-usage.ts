// `gatehouse serve`'s usage errors: a flag whose value serve cannot use. They exit 2 and name the flag the
// user typed, as the other commands' usage errors do; a broken config file is not one (exit 1, located in
// the file). It does not parse flags; serve.ts does.

import { ConfigError, type ConfigIssue } from '../config/load.js';

/** A flag, or a combination of flags, that serve cannot use. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The flag that sets each config key serve builds from flags (key paths as ConfigIssue.path writes them). */
const FLAG_OF: ReadonlyArray<readonly [RegExp, string]> = [
  [/^listen\.host$/, '--host'],
  [/^listen\.port$/, '--port'],
  [/^listen\.path$/, '--path'],
  [/^log\.level$/, '--log-level'],
  [/^store(\.|$)/, '--store'],
  [/^upstreams\[0\]\.url$/, '--upstream'],
  [/^upstreams\[0\]\.command(\[|$)/, '--stdio'],
];

/**
 * Validates what the flags built (`check` throws a ConfigError); its problems become a UsageError naming
 * each flag. The config's validator locates a key by a file's line and column, which a flag has none of:
 * reported as they were, they read "command line:0:0 log.level: …", pointing into no file.
 */
export function checkFlags<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new UsageError(err.issues.map(flagProblem).join('\n'));
  }
}

function flagProblem(issue: ConfigIssue): string {
  const flag = FLAG_OF.find(([path]) => path.test(issue.path))?.[1];
  // A key no flag sets cannot be wrong when the file it came from was valid; named by its path all the same.
  return `${flag ?? issue.path}: ${issue.message}`;
}
