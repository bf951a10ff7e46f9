// `gatehouse doctor` tells whether stdio children would die with Gatehouse when it is killed hard: the row
// is there only with stdio upstreams; ok here, where util-linux's setpriv sets the parent-death signal and
// /bin/sh runs the watchdog (the probe serve runs, die-with-gatehouse.ts); a warning with a hint where
// setpriv lacks --pdeathsig, or is absent, or there is no shell. Before, doctor said nothing of it, and the
// orphans only showed after the first hard kill.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfigObject } from '../../src/config/load.js';
import { checkStdioDeath, STDIO_DEATH_CHECK } from '../../src/doctor/stdio-death-check.js';
import { runCli } from '../helpers/cli.js';

interface Check {
  check: string;
  verdict: string;
  detail: string;
  hint?: string;
  data?: Record<string, unknown>;
}

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-doctor-death-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const STDIO_SERVER = { name: 'modern', command: [process.execPath, 'test/fixtures/upstreams/modern-stdio-server.mjs'] };

async function doctor(name: string, config: Record<string, unknown>): Promise<{ code: number | null; checks: Check[] }> {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, JSON.stringify(config));
  const out = await runCli(['doctor', '--config', file, '--json', '--timeout-ms', '5000', '--skip', 'ports', '--skip', 'store'], { timeoutMs: 30_000 });
  return { code: out.code, checks: (JSON.parse(out.stdout) as { checks: Check[] }).checks };
}

describe('the real CLI', () => {
  test('with a stdio upstream: ok, naming setpriv, the upstream and the watchdog shell', async () => {
    const { code, checks } = await doctor('stdio', { listen: { port: 0 }, auth: { anonymous: true }, upstreams: [STDIO_SERVER] });
    assert.equal(code, 0, JSON.stringify(checks));
    const row = checks.find((c) => c.check === STDIO_DEATH_CHECK);
    assert.ok(row, `no "${STDIO_DEATH_CHECK}" row in ${checks.map((c) => c.check).join(' | ')}`);
    assert.equal(row.verdict, 'ok', row.detail);
    assert.match(row.detail, /^serve starts the stdio upstream \(modern\) through \/(usr\/)?bin\/setpriv --pdeathsig KILL, so the kernel kills each when Gatehouse is killed hard, and the watchdog \(\/bin\/sh\) ends what they started$/);
    assert.deepEqual(row.data?.['stdioUpstreams'], ['modern']);
    assert.equal(row.data?.['watchdogShell'], '/bin/sh');
  });

  test('without a stdio upstream there is no row', async () => {
    // Port 9 (discard) answers nothing here: the upstream's row fails, and the upstreams were checked.
    const { checks } = await doctor('http', { listen: { port: 0 }, auth: { anonymous: true }, upstreams: [{ name: 'web', url: 'http://127.0.0.1:9/mcp' }] });
    assert.ok(checks.some((c) => c.check === 'upstream web'), checks.map((c) => c.check).join(' | '));
    assert.ok(!checks.some((c) => c.check === STDIO_DEATH_CHECK), 'no stdio upstream, no row');
  });
});

describe('where serve could not make children die with it', () => {
  const config = validateConfigObject({ auth: { anonymous: true }, upstreams: [STDIO_SERVER, { name: 'files', command: ['npx', 'server-files'] }] }, 'test');

  test('a setpriv without --pdeathsig (an older util-linux): a warning with the reason and a hint', async () => {
    const old = join(dir, 'setpriv');
    writeFileSync(old, "#!/bin/sh\necho \"setpriv: unrecognized option '--pdeathsig'\" >&2\nexit 1\n");
    chmodSync(old, 0o755);
    const [row, ...rest] = await checkStdioDeath(config, { setpriv: [old] });
    assert.equal(rest.length, 0);
    assert.equal(row?.verdict, 'warn');
    assert.match(row.detail, /^serve would start the 2 stdio upstreams \(modern, files\) without a parent-death signal: .*setpriv --pdeathsig KILL does not work here/);
    assert.match(row.detail, /only the watchdog ends them$/);
    assert.match(row.hint ?? '', /install util-linux's setpriv, a version with --pdeathsig/);
    assert.equal(row.data?.['setpriv'], null);
  });

  test('no setpriv and no shell: both said, each with its remedy', async () => {
    const [row] = await checkStdioDeath(config, { setpriv: [join(dir, 'absent')], shell: join(dir, 'no-sh') });
    assert.equal(row?.verdict, 'warn');
    assert.match(row.detail, /no setpriv \(util-linux\) at .*absent; should Gatehouse be killed hard \(SIGKILL, the OOM killer\), nothing ends them; and there is no .*no-sh to run the watchdog/);
    assert.match(row.hint ?? '', /install util-linux's setpriv.*; and give the image a POSIX shell at .*no-sh/);
  });
});
