// The config as a command that reads only part of it loads it (audit and budgets: the store; approvals and
// pins: the admin listener). Where an operator runs such a command, the secrets the gateway needs for its
// upstreams (tokens, API keys) are often absent, and need not be there: only the settings the command uses
// must be. A secret one of those needs and lacks is the error, named by its setting and its variable or
// file, never by a value.

import { ConfigError, loadConfigFile, type ConfigIssue } from '../config/load.js';
import type { GatehouseConfig } from '../config/types.js';

/**
 * Loads `file` with absent secrets allowed outside `needs` (setting paths such as `store` or `admin.token`,
 * each taking in what lies under it); an absent one under them throws a ConfigError that says `what` needs it.
 * Every other problem in the file (syntax, schema, an unreadable secret file) still fails the load.
 */
export async function loadConfigFor(file: string, env: NodeJS.ProcessEnv, needs: readonly string[], what: string): Promise<GatehouseConfig> {
  const warnings: ConfigIssue[] = [];
  const config = await loadConfigFile(file, env, { optionalSecrets: true, warnings });
  // An absent secret keeps its `${...}` text as its value: a needed one must not be used as if it were read.
  const missing = warnings.filter((w) => needs.some((n) => w.path === n || w.path.startsWith(`${n}.`) || w.path.startsWith(`${n}[`)));
  if (missing.length > 0) throw new ConfigError(missing.map((w) => ({ ...w, message: `${w.message}; ${what} needs it` })));
  return config;
}
