// `gatehouse check-config FILE`: validates a config and lists every problem.

import { ConfigError, loadConfigFile } from '../config/load.js';
import { unsupportedFeatures } from '../config/semantic-checks.js';
import { CHECK_CONFIG_HELP } from './help.js';
import type { CommandIO } from './io.js';

export async function checkConfigCommand(args: string[], io: CommandIO): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    io.out(CHECK_CONFIG_HELP);
    return 0;
  }
  const file = args[0];
  if (file === undefined || args.length > 1) {
    io.err('usage: gatehouse check-config FILE\n');
    return 2;
  }
  try {
    const config = await loadConfigFile(file, io.env);
    const problems = unsupportedFeatures(config);
    if (problems.length > 0) {
      io.err(`${file}: valid, but this build cannot serve it:\n  ${problems.join('\n  ')}\n`);
      return 1;
    }
    io.out(`${file}: ok\n`);
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(err.message + '\n');
      return 1;
    }
    io.err(`${file}: ${(err as Error).message}\n`);
    return 1;
  }
}
