// What the CLI tests of store.tls share: certificates and keys made with openssl in a temp dir, a config
// whose Redis store reads its TLS files from there, doctor's config rows of warning, and what serve logs
// at start.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { runCli } from './cli.js';

export interface TlsDir {
  dir: string;
  /** Runs openssl in `dir`; its stderr is kept for a failure's message. */
  openssl(args: string[]): void;
  remove(): void;
}

export function tlsDir(prefix: string): TlsDir {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    openssl: (args) => void execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Writes `<name>.yaml` in `dir`: an upstream, anonymous auth and a Redis store over TLS whose `tls` keys each
 * read the file of `dir` they name (in that order, on line 6, where the warnings locate them), then `extra`.
 */
export function redisTlsConfig(dir: string, name: string, tlsFiles: Record<string, string>, extra = ''): string {
  const file = join(dir, `${name}.yaml`);
  const tls = Object.entries(tlsFiles).map(([key, f]) => `${key}: "\${file:${join(dir, f)}}"`);
  writeFileSync(file, [
    'upstreams: [{ name: crm, url: "http://127.0.0.1:9/mcp" }]',
    'auth: { anonymous: true }',
    'store:',
    '  kind: redis',
    '  url: "rediss://127.0.0.1:6390"',
    `  tls: { ${tls.join(', ')} }`,
    extra,
  ].join('\n'));
  return file;
}

export interface DoctorCheck {
  check: string;
  verdict: string;
  detail: string;
  hint?: string;
}

/** `gatehouse doctor --json` on `file` (upstreams, store and ports skipped): its config rows of warning, after exit 0. */
export async function doctorConfigWarnings(file: string): Promise<{ warned: DoctorCheck[]; checks: DoctorCheck[]; printed: string }> {
  const r = await runCli(['doctor', '--config', file, '--json', '--skip', 'upstreams', '--skip', 'store', '--skip', 'ports'], { timeoutMs: 30_000 });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const checks = (JSON.parse(r.stdout) as { checks: DoctorCheck[] }).checks;
  return { warned: checks.filter((c) => c.check === 'config' && c.verdict === 'warn'), checks, printed: r.stdout + r.stderr };
}

/** The log lines of a gateway started from `file` as serve starts it, up to its listening; then it is closed. */
export async function logsAtStart(file: string): Promise<Array<Record<string, unknown>>> {
  // Loaded when a test starts a gateway, as the e2e files did: the CLI cases need none of it.
  const { startGatewayFromConfigFile } = await import('./gateway.js');
  const gw = await startGatewayFromConfigFile(file);
  try {
    return [...gw.logs];
  } finally {
    await gw.close();
  }
}
