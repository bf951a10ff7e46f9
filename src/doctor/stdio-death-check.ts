// Whether the stdio children `serve` starts would die with Gatehouse when it is killed hard (SIGKILL, the
// OOM killer, a runtime's hard stop). Two things do it: setpriv's parent-death signal on each child
// (upstream/die-with-gatehouse.ts), found by the very probe `serve` runs, and the watchdog shell that ends
// what the children started (upstream/group-watchdog.ts). Without them nothing fails at start-up, and the
// orphans only show after the first hard kill, so the row warns; with no stdio upstream there is no row.

import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { isStdioUpstream, type GatehouseConfig } from '../config/types.js';
import { probeDeathSignal } from '../upstream/die-with-gatehouse.js';
import { WATCHDOG_SHELL } from '../upstream/group-watchdog.js';
import { finding, type Finding } from './finding.js';

export const STDIO_DEATH_CHECK = 'stdio children: die with Gatehouse';

/** Where to look for setpriv and the watchdog's shell: serve's own places unless a test names others. */
export interface StdioDeathPlaces {
  setpriv?: readonly string[];
  shell?: string;
}

export async function checkStdioDeath(config: GatehouseConfig, places: StdioDeathPlaces = {}): Promise<Finding[]> {
  const stdio = config.upstreams.filter(isStdioUpstream).map((u) => u.name);
  if (stdio.length === 0) return [];
  const shell = places.shell ?? WATCHDOG_SHELL;
  const [probe, shellRuns] = await Promise.all([
    probeDeathSignal(places.setpriv),
    access(shell, constants.X_OK).then(() => true, () => false),
  ]);
  const which = `${stdio.length === 1 ? 'the stdio upstream' : `the ${stdio.length} stdio upstreams`} (${stdio.join(', ')})`;
  const data = { stdioUpstreams: stdio, setpriv: probe.setpriv ?? null, watchdogShell: shellRuns ? shell : null };
  const details: string[] = [];
  const hints: string[] = [];
  if (probe.setpriv === undefined) {
    details.push(`serve would start ${which} without a parent-death signal: ${probe.problem}; should Gatehouse be killed hard (SIGKILL, the OOM killer), ${shellRuns ? 'only the watchdog ends them' : 'nothing ends them'}`);
    hints.push("install util-linux's setpriv, a version with --pdeathsig, at /usr/bin/setpriv (Debian and Ubuntu: util-linux; Alpine: setpriv), and let the container's seccomp profile allow prctl");
  }
  if (!shellRuns) {
    details.push(`there is no ${shell} to run the watchdog that ends what the stdio children start (the server behind an npx, a uvx or a shell) when Gatehouse is killed hard`);
    hints.push(`give the image a POSIX shell at ${shell} (a distroless image has none)`);
  }
  if (details.length > 0) return [finding(STDIO_DEATH_CHECK, 'warn', details.join('; and '), hints.join('; and '), data)];
  return [finding(STDIO_DEATH_CHECK, 'ok',
    `serve starts ${which} through ${probe.setpriv} --pdeathsig KILL, so the kernel kills each when Gatehouse is killed hard, and the watchdog (${shell}) ends what they started`,
    undefined, data)];
}
