// Tracking the stdio children a test gateway spawns, so a test can check they end with their session or
// gateway and stop, by PID, any it left behind.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after } from 'node:test';
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

/** What else a test file's after-hook closes, and how it treats a child left running. */
export interface LeakCheckOptions {
  /** Closed once the gateways are, before their children are waited for (upstream servers the file started). */
  alsoClose?: ReadonlyArray<{ close(): Promise<unknown> }>;
  /**
   * Kill a child still running after `waitMs` without failing the file: for files about something else
   * (tasks, capabilities) that only clean up after themselves, where a slow child exit is not their subject.
   */
  lenient?: boolean;
}

/**
 * A list for the gateways a test file starts. After the file's tests they are closed, and every stdio child
 * they logged starting must then exit within `waitMs`: any still running is killed by PID and fails the file,
 * since a gateway that leaves a child behind on close is a leak users would see as stray processes
 * (unless `lenient`, where it is only killed).
 */
export function gatewaysCheckedForLeakedChildren(waitMs = 10_000, options: LeakCheckOptions = {}): TestGateway[] {
  const gateways: TestGateway[] = [];
  after(async () => {
    await Promise.all(gateways.map((gw) => gw.close()));
    await Promise.all((options.alsoClose ?? []).map((s) => s.close()));
    const pids = gateways.flatMap((gw) => stdioChildPids(gw));
    await waitUntil(() => pids.every((pid) => !isAlive(pid)), waitMs);
    const leaked = pids.filter(isAlive);
    for (const pid of leaked) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone in the meantime
      }
    }
    if (!options.lenient) assert.deepEqual(leaked, [], `stdio children left running after the gateway closed (killed now): ${leaked.join(', ')}`);
  });
  return gateways;
}

/**
 * The stdio children of a test gateway that are running now: real processes (from /proc where there is
 * one) whose parent is this test process and whose PID the gateway logged starting.
 */
export function liveStdioChildren(gw: TestGateway | undefined): number[] {
  const logged = new Set(stdioChildPids(gw));
  const ours = childrenOfThisProcess();
  return [...logged].filter((pid) => (ours ? ours.has(pid) : isAlive(pid)));
}

/** PIDs whose parent is this process, read from /proc; undefined where /proc is not there. */
function childrenOfThisProcess(): Set<number> | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  const out = new Set<number>();
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …; comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (ppid === process.pid && state !== 'Z') out.add(Number(entry));
    } catch {
      // gone in the meantime
    }
  }
  return out;
}
