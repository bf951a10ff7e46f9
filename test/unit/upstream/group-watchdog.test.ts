// The watchdog's script (group-watchdog.ts): when its pipe ends (Gatehouse gone), the process groups still
// listed are ended, and one delisted (gone, so its id may be anyone's again) is not signalled.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { WATCHDOG_SCRIPT } from '../../../src/upstream/group-watchdog.js';

/** Running: /proc has it, and it is not a zombie. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** A process leading a group of its own, with a member of its own (what a stdio child and its helper are). */
function groupLeader(): ChildProcess {
  return spawn(process.execPath, ['-e', "require('child_process').spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' }); setTimeout(() => {}, 60_000)"], { detached: true, stdio: 'ignore' });
}

test('at the end of its input the watchdog ends the groups listed, and not one delisted', { timeout: 30_000 }, async () => {
  const kept = groupLeader();
  const ended = groupLeader();
  const keptExit = new Promise((r) => kept.once('exit', r));
  const endedBy = new Promise((r) => ended.once('exit', (_code, signal) => r(signal)));
  const watchdog = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  const exited = new Promise<number | null>((r) => watchdog.once('exit', (code) => r(code)));
  try {
    watchdog.stdin!.end(`+${kept.pid}\n+${ended.pid}\n-${kept.pid}\n`);
    assert.equal(await exited, 0);
    assert.equal(await endedBy, 'SIGTERM', 'the listed group got SIGTERM');
    assert.ok(running(kept.pid!), 'the delisted group was left alone');
    process.kill(-kept.pid!, 'SIGKILL');
    await keptExit;
  } finally {
    for (const pgid of [kept.pid!, ended.pid!]) {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // the group is gone
      }
    }
    if (watchdog.exitCode === null) watchdog.kill('SIGKILL');
  }
});

test('with nothing listed the watchdog exits at once, signalling no one', { timeout: 10_000 }, async () => {
  const watchdog = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  const exited = new Promise<number | null>((r) => watchdog.once('exit', (code) => r(code)));
  watchdog.stdin!.end('');
  assert.equal(await exited, 0);
});
