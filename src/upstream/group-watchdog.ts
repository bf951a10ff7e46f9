// The process groups of stdio children, ended when Gatehouse is killed hard. The parent-death signal
// (die-with-gatehouse.ts) reaches a child, never what the child started: the server behind an `npx`, a
// `uvx` or a shell, a browser it drives. Those lose their parent and see their stdin end, and one that
// ignores that runs on. Each child leads a process group of its own (stdio-process.ts), and a group can be
// signalled by anyone still alive: a watchdog, a POSIX shell started once by `serve` in a session of its
// own, is told each group as its child starts (`+PGID`) and again once the group is gone (`-PGID`), and
// reads those lines from a pipe only Gatehouse writes to. The end of that pipe is Gatehouse's end, however
// it came: the watchdog then sends the groups still listed SIGTERM, and SIGKILL two seconds later, as
// Gatehouse itself does when a child is gone (GROUP_GRACE_MS), and exits. After a clean shutdown no group is
// listed and it exits at once. A group id stays taken while any member lives, so a signal reaches no
// stranger; a group is delisted only once it is empty.

import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Logger } from '../log/logger.js';

/**
 * What the watchdog runs (POSIX sh; exported for its test): the listed groups as ` 12 34 `, each id between
 * spaces, so one is found and cut out whole.
 */
export const WATCHDOG_SCRIPT = `
groups=' '
while read -r line; do
  case $line in
    +*) groups="$groups\${line#+} " ;;
    -*) g=\${line#-}; case $groups in *" $g "*) groups="\${groups%% $g *} \${groups#* $g }" ;; esac ;;
  esac
done
[ "$groups" = ' ' ] && exit 0
for g in $groups; do kill -s TERM -- "-$g" 2>/dev/null; done
sleep 2
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
exit 0
`;

/** The shell the watchdog runs in; `gatehouse doctor` checks it is there. */
export const WATCHDOG_SHELL = '/bin/sh';

/** Set by enableGroupWatchdog: only `serve` runs a watchdog (not doctor, not a gateway built in a test). */
let enabledBy: { log: Logger; shell: string } | undefined;
/** The watchdog running, its pipe, and whether it could not be started (then not tried again). */
let watchdog: Socket | undefined;
let unstartable = false;
/** The groups listed, so a watchdog started again (the last one was killed) is told them all. */
const guarded = new Set<number>();

/**
 * Lets the watchdog run in this process, started now when stdio upstreams are configured (`now`), else at
 * the first child: a Gatehouse with no stdio upstream has no extra process.
 */
export function enableGroupWatchdog(log: Logger, now: boolean, shell = WATCHDOG_SHELL): void {
  enabledBy = { log, shell };
  if (now) pipeToWatchdog();
}

/** A child's process group, to be ended if Gatehouse dies before the group is gone. */
export function guardGroup(pgid: number): void {
  if (enabledBy === undefined) return;
  guarded.add(pgid);
  pipeToWatchdog()?.write(`+${pgid}\n`);
}

/** A group that is gone (no member left): not to be signalled again. */
export function releaseGroup(pgid: number): void {
  if (!guarded.delete(pgid)) return;
  watchdog?.write(`-${pgid}\n`);
}

/** The running watchdog's pipe, started (and told the groups listed) when there is none. */
function pipeToWatchdog(): Socket | undefined {
  if (watchdog !== undefined || unstartable || enabledBy === undefined) return watchdog;
  const { log, shell } = enabledBy;
  // Detached: a session of its own, so a Ctrl-C at Gatehouse's terminal (or a signal to its group) does
  // not end it; its output goes nowhere, and nothing of Gatehouse's but the pipe is open in it.
  const child = spawn(shell, ['-c', WATCHDOG_SCRIPT], { stdio: ['pipe', 'ignore', 'ignore'], detached: true, env: { PATH: '/usr/bin:/bin' } });
  // A pipe to a child is a net.Socket, there at once (writes wait in it until the child reads). Neither it
  // nor the watchdog keeps Gatehouse running: the pipe's end at Gatehouse's exit is what the watchdog waits for.
  const stdin = child.stdin as Socket;
  stdin.on('error', () => {}); // EPIPE once the watchdog is gone, which 'exit' or 'error' reports
  stdin.unref();
  child.unref();
  watchdog = stdin;
  for (const pgid of guarded) stdin.write(`+${pgid}\n`);
  child.once('error', (err) => {
    if (watchdog === stdin) watchdog = undefined;
    unstartable = true;
    log.warn('stdio children watchdog could not start: what stdio children start may outlive Gatehouse when it is killed hard', { shell, reason: err.message });
  });
  child.once('spawn', () => log.info('stdio children watchdog started', { pid: child.pid }));
  child.once('exit', (code, signal) => {
    if (watchdog === stdin) watchdog = undefined;
    log.warn('stdio children watchdog ended while Gatehouse runs; the next stdio child starts another', { pid: child.pid, reason: signal ?? `exited with code ${code}` });
  });
  return stdin;
}
