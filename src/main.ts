#!/usr/bin/env node
// Process entry: picks the command and exits with its status. Commands do the work.

// First: V8's settings apply before any other module runs (v8-tuning.ts says why).
import './v8-tuning.js';
import { readFileSync } from 'node:fs';
import { approvalsCommand } from './cli/approvals.js';
import { auditCommand } from './cli/audit.js';
import { budgetsCommand } from './cli/budgets.js';
import { checkConfigCommand } from './cli/check-config.js';
import { doctorCommand } from './cli/doctor.js';
import { hashKeyCommand } from './cli/hash-key.js';
import { MAIN_HELP } from './cli/help.js';
import { pinsCommand } from './cli/pins.js';
import { processIO } from './cli/io.js';
import { serveCommand } from './cli/serve.js';
import { reportEscaped } from './log/fault-exit.js';

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

const COMMANDS = new Set(['serve', 'check-config', 'hash-key', 'doctor', 'audit', 'budgets', 'approvals', 'pins']);

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // `gatehouse help serve`, the git and npm habit, is `gatehouse serve --help`.
  if (command === 'help' && rest[0] !== undefined) {
    if (COMMANDS.has(rest[0])) return main([rest[0], '--help']);
    processIO.err(`unknown command "${rest[0]}"\n\n${MAIN_HELP}`);
    return 2;
  }
  switch (command) {
    case 'serve':
      return serveCommand(rest, processIO);
    case 'check-config':
      return checkConfigCommand(rest, processIO);
    case 'hash-key':
      return hashKeyCommand(rest, processIO);
    case 'doctor':
      return doctorCommand(rest, processIO);
    case 'audit':
      return auditCommand(rest, processIO);
    case 'budgets':
      return budgetsCommand(rest, processIO);
    case 'approvals':
      return approvalsCommand(rest, processIO);
    case 'pins':
      return pinsCommand(rest, processIO);
    case '--version':
    case '-v':
      processIO.out(`gatehouse ${version()}\n`);
      return 0;
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      processIO.out(MAIN_HELP);
      return 0;
    default:
      processIO.err(`unknown command "${command}"\n\n${MAIN_HELP}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    // Never the raw stack: its text quotes the message, which may hold request data (log/fault-exit.ts).
    reportEscaped(err);
    process.exitCode = 1;
  },
);
