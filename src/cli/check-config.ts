// `gatehouse check-config [--env-optional] FILE`: validates a config and lists every problem. With
// --env-optional, secrets that are absent here (unset ${env:...}, missing ${file:...}, or one this user may
// not read) are warnings: a file can be checked where its secrets do not live, as in CI. A Redis store's
// certificate that has expired or expires within two weeks is a warning too (store-tls-expiry.ts), as is a
// store.tls.passphrase given for a key that is not encrypted (store-tls.ts).

import { parseArgs } from 'node:util';
import { ConfigError, formatIssue, loadConfigFileWithText, type ConfigIssue } from '../config/load.js';
import { locateProblems } from '../config/locate-problems.js';
import { unsupportedFeatures } from '../config/semantic-checks.js';
import { configWarnings } from '../config/config-warnings.js';
import { storeTlsExpiryWarnings } from '../config/store-tls-expiry.js';
import { storeTlsWarnings } from '../config/store-tls.js';
import { CHECK_CONFIG_HELP } from './help.js';
import type { CommandIO } from './io.js';

const OPTIONS = { 'env-optional': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;

export async function checkConfigCommand(args: string[], io: CommandIO): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: true });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${CHECK_CONFIG_HELP}`);
    return 2;
  }
  if (parsed.values.help) {
    io.out(CHECK_CONFIG_HELP);
    return 0;
  }
  const file = parsed.positionals[0];
  if (file === undefined || parsed.positionals.length > 1) {
    io.err(`usage: gatehouse check-config [--env-optional] FILE\n`);
    return 2;
  }
  const warnings: ConfigIssue[] = [];
  try {
    const { config, text } = await loadConfigFileWithText(file, io.env, { optionalSecrets: parsed.values['env-optional'] === true, warnings });
    for (const w of warnings) io.err(`warning: ${formatIssue(w)}\n`);
    // Problems that relate keys, located like the schema's: FILE:LINE:COL key.path: message.
    const problems = unsupportedFeatures(config);
    if (problems.length > 0) {
      io.err(`${locateProblems(file, text, problems).join('\n')}\n`);
      return 1;
    }
    for (const w of locateProblems(file, text, [...configWarnings(config), ...storeTlsWarnings(config.store), ...storeTlsExpiryWarnings(config.store)])) io.err(`warning: ${w}\n`);
    io.out(`${file}: ok${warnings.length > 0 ? ` (${warnings.length} secret${warnings.length === 1 ? '' : 's'} not present here)` : ''}\n`);
    return 0;
  } catch (err) {
    for (const w of warnings) io.err(`warning: ${formatIssue(w)}\n`);
    io.err(`${err instanceof ConfigError ? err.message : `${file}: ${(err as Error).message}`}\n`);
    return 1;
  }
}
