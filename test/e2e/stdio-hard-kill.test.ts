// A stdio child dies with Gatehouse when Gatehouse is killed hard (SIGKILL: the OOM killer, `kill -9`, a
// runtime's hard stop). Gatehouse starts it through util-linux's `setpriv --pdeathsig KILL`, so the kernel
// kills it when its parent dies. Until 5 December a child that ignored the end of its stdin ran on as an
// orphan, and a restarted Gatehouse started new ones beside it. Runs the built dist/main.js.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveCli, until, type ServingCli } from '../helpers/cli.js';
import { post, rpc } from '../helpers/http.js';

const CHILD = fileURLToPath(new URL('../fixtures/upstreams/eof-ignoring-stdio.mjs', import.meta.url));

/** Running: /proc has it, and it is not a zombie left for whoever adopted it to reap. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** Still the fixture (its PID not yet taken by another process), so a kill by PID stops no stranger. */
function isTheFixture(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('eof-ignoring-stdio.mjs');
  } catch {
    return false;
  }
}

test('a child that ignores the end of its stdin is gone once Gatehouse is SIGKILLed', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hard-kill-'));
  const pidFile = join(dir, 'child.pid');
  const config = join(dir, 'gatehouse.yaml');
  writeFileSync(config, `listen: { port: 0 }\nauth: { anonymous: true }\nupstreams: [{ name: sticky, command: ["${process.execPath}", "${CHILD}"], env: { PID_FILE: "${pidFile}" }, era: legacy, processes: perSession }]\n`);
  let gw: ServingCli | undefined;
  let child: number | undefined;
  try {
    gw = await serveCli(['--config', config]);
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.equal(init.status, 200, init.text);
    assert.ok(await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '', 5_000), 'the child wrote its PID');
    child = Number(readFileSync(pidFile, 'utf8'));
    assert.ok(running(child), 'the child runs while Gatehouse does');
    assert.doesNotMatch(gw.stderr(), /may outlive Gatehouse/, 'no warning where setpriv works');
    // setpriv execs the command in its own place: the PID logged is the server's, under its configured command.
    const started = gw.stderr().split('\n').filter((l) => l.includes('"msg":"stdio upstream started"')).map((l) => JSON.parse(l) as { pid: number; command: string });
    assert.deepEqual(started.map((l) => [l.pid, l.command]), [[child, process.execPath]]);

    process.kill(gw.child.pid!, 'SIGKILL');
    assert.equal(await Promise.race([gw.exited.then(() => 'exited'), new Promise((r) => setTimeout(() => r('still running'), 5_000))]), 'exited');
    // The fixture outlives the end of its stdin; only the parent-death signal ends it.
    assert.ok(await until(() => !running(child!), 5_000), `the child (PID ${child}) is gone with Gatehouse`);
  } finally {
    if (gw !== undefined && gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill('SIGKILL');
    if (child !== undefined && running(child) && isTheFixture(child)) process.kill(child, 'SIGKILL');
  }
});

test('a command that is not there is still the spawn error it was, under its own name', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-hard-kill-'));
  const config = join(dir, 'gatehouse.yaml');
  writeFileSync(config, `listen: { port: 0 }\nauth: { anonymous: true }\nupstreams: [{ name: missing, command: ["${join(dir, 'no-such-server')}"], era: legacy, processes: perSession }]\n`);
  const gw = await serveCli(['--config', config]);
  try {
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.match(init.json().error.message, /could not be started: spawn \S+\/no-such-server ENOENT/);
    assert.doesNotMatch(gw.stderr(), /setpriv/);
  } finally {
    await gw.stop();
  }
});
