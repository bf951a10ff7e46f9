// `gatehouse budgets show [--subject S]`: the budget counters of the current windows, read from the store
// the config names (or a SQLite file given with --store). With the config, each line also gets its
// budget's limit and window.

import { parseArgs } from 'node:util';
import type { Budget } from '../config/schema.generated.js';
import { ConfigError } from '../config/load.js';
import type { StoreConfig } from '../config/types.js';
import { BUDGET_PREFIX } from '../policy/budget-stage.js';
import type { BudgetCounter } from '../store/store.js';
import { BUDGETS_HELP } from './help.js';
import type { CommandIO } from './io.js';
import { openStoreForReading, readerStore, StoreFlagConflict, storeFlag } from './store-flag.js';

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  store: { type: 'string' },
  subject: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

interface Line {
  budget: string;
  per: string;
  who: string;
  used: number;
  limit?: number;
  window?: string;
  resetsAt: string;
}

export async function budgetsCommand(args: string[], io: CommandIO): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: true });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${BUDGETS_HELP}`);
    return 2;
  }
  const { values: flags, positionals } = parsed;
  if (flags.help) {
    io.out(BUDGETS_HELP);
    return 0;
  }
  if (positionals.length !== 1 || positionals[0] !== 'show') {
    io.err(`${positionals.length === 0 ? 'say what to do: gatehouse budgets show' : `unknown budgets command "${positionals.join(' ')}"`}\n\n${BUDGETS_HELP}`);
    return 2;
  }
  // A --store that names no SQLite file is usage (exit 2), as a bad value of any other command's flag is.
  let storeOverride: StoreConfig | undefined;
  try {
    if (flags.store !== undefined) storeOverride = storeFlag(flags.store);
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${BUDGETS_HELP}`);
    return 2;
  }
  let store;
  let budgets: Budget[] = [];
  try {
    // With --store and --config both, the counters are the file's and the limits the config's.
    const found = await readerStore(flags.config, storeOverride, io.env, 'gatehouse budgets');
    budgets = found.config?.policy.budgets ?? [];
    store = openStoreForReading(found.store);
  } catch (err) {
    if (err instanceof StoreFlagConflict) {
      io.err(`${err.message}\n\n${BUDGETS_HELP}`);
      return 2;
    }
    io.err((err instanceof ConfigError ? err.message : `error: ${(err as Error).message}`) + '\n');
    return 1;
  }
  try {
    const counters = await store.listBudgets(BUDGET_PREFIX);
    const lines = counters.map((c) => lineOf(c, budgets)).filter((l) => flags.subject === undefined || subjectOf(l) === flags.subject);
    if (flags.json) for (const l of lines) io.out(`${JSON.stringify(l)}\n`);
    else io.out(table(lines));
    return 0;
  } catch (err) {
    io.err(`error: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await store.close();
  }
}

/** `budget:<id>:<per>:<who>` (see budgetKey), with the budget's limit and window when the config has it. */
function lineOf(c: BudgetCounter, budgets: Budget[]): Line {
  const rest = c.key.slice(BUDGET_PREFIX.length);
  const [id, per] = rest.split(':', 2) as [string, string];
  const who = rest.slice(id.length + per.length + 2);
  const b = budgets.find((x) => x.id === id);
  return { budget: id, per, who, used: c.used, ...(b ? { limit: b.limit, window: b.window } : {}), resetsAt: new Date(c.resetsAt).toISOString() };
}

/** The subject a line counts for: a subject budget's `<via>:<subject>`, or a key budget's `key:<id>`. */
function subjectOf(l: Line): string | undefined {
  if (l.per === 'subject') return l.who.slice(l.who.indexOf(':') + 1);
  // A key's id that starts with "-" is written with one more (caller-names.ts); a single "-" is a keyless caller.
  if (l.per === 'key' && l.who.startsWith('--')) return `key:${l.who.slice(1)}`;
  if (l.per === 'key' && !l.who.startsWith('-')) return `key:${l.who}`;
  return undefined;
}

function table(lines: Line[]): string {
  if (lines.length === 0) return 'no budget has been spent from in the current windows\n';
  const rows = [['BUDGET', 'PER', 'WHO', 'USED', 'LIMIT', 'WINDOW', 'RESETS AT'], ...lines.map((l) => [l.budget, l.per, l.who, String(l.used), l.limit !== undefined ? String(l.limit) : '-', l.window ?? '-', l.resetsAt])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}
