// `gatehouse doctor [--config FILE]`: checks what a running deployment needs (the config, each upstream,
// the authorization server, the store, the ports) and prints one row per check with a verdict and a hint.
// Exit 0 when nothing failed (warnings allowed), 1 otherwise.

import { parseArgs } from 'node:util';
import type { Finding, Verdict } from '../doctor/finding.js';
import { AREAS, runChecks, type Area } from '../doctor/run-checks.js';
import { createLogger } from '../log/logger.js';
import type { CommandIO } from './io.js';

export const DOCTOR_HELP = `Usage: gatehouse doctor [options]

Checks what a deployment needs, from where it runs, and prints a verdict (ok, warn, fail) and a hint
for each check:
  config      the file loads and passes the checks check-config runs
  upstreams   each one answers; the era it speaks, and whether a pinned era contradicts it; its tools,
              and those clients will see under another name (and why); with stdio upstreams,
              whether their children die with Gatehouse when it is killed hard (setpriv's
              parent-death signal, the watchdog's /bin/sh)
  auth        with auth.oauth: the authorization server's metadata and key set, and which algorithms
              the published keys can verify
  store       SQLite: the file opens and is writable, or its directory is (nothing is created);
              Redis: PING, and one write of a scratch key with a TTL
  ports       the listen, metrics, admin and egress-proxy addresses can be bound (and are released)

Options:
  -c, --config FILE     config file (default $GATEHOUSE_CONFIG, then ./gatehouse.yaml)
      --json            one JSON object: {config, verdict, counts, skipped, checks: [...]}
      --skip AREA       leave out upstreams, auth, store or ports (repeatable)
      --timeout-ms N    longest each check may take (default 10000; at most 86400000, a day)
      --wait-ms N       keep trying upstreams that refuse connections this long, for servers still
                        starting (default 0)
  -h, --help            show this help

Exit status: 0 nothing failed (warnings allowed), 1 a check failed, 2 usage.
`;

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  json: { type: 'boolean' },
  skip: { type: 'string', multiple: true },
  'timeout-ms': { type: 'string' },
  'wait-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function doctorCommand(args: string[], io: CommandIO): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: false });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${DOCTOR_HELP}`);
    return 2;
  }
  const flags = parsed.values;
  if (flags.help) {
    io.out(DOCTOR_HELP);
    return 0;
  }
  const timeoutMs = count(flags['timeout-ms'], 10_000);
  const waitMs = count(flags['wait-ms'], 0);
  const skip = flags.skip ?? [];
  const unknown = skip.filter((s) => !(AREAS as readonly string[]).includes(s));
  if (timeoutMs === undefined || timeoutMs === 0 || waitMs === undefined || unknown.length > 0) {
    const what = unknown.length > 0 ? `--skip takes ${AREAS.join(', ')}, not ${unknown.join(', ')}` : `--timeout-ms and --wait-ms take a whole number of milliseconds, at most ${MAX_MS} (a day)`;
    io.err(`${what}\n\n${DOCTOR_HELP}`);
    return 2;
  }
  const file = flags.config ?? io.env.GATEHOUSE_CONFIG ?? 'gatehouse.yaml';
  // The findings say what went wrong; the modules' own log lines would only repeat it.
  const log = createLogger('error', () => {});
  const checks = await runChecks(file, { skip: new Set(skip as Area[]), timeoutMs, waitMs, env: io.env, log });
  const counts = { ok: 0, warn: 0, fail: 0 } satisfies Record<Verdict, number>;
  for (const c of checks) counts[c.verdict]++;
  const verdict: Verdict = counts.fail > 0 ? 'fail' : counts.warn > 0 ? 'warn' : 'ok';
  const skipped = AREAS.filter((a) => skip.includes(a));
  if (flags.json) io.out(`${JSON.stringify({ config: file, verdict, counts, skipped, checks })}\n`);
  else io.out(table(file, checks, counts, skipped));
  return counts.fail > 0 ? 1 : 0;
}

/**
 * The longest wait a flag may ask for. Timers hold at most 2^31-1 ms (about 24.8 days) and fire at once past
 * it, which failed every check of a healthy deployment; an upstream's check waits 2 × timeout + wait.
 */
const MAX_MS = 86_400_000;

/** A non-negative integer flag up to MAX_MS; undefined when it is not one. */
function count(value: string | undefined, fallback: number): number | undefined {
  if (value === undefined) return fallback;
  return /^\d+$/.test(value) && Number(value) <= MAX_MS ? Number(value) : undefined;
}

function table(file: string, checks: Finding[], counts: Record<Verdict, number>, skipped: readonly string[]): string {
  const width = Math.min(Math.max(5, ...checks.map((c) => c.check.length)), 48);
  const indent = ' '.repeat(7 + 2 + width + 2);
  const lines = [`gatehouse doctor: ${file}`, '', `${'VERDICT'.padEnd(7)}  ${'CHECK'.padEnd(width)}  DETAIL`];
  for (const c of checks) {
    lines.push(`${c.verdict.padEnd(7)}  ${c.check.padEnd(width)}  ${c.detail}`);
    if (c.hint !== undefined) lines.push(`${indent}hint: ${c.hint}`);
  }
  const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;
  const summary = [plural(counts.fail, 'failed', 'failed'), plural(counts.warn, 'warning', 'warnings'), `${counts.ok} ok`].join(', ');
  lines.push('', `${summary}${skipped.length > 0 ? `; skipped: ${skipped.join(', ')}` : ''}`);
  return `${lines.join('\n')}\n`;
}
