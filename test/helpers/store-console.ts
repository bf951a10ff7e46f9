// What a Redis store says while it is used: its log lines (JSON, collected) and anything ioredis printed
// with console.warn outside the log, which must stay one JSON object per line (DESIGN.md: structured logs).

import { createLogger } from '../../src/log/logger.js';
import type { StoreConfig } from '../../src/config/types.js';
import { openStore } from '../../src/store/open-store.js';

export interface StoreSaid {
  /** The store's log lines, parsed. */
  lines: Array<{ level: string; msg: string }>;
  /** The arguments of every console.warn while the store was open. */
  printed: unknown[][];
}

/**
 * Opens the store `config` with an info-level log, uses it (a ping, one audit record appended) and closes
 * it, console.warn caught meanwhile and given back after.
 */
export async function storeUsedOnce(config: StoreConfig): Promise<StoreSaid> {
  const lines: StoreSaid['lines'] = [];
  const log = createLogger('info', (line) => void lines.push(JSON.parse(line) as { level: string; msg: string }));
  const printed: unknown[][] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => void printed.push(args);
  try {
    const s = openStore(config, log);
    try {
      await s.ping();
      await s.appendAudit({ time: new Date().toISOString(), callId: 'c1', runId: 'r1', subject: 'alice', method: 'tools/call', outcome: 'ok', latencyMs: 1 });
    } finally {
      await s.close();
    }
  } finally {
    console.warn = warn;
  }
  return { lines, printed };
}
