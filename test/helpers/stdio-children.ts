// Tracking the stdio children a test gateway spawns, so a test can check they end with their session or
// gateway and stop, by PID, any it left behind.

import type { TestGateway } from './gateway.js';

/** PIDs of every stdio child a gateway reported starting (its "stdio upstream started" log line). */
export function stdioChildPids(gw: TestGateway | undefined): number[] {
  return (gw?.logs ?? []).filter((l) => l.msg === 'stdio upstream started' && typeof l.pid === 'number').map((l) => l.pid as number);
}

/** Whether a process with this PID exists (one we may not signal, EPERM, counts as alive). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Polls `cond` every 50 ms until it holds or `timeoutMs` has passed; the result is its last value. */
export async function waitUntil(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}
