// `gatehouse approvals list|show|approve|reject`: a client of the admin API of a running gateway. The config
// names the admin listener and its token (admin.host, admin.port, admin.token); --url and --token, or
// GATEHOUSE_ADMIN_URL and GATEHOUSE_ADMIN_TOKEN, stand in for it.

import { parseArgs } from 'node:util';
import type { ApprovalState } from '../approvals/approval.js';
import { ConfigError } from '../config/load.js';
import { adminCaller, adminTarget, failed } from './admin-client.js';
import { APPROVALS_HELP } from './help.js';
import type { CommandIO } from './io.js';
import { printable, printableJson } from './printable.js';

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  url: { type: 'string' },
  token: { type: 'string' },
  state: { type: 'string' },
  reason: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** What `list --state` may ask for: the admin API's own (GET /approvals?state=). */
const STATES = ['pending', 'approved', 'rejected', 'expired', 'used', 'all'] as const satisfies ReadonlyArray<ApprovalState | 'all'>;

/**
 * A flag the command cannot use, said before any call: a mistyped state went to the API and came back a
 * refusal (or, the gateway down, "cannot be reached"), and a reason given to list or show was dropped.
 */
function flagProblem(command: string, flags: { state?: string; reason?: string }): string | undefined {
  if (flags.state !== undefined && command !== 'list') return '--state applies to list only';
  if (flags.state !== undefined && !(STATES as readonly string[]).includes(flags.state)) return `--state: "${flags.state}" is not a state; use ${STATES.slice(0, -1).join(', ')} or ${STATES.at(-1)}`;
  if (flags.reason !== undefined && command !== 'approve' && command !== 'reject') return '--reason applies to approve and reject only';
  return undefined;
}

interface ApprovalView {
  id: string;
  state: string;
  invalidated: boolean;
  rule: string;
  toolRef: string;
  caller: { subject: string; tenant?: string };
  preview: unknown;
  previewSha256: string;
  ageSeconds: number;
  createdAt: number;
  expiresAt: number;
  decision?: { by: string; at: number; reason?: string };
}

export async function approvalsCommand(args: string[], io: CommandIO): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: true });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${APPROVALS_HELP}`);
    return 2;
  }
  const { values: flags, positionals } = parsed;
  if (flags.help) {
    io.out(APPROVALS_HELP);
    return 0;
  }
  const [command, id, ...extra] = positionals;
  const needsId = command === 'show' || command === 'approve' || command === 'reject';
  if (command === undefined || !(command === 'list' || needsId) || (needsId && id === undefined) || (!needsId && id !== undefined) || extra.length > 0) {
    io.err(`${command === undefined ? 'say what to do: list, show ID, approve ID or reject ID' : `cannot run "approvals ${positionals.join(' ')}"`}\n\n${APPROVALS_HELP}`);
    return 2;
  }
  const misused = flagProblem(command, flags);
  if (misused !== undefined) {
    io.err(`${misused}\n\n${APPROVALS_HELP}`);
    return 2;
  }
  let target: { url: string; token: string };
  try {
    target = await adminTarget(flags, io, 'gatehouse approvals');
  } catch (err) {
    io.err((err instanceof ConfigError ? err.message : `error: ${(err as Error).message}`) + '\n');
    return 1;
  }
  const call = adminCaller(target);
  try {
    if (command === 'list') {
      const state = flags.state ?? 'pending';
      // The API answers a page at a time (of its default size): every page is followed, --json printing each as it comes.
      const list: ApprovalView[] = [];
      const seen = new Set<string>();
      let cursor: string | undefined;
      do {
        const r = await call('GET', `/approvals?state=${encodeURIComponent(state)}${cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        if (r.status !== 200) return failed(io, r);
        const page = r.json.approvals as ApprovalView[];
        if (flags.json) for (const a of page) io.out(`${printableJson(a)}\n`);
        else list.push(...page);
        const next = r.json.nextCursor;
        cursor = typeof next === 'string' ? next : undefined;
        // A cursor given twice would list for ever: the API never does, but a proxy replaying answers could.
        if (cursor !== undefined && seen.has(cursor)) throw new Error('the admin API gave the same page cursor twice; the list stopped there');
        if (cursor !== undefined) seen.add(cursor);
      } while (cursor !== undefined);
      if (!flags.json) io.out(table(list, state));
      return 0;
    }
    if (command === 'show') {
      const r = await call('GET', `/approvals/${encodeURIComponent(id!)}`);
      if (r.status !== 200) return failed(io, r);
      const a = r.json.approval as ApprovalView;
      io.out(flags.json ? `${printableJson(a)}\n` : detail(a));
      return 0;
    }
    const r = await call('POST', `/approvals/${encodeURIComponent(id!)}/${command}`, flags.reason !== undefined ? { reason: flags.reason } : {});
    if (r.status !== 200) return failed(io, r);
    const a = r.json.approval as ApprovalView;
    io.out(flags.json ? `${printableJson(a)}\n` : printable(`${a.id} ${a.state}${a.decision?.reason ? `: ${a.decision.reason}` : ''}`) + '\n');
    return 0;
  } catch (err) {
    io.err(`error: ${(err as Error).message}\n`);
    return 1;
  }
}

function table(list: ApprovalView[], state: string): string {
  if (list.length === 0) return state === 'all' ? 'no approvals\n' : `no ${state} approvals\n`;
  // Cells are made printable before they are measured: what is padded is what the terminal shows.
  const rows = [['ID', 'STATE', 'TOOL', 'CALLER', 'AGE', 'RULE'], ...list.map((a) => [a.id, a.invalidated && a.state === 'pending' ? 'invalidated' : a.state, a.toolRef, a.caller.subject, age(a.ageSeconds), a.rule].map(printable))];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

function detail(a: ApprovalView): string {
  const lines = [
    `id:         ${a.id}`,
    `state:      ${a.state}${a.invalidated ? ' (invalidated: the policy changed since)' : ''}`,
    `tool:       ${a.toolRef}`,
    `caller:     ${a.caller.subject}${a.caller.tenant ? ` (tenant ${a.caller.tenant})` : ''}`,
    `rule:       ${a.rule}`,
    `requested:  ${new Date(a.createdAt).toISOString()} (${age(a.ageSeconds)} ago)`,
    `deadline:   ${new Date(a.expiresAt).toISOString()}`,
    ...(a.decision ? [`decided:    ${a.decision.by} at ${new Date(a.decision.at).toISOString()}${a.decision.reason ? `: ${a.decision.reason}` : ''}`] : []),
    `arguments (redacted, sha256 ${a.previewSha256}):`,
  ];
  // Every field but the preview is one line, so line breaks in them are escaped with the rest; the preview's own are kept.
  return [...lines.map(printable), ...printableJson(a.preview, 2).split('\n').map((l) => `  ${l}`)].join('\n') + '\n';
}

function age(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  return `${Math.floor(seconds / 3600)}h${Math.floor((seconds % 3600) / 60)}m`;
}
