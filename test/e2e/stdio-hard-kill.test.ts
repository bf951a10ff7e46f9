// A stdio child, and what it started, die with Gatehouse when Gatehouse is killed hard (SIGKILL: the OOM
// killer, `kill -9`, a runtime's hard stop). Gatehouse starts each child through util-linux's
// `setpriv --pdeathsig KILL`, so the kernel kills it when its parent dies, and lists each child's process
// group with a watchdog, which ends the groups still listed once Gatehouse is gone. Until 5 December a child
// that ignored the end of its stdin, or a process it started, ran on as an orphan, and a restarted Gatehouse
// started new ones beside them. Runs the built dist/main.js.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveCli, until, type ServingCli } from '../helpers/cli.js';
import { post, rpc } from '../helpers/http.js';

const CHILD = fileURLToPath(new URL('../fixtures/upstreams/eof-ignoring-stdio.mjs', import.meta.url));
const INITIALIZE = rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } });

/** Running: /proc has it, and it is not a zombie left for whoever adopted it to reap. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** Stops, by PID, a process this test started that still runs, if it is still that process (its command line names `marker`). */
function stopIfLeft(pid: number | undefined, marker: string): void {
  if (pid === undefined || !running(pid)) return;
  try {
    if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) process.kill(pid, 'SIGKILL');
  } catch {
    // gone meanwhile
  }
}

/** A number written to `file` by a process, once it is there. */
async function pidIn(file: string): Promise<number> {
  assert.ok(await until(() => existsSync(file) && /^\d+$/.test(readFileSync(file, 'utf8')), 5_000), `a PID was written to ${file}`);
  return Number(readFileSync(file, 'utf8'));
}

/** The watchdog's PID, from its start line in Gatehouse's log. */
function watchdogPid(gw: ServingCli): number | undefined {
  const line = /"msg":"stdio children watchdog started","pid":(\d+)/.exec(gw.stderr());
  return line === null ? undefined : Number(line[1]);
}

/** Gatehouse serving one perSession stdio upstream (the fixture), with the env given to it. */
async function serveFixture(dir: string, env: Record<string, string>): Promise<ServingCli> {
  const config = join(dir, 'gatehouse.yaml');
  writeFileSync(config, `listen: { port: 0 }\nauth: { anonymous: true }\nupstreams: [{ name: sticky, command: ["${process.execPath}", "${CHILD}"], env: ${JSON.stringify(env)}, era: legacy, processes: perSession }]\n`);
  return serveCli(['--config', config]);
}

async function killHard(gw: ServingCli): Promise<void> {
  process.kill(gw.child.pid!, 'SIGKILL');
  assert.equal(await Promise.race([gw.exited.then(() => 'exited'), new Promise((r) => setTimeout(() => r('still running'), 5_000))]), 'exited');
}

test('a child that ignores the end of its stdin is gone once Gatehouse is SIGKILLed', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hard-kill-'));
  let gw: ServingCli | undefined;
  let child: number | undefined;
  let watchdog: number | undefined;
  try {
    gw = await serveFixture(dir, { PID_FILE: join(dir, 'child.pid') });
    watchdog = watchdogPid(gw);
    const init = await post(gw.url, INITIALIZE);
    assert.equal(init.status, 200, init.text);
    child = await pidIn(join(dir, 'child.pid'));
    assert.ok(running(child), 'the child runs while Gatehouse does');
    assert.doesNotMatch(gw.stderr(), /without a parent-death signal|watchdog could not start/, 'no warning where setpriv and the watchdog work');
    // setpriv execs the command in its own place: the PID logged is the server's, under its configured command.
    const started = gw.stderr().split('\n').filter((l) => l.includes('"msg":"stdio upstream started"')).map((l) => JSON.parse(l) as { pid: number; command: string });
    assert.deepEqual(started.map((l) => [l.pid, l.command]), [[child, process.execPath]]);

    await killHard(gw);
    // The fixture outlives the end of its stdin; only a signal ends it.
    assert.ok(await until(() => !running(child!), 8_000), `the child (PID ${child}) is gone with Gatehouse`);
  } finally {
    if (gw !== undefined && gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill('SIGKILL');
    stopIfLeft(child, 'eof-ignoring-stdio.mjs');
    if (watchdog !== undefined) assert.ok(await until(() => !running(watchdog!), 8_000), 'the watchdog is gone too');
  }
});

test('what a child started (its own child, which ignores its parent\'s end) is gone too, and so is the watchdog', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hard-kill-'));
  let gw: ServingCli | undefined;
  let child: number | undefined;
  let helper: number | undefined;
  let watchdog: number | undefined;
  try {
    gw = await serveFixture(dir, { PID_FILE: join(dir, 'child.pid'), HELPER_PID_FILE: join(dir, 'helper.pid') });
    watchdog = watchdogPid(gw);
    assert.ok(watchdog !== undefined && running(watchdog), 'serve started the watchdog, a stdio upstream being configured');
    const init = await post(gw.url, INITIALIZE);
    assert.equal(init.status, 200, init.text);
    child = await pidIn(join(dir, 'child.pid'));
    helper = await pidIn(join(dir, 'helper.pid'));
    assert.ok(running(helper), 'the helper runs while Gatehouse does');

    await killHard(gw);
    assert.ok(await until(() => !running(child!) && !running(helper!), 8_000), `the child (${child}) and its helper (${helper}) are gone with Gatehouse`);
    assert.ok(await until(() => !running(watchdog!), 8_000), 'the watchdog exits once it has ended them');
  } finally {
    if (gw !== undefined && gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill('SIGKILL');
    stopIfLeft(child, 'eof-ignoring-stdio.mjs');
    stopIfLeft(helper, 'setTimeout');
    stopIfLeft(watchdog, 'groups=');
  }
});

test('a clean shutdown (SIGTERM) ends the children as before, and the watchdog with nothing left to do', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hard-kill-'));
  let gw: ServingCli | undefined;
  let child: number | undefined;
  let helper: number | undefined;
  let watchdog: number | undefined;
  try {
    gw = await serveFixture(dir, { PID_FILE: join(dir, 'child.pid'), HELPER_PID_FILE: join(dir, 'helper.pid') });
    watchdog = watchdogPid(gw);
    const init = await post(gw.url, INITIALIZE);
    assert.equal(init.status, 200, init.text);
    child = await pidIn(join(dir, 'child.pid'));
    helper = await pidIn(join(dir, 'helper.pid'));
    assert.equal(await gw.stop(), 0);
    assert.ok(!running(child) && !running(helper), 'Gatehouse ended the child and its group before it exited');
    assert.ok(watchdog !== undefined && (await until(() => !running(watchdog!), 8_000)), 'the watchdog exits when Gatehouse does');
    assert.doesNotMatch(gw.stderr(), /watchdog ended while Gatehouse runs/);
  } finally {
    if (gw !== undefined && gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill('SIGKILL');
    stopIfLeft(child, 'eof-ignoring-stdio.mjs');
    stopIfLeft(helper, 'setTimeout');
    stopIfLeft(watchdog, 'groups=');
  }
});

test('a command that is not there is still the spawn error it was, under its own name', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hard-kill-'));
  const config = join(dir, 'gatehouse.yaml');
  writeFileSync(config, `listen: { port: 0 }\nauth: { anonymous: true }\nupstreams: [{ name: missing, command: ["${join(dir, 'no-such-server')}"], era: legacy, processes: perSession }]\n`);
  const gw = await serveCli(['--config', config]);
  try {
    const init = await post(gw.url, INITIALIZE);
    assert.match(init.json().error.message, /could not be started: spawn \S+\/no-such-server ENOENT/);
    assert.doesNotMatch(gw.stderr(), /setpriv/);
  } finally {
    await gw.stop();
  }
});
