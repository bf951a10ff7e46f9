// `gatehouse audit verify|export|tail`: reads the audit log from the store the config names (or the SQLite
// file given with --store; beside a --config whose store is Redis, refused: store-flag.ts readerStore). verify walks the whole chain and names the first record that breaks it; export
// writes records as JSON lines, filtered; tail prints new records as they are written.

import { parseArgs } from 'node:util';
import { ConfigError } from '../config/load.js';
import { parseDateTime } from '../config/expiry.js';
import type { StoreConfig } from '../config/types.js';
import { ChainVerifier, GENESIS } from '../store/audit-chain.js';
import type { AuditRecord, Store } from '../store/store.js';
import { AUDIT_HELP } from './help.js';
import type { CommandIO } from './io.js';
import { printableJson } from './printable.js';
import { openStoreForReading, readerStore, StoreFlagConflict, storeFlag } from './store-flag.js';

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  store: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  tool: { type: 'string' },
  subject: { type: 'string' },
  'interval-ms': { type: 'string' },
  head: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const PAGE = 1000;
/**
 * The most stored text a page holds (at least one record): a record holds a call's arguments, up to
 * listen.maxBodyBytes (1 MiB by default), and 1,000 such records held at once took verify to 4 GB of RSS.
 */
const PAGE_BYTES = 8 * 1024 * 1024;

export async function auditCommand(args: string[], io: CommandIO, signal?: AbortSignal): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: true });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${AUDIT_HELP}`);
    return 2;
  }
  const { values: flags, positionals } = parsed;
  const action = positionals[0];
  if (flags.help || action === undefined) {
    (flags.help ? io.out : io.err)(AUDIT_HELP);
    return flags.help ? 0 : 2;
  }
  if (!['verify', 'export', 'tail'].includes(action) || positionals.length > 1) {
    io.err(`unknown audit command "${positionals.join(' ')}"\n\n${AUDIT_HELP}`);
    return 2;
  }
  // Every flag is judged before the store is opened: a value it cannot use is usage (exit 2), whatever the store.
  let filter: Filter;
  let interval: number;
  let storeOverride: StoreConfig | undefined;
  try {
    filter = recordFilter(flags);
    interval = intervalOf(flags['interval-ms']);
    if (flags.head !== undefined && !HEAD_HASH.test(flags.head)) throw new Error(`--head "${flags.head}" is not a SHA-256 hash (64 hex digits, as verify prints it)`);
    if (flags.store !== undefined) storeOverride = storeFlag(flags.store);
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${AUDIT_HELP}`);
    return 2;
  }
  let store: Store;
  try {
    store = openStoreForReading((await readerStore(flags.config, storeOverride, io.env, 'gatehouse audit')).store);
  } catch (err) {
    if (err instanceof StoreFlagConflict) {
      io.err(`${err.message}\n\n${AUDIT_HELP}`);
      return 2;
    }
    io.err((err instanceof ConfigError ? err.message : `error: ${(err as Error).message}`) + '\n');
    return 1;
  }
  try {
    if (action === 'verify') return await verifyAudit(store, io, flags.head);
    if (action === 'export') return await exportRecords(store, io, filter);
    return await tailAudit(store, io, filter, interval, signal);
  } catch (err) {
    io.err(`error: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await store.close();
  }
}

/** tail's --interval-ms (default 500); throws when it is not a whole number from 50 to 60000. */
function intervalOf(value: string | undefined): number {
  const interval = Number(value ?? 500);
  if (!Number.isInteger(interval) || interval < 50 || interval > 60_000) throw new Error(`--interval-ms "${value}" must be a whole number of milliseconds from 50 to 60000`);
  return interval;
}

/**
 * Every record from the anchor on, page by page, each page after the seq of the last record read. That seq
 * is the record's text, which whoever can write the store can edit: a record claiming an earlier seq sent
 * the next read back over records already given (export printed them again; at seq 0, for ever). Seqs must
 * rise; a record that does not is given (verify judges it first, and names it as it breaks the chain),
 * and reading on after it throws.
 */
async function* allRecords(store: Store, afterSeq = 0, filter?: { since?: number; until?: number }): AsyncGenerator<AuditRecord> {
  let last = afterSeq;
  for (;;) {
    const page = await store.readAudit({ afterSeq: last, limit: PAGE, maxBytes: PAGE_BYTES, ...filter });
    for (const r of page) {
      yield r;
      if (r.seq <= last) throw new Error(`the audit record after record ${last} claims seq ${r.seq}, not a later one: the log's records are out of order, and reading stops here (gatehouse audit verify names the first record that breaks the chain)`);
      last = r.seq;
    }
    // A page cut short by PAGE_BYTES is not the end; only an empty one is.
    if (page.length === 0) return;
  }
}

/** A head hash as verify prints it (any case: see verifyAudit). */
const HEAD_HASH = /^[0-9a-f]{64}$/i;

/**
 * `head`: a head hash printed by an earlier verify and kept elsewhere. A chain rewritten from some record
 * on, or cut short at its end, still links up; only a record known from outside shows it.
 */
export async function verifyAudit(store: Store, io: CommandIO, given: string | undefined): Promise<number> {
  if (given !== undefined && !HEAD_HASH.test(given)) {
    io.err(`--head "${given}" is not a SHA-256 hash (64 hex digits, as verify prints it)\n`);
    return 2;
  }
  // Records carry lower-case hex; a head kept by a tool that prints upper case names the same hash.
  const head = given?.toLowerCase();
  let anchor = await store.auditAnchor();
  let verifier = new ChainVerifier(anchor);
  // 64 zeros is the head an empty log printed: every chain that has not been pruned starts from it.
  let headSeen = head === undefined || anchor?.hash === head || (anchor === undefined && head === GENESIS);
  /** Retention moved the anchor while this verify read: records up to it are no longer judged. */
  let reanchored = false;
  // Unfiltered: a record with an edited time must still be read to be found.
  for await (const r of allRecords(store)) {
    if (reanchored && r.seq <= (anchor?.seq ?? 0)) continue;
    if (verifier.add(r)) {
      if (r.hash === head) headSeen = true;
      continue;
    }
    // Records missing before this one: retention (every replica prunes on a timer) may have removed them
    // between two of verify's reads, moving the anchor past them. Then the chain is judged from the new
    // anchor on, as a verify started after the prune would; a gap the anchor does not explain is a break.
    if (r.seq <= verifier.nextSeq) break;
    const now = await store.auditAnchor();
    if (now === undefined || now.seq < r.seq - 1 || now.seq <= (anchor?.seq ?? 0)) break;
    anchor = now;
    reanchored = true;
    verifier = new ChainVerifier(anchor);
    if (anchor.hash === head) headSeen = true;
    if (r.seq <= anchor.seq) continue;
    if (!verifier.add(r)) break;
    if (r.hash === head) headSeen = true;
  }
  const verdict = verifier.verdict();
  const from = anchor ? ` (from the anchor after record ${anchor.seq})` : '';
  if (verdict.ok && !headSeen) {
    // Retention removes records from the start, keeping only the last one's hash: a head among them cannot be
    // told from a forged one, so this still fails, but it should not read as tampering alone.
    const pruned = anchor ? `; or retention (audit.retainDays) removed its record: records up to ${anchor.seq} were removed, so check against a head taken since` : '';
    io.err(`audit chain does not hold the head ${head}: ${verdict.records} records link up${from}, but records were rewritten or removed since that head was taken${pruned}\n`);
    return 1;
  }
  if (verdict.ok) {
    // The head hash, to be kept elsewhere: records removed from the end are found only against it.
    io.out(`audit chain ok: ${verdict.records} records${from}, last ${verdict.lastSeq}, head ${verdict.lastHash}\n`);
    return 0;
  }
  io.err(`audit chain broken at record ${verdict.seq}: ${verdict.reason}; ${verdict.records} records before it verify${from}\n`);
  return 1;
}

export interface Filter {
  since?: number;
  until?: number;
  tool?: string;
  subject?: string;
}

function recordFilter(flags: { since?: string; until?: string; tool?: string; subject?: string }): Filter {
  // Read as the config reads dates (expiry.ts): Date.parse would roll 2026-02-30 over to 2 March and read a
  // time without an offset in this machine's zone.
  const time = (name: string, v: string | undefined, end: boolean): number | undefined => {
    if (v === undefined) return undefined;
    const t = parseDateTime(v);
    if (t === undefined) throw new Error(`--${name} "${v}" is not a date or time (write YYYY-MM-DD, or an RFC 3339 time such as 2026-11-01T09:30:00Z; without an offset it is UTC)`);
    // "At or before 2026-11-30" takes in the whole of that day.
    return end && t.dateOnly ? t.ms + 86_400_000 - 1 : t.ms;
  };
  const since = time('since', flags.since, false);
  const until = time('until', flags.until, true);
  return { ...(since !== undefined ? { since } : {}), ...(until !== undefined ? { until } : {}), ...(flags.tool !== undefined ? { tool: flags.tool } : {}), ...(flags.subject !== undefined ? { subject: flags.subject } : {}) };
}

function matches(r: AuditRecord, f: Filter): boolean {
  // The store filters export by time through its index; tail reads every new record, so its window is applied here.
  // (A record's time is the gateway's own ISO 8601 text, which Date.parse reads exactly.)
  if (f.since !== undefined || f.until !== undefined) {
    const t = Date.parse(r.time);
    if ((f.since !== undefined && !(t >= f.since)) || (f.until !== undefined && !(t <= f.until))) return false;
  }
  return (f.tool === undefined || r.tool === f.tool || r.toolRef === f.tool) && (f.subject === undefined || r.subject === f.subject);
}

/**
 * A record as a JSON line for a terminal: its arguments, tool name and subject are a caller's text, and
 * JSON.stringify leaves DEL, C1 controls, line separators and bidirectional overrides raw, which a terminal
 * acts on (a name ending in U+202E shows the rest of the line reversed). Escaped, the line is the same JSON.
 */
function recordLine(r: AuditRecord): string {
  return printableJson(r);
}

async function exportRecords(store: Store, io: CommandIO, f: Filter): Promise<number> {
  const range = { ...(f.since !== undefined ? { since: f.since } : {}), ...(f.until !== undefined ? { until: f.until } : {}) };
  for await (const r of allRecords(store, 0, range)) {
    if (!matches(r, f)) continue;
    io.out(`${recordLine(r)}\n`);
    await io.outReady?.();
  }
  return 0;
}

/** Prints the records written from now on, until interrupted (SIGINT, or `signal` in tests). */
export async function tailAudit(store: Store, io: CommandIO, f: Filter, intervalMs: number, signal?: AbortSignal): Promise<number> {
  // Where the log ends, in one read: reading every record to find it took minutes on a long log, and a
  // record appended meanwhile was read as an old one and never printed.
  let last = await store.auditLastSeq();
  const stop = signal ?? interruption();
  io.err(`following the audit log after record ${last}; Ctrl-C stops\n`);
  while (!stop.aborted) {
    for await (const r of allRecords(store, last)) {
      last = r.seq;
      if (!matches(r, f)) continue;
      io.out(`${recordLine(r)}\n`);
      await io.outReady?.();
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  return 0;
}

function interruption(): AbortSignal {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  return controller.signal;
}
