// For tests of `gatehouse audit` (src/cli/audit.ts) on a store: a few audit records to fill it with, and a
// CommandIO that keeps what the command printed.

import type { CommandIO } from '../../src/cli/io.js';
import type { AuditEntry, Store } from '../../src/store/store.js';

/** Five audit records of calls to `lookup` by alice, now: c1/r1 … c5/r5. */
export async function fillAudit(store: Store): Promise<void> {
  for (let i = 1; i <= 5; i++) await store.appendAudit(entry(i));
}

function entry(i: number): AuditEntry {
  return { time: new Date().toISOString(), callId: `c${i}`, runId: `r${i}`, subject: 'alice', method: 'tools/call', tool: 'lookup', outcome: 'ok', latencyMs: 1 };
}

/** A CommandIO with no stdin and an empty environment; outText and errText hold what was written. */
export function captured(): CommandIO & { outText: string; errText: string } {
  const io = { outText: '', errText: '', out: (t: string) => void (io.outText += t), err: (t: string) => void (io.errText += t), readStdin: async () => '', env: {} };
  return io;
}
