// Stdio children that die with Gatehouse. A child loses its stdin when Gatehouse is killed hard (SIGKILL:
// the OOM killer, `kill -9`, a runtime's hard stop), and one that ignores the EOF (or is busy) runs on as an
// orphan, holding memory, ports and credentials, while a restarted Gatehouse starts new ones beside it.
// Linux can send a process a signal when its parent dies (prctl PR_SET_PDEATHSIG), but Node cannot set it
// between fork and exec. util-linux's `setpriv --pdeathsig KILL -- COMMAND…` does: it sets the signal and
// execs the command in its own place, so the child keeps its PID, user, environment, working directory and
// process group, and no extra process is left. The kernel sends the signal when the thread that forked the
// child ends: children are spawned by the main thread's event loop (libuv forks from the calling thread),
// which ends only with the process. The signal is not inherited across fork: a child's own children are
// ended with its process group, by Gatehouse on every stop it lives to make (stdio-process.ts), and by the
// watchdog on a hard kill (group-watchdog.ts).
//
// Where setpriv cannot be used (not Linux, a util-linux without --pdeathsig or none), children start as
// they did, and `serve` warns once.

import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import type { Logger } from '../log/logger.js';

/** Where Debian and most distributions put util-linux's setpriv; Gatehouse's own PATH is not searched. */
const SETPRIV_PATHS = ['/usr/bin/setpriv', '/bin/setpriv'];
/** How long the start-up probe of setpriv may take before it is taken for unusable. */
const PROBE_TIMEOUT_MS = 5000;
/** What execvp searches when the child's environment has no PATH (glibc's default). */
const DEFAULT_PATH = '/bin:/usr/bin';

/** The setpriv proven at start-up to set the parent-death signal, once probed; undefined before or without. */
let setpriv: string | undefined;
/** Set once the probe has run and found no usable setpriv: a stdio child started then warns (once). */
let unavailable: string | undefined;
let warned = false;

/** What to spawn for a configured command: its own file and arguments, or setpriv's in front of them. */
export interface Launch {
  file: string;
  args: string[];
}

/**
 * Finds a setpriv that sets the parent-death signal: it must run a command with `--pdeathsig KILL` (older
 * util-linux has no such option, and a seccomp profile could forbid the prctl), which it is asked to prove
 * by running itself with `--dump`, whose report names the signal it was given. Resolves with why not, or
 * undefined when it can be used; from then on `launchOf` puts it in front of every stdio command.
 * `candidates` are where to look (tests name others).
 */
export async function enableDeathWithGatehouse(candidates: readonly string[] = SETPRIV_PATHS): Promise<string | undefined> {
  const found = await probeDeathSignal(candidates);
  setpriv = found.setpriv;
  unavailable = found.problem;
  return unavailable;
}

/** What a probe of setpriv found: the one usable, or why none is. */
export interface DeathSignalProbe {
  setpriv?: string;
  problem?: string;
}

/**
 * The probe `enableDeathWithGatehouse` runs (one setpriv process), without enabling anything: `gatehouse
 * doctor` tells from it whether `serve` would start stdio children to die with it.
 */
export async function probeDeathSignal(candidates: readonly string[] = SETPRIV_PATHS): Promise<DeathSignalProbe> {
  if (process.platform !== 'linux') return { problem: `the parent-death signal is Linux's (this is ${process.platform})` };
  if (!isMainThread) return { problem: 'children are started from a worker thread, whose end would kill them' };
  const found = candidates.find(isExecutableFile);
  if (found === undefined) return { problem: `no setpriv (util-linux) at ${candidates.join(' or ')}` };
  return new Promise((done) => {
    execFile(found, ['--pdeathsig', 'KILL', '--', found, '--dump'], { env: {}, timeout: PROBE_TIMEOUT_MS }, (err, stdout) => {
      if (err === null && /^Parent death signal: KILL$/m.test(stdout)) return done({ setpriv: found });
      done({ problem: `${found} --pdeathsig KILL does not work here${err === null ? '' : ` (${err.message.split('\n')[0]})`}` });
    });
  });
}

/** Warns that stdio children start without the parent-death signal, when the probe found so; once per process. */
export function warnIfNoDeathSignal(log: Logger): void {
  if (unavailable === undefined || warned) return;
  warned = true;
  log.warn('stdio upstream children start without a parent-death signal (setpriv): should Gatehouse be killed hard (SIGKILL, the OOM killer), only the stdio children watchdog ends them', { reason: unavailable });
}

/**
 * How to spawn `command` so that it dies with Gatehouse: through setpriv once the probe proved it, else as
 * it is. A command setpriv would fail to exec (not found, not executable) is spawned as it is, so its
 * failure is the spawn error it always was (`spawn … ENOENT`), not setpriv's exit code 127.
 */
export function launchOf(cmd: string, args: string[], env: Record<string, string>, cwd: string | undefined, log: Logger): Launch {
  if (setpriv === undefined) {
    warnIfNoDeathSignal(log);
    return { file: cmd, args };
  }
  if (!runnable(cmd, env.PATH, cwd)) return { file: cmd, args };
  return { file: setpriv, args: ['--pdeathsig', 'KILL', '--', cmd, ...args] };
}

/** Whether execvp would find `cmd` as a file it may execute: a path as it is, a bare name on PATH. */
function runnable(cmd: string, path: string | undefined, cwd: string | undefined): boolean {
  if (cmd.includes('/')) return isExecutableFile(resolve(cwd ?? '.', cmd));
  // An empty PATH entry is the working directory, to execvp.
  return (path ?? DEFAULT_PATH).split(delimiter).some((dir) => isExecutableFile(join(dir === '' ? resolve(cwd ?? '.') : resolve(cwd ?? '.', dir), cmd)));
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
