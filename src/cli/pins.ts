// `gatehouse pins list|show REF|accept REF --digest SHA`: the pinned tool definitions of a running gateway
// (tools.pinning), through its admin API. `show` prints what changed, path by path, and the digest of the
// definition it showed; `accept` makes exactly that definition the pin (the API refuses it if the tool has
// changed again since), so calls to the tool run again under `enforce`. An accept names the digest the
// reviewer was shown: one that listed the pins again and took what changed by then accepted, unseen, a
// rewrite made between the show and the accept. The API lists the pins a page at a time: every command
// follows the pages (show and accept until they find REF).

import { parseArgs } from 'node:util';
import { ConfigError } from '../config/load.js';
import { adminCaller, adminTarget, failed, type AdminCall } from './admin-client.js';
import { PINS_HELP } from './help.js';
import type { CommandIO } from './io.js';
import { printable, printableJson } from './printable.js';

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  url: { type: 'string' },
  token: { type: 'string' },
  all: { type: 'boolean' },
  digest: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** A definition's digest as `show` prints it (the API's changed.sha256). */
const SHA256_HEX = /^[0-9a-f]{64}$/;

interface PinView {
  ref: string;
  state: 'pinned' | 'changed';
  pinned: { sha256: string; at: number; acceptedBy?: string };
  changed?: { sha256: string; at: number };
  changes: Array<{ path: string; before?: unknown; after?: unknown }>;
}

export async function pinsCommand(args: string[], io: CommandIO): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: true });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${PINS_HELP}`);
    return 2;
  }
  const { values: flags, positionals } = parsed;
  if (flags.help) {
    io.out(PINS_HELP);
    return 0;
  }
  const [command, ref, ...extra] = positionals;
  const needsRef = command === 'show' || command === 'accept';
  if (command === undefined || !(command === 'list' || needsRef) || (needsRef && ref === undefined) || (!needsRef && ref !== undefined) || extra.length > 0) {
    io.err(`${command === undefined ? 'say what to do: list, show REF or accept REF' : `cannot run "pins ${positionals.join(' ')}"`}\n\n${PINS_HELP}`);
    return 2;
  }
  // Dropped in silence before: `accept REF --all` accepted the one ref to an operator who meant them all.
  if (flags.all && command !== 'list') {
    io.err(`--all applies to list only (accept takes one REF at a time, after looking at it with show)\n\n${PINS_HELP}`);
    return 2;
  }
  if (flags.digest !== undefined && command !== 'accept') {
    io.err(`--digest applies to accept only\n\n${PINS_HELP}`);
    return 2;
  }
  const digest = flags.digest?.toLowerCase();
  if (command === 'accept' && (digest === undefined || !SHA256_HEX.test(digest))) {
    io.err(`${digest === undefined ? 'accept needs --digest' : '--digest must be 64 hex digits'}: the "now:" digest that "gatehouse pins show ${printable(ref!)}" printed, so that only the definition you reviewed is accepted, never one the upstream served since\n\n${PINS_HELP}`);
    return 2;
  }
  let call;
  try {
    call = adminCaller(await adminTarget(flags, io, 'gatehouse pins'));
  } catch (err) {
    io.err((err instanceof ConfigError ? err.message : `error: ${(err as Error).message}`) + '\n');
    return 1;
  }
  try {
    if (command === 'accept') {
      const shown = await findPin(call, ref!);
      if ('status' in shown) return failed(io, shown);
      const pin = shown.pin;
      if (pin === undefined) {
        io.err(notPinned(ref!));
        return 3;
      }
      // Accept exactly the definition the reviewer was shown (by show): with no change there is nothing to
      // accept, and a change since is for them to review first. The API checks the digest again, under the pin's lock.
      if (pin.changed === undefined) {
        io.err(`error: "${printable(ref!)}" has not changed since it was pinned; there is nothing to accept\n`);
        return 1;
      }
      if (pin.changed.sha256 !== digest) {
        io.err(`error: "${printable(ref!)}" changed again since that digest was shown (now ${pin.changed.sha256}); nothing was accepted: review it with "gatehouse pins show ${printable(ref!)}"\n`);
        return 1;
      }
      const r = await call('POST', `/pins/${encodeURIComponent(ref!)}/accept`, { digest });
      if (r.status !== 200) return failed(io, r);
      io.out(flags.json ? `${printableJson(r.json.pin)}\n` : `${printable(ref!)} accepted: its current definition is now the pin\n`);
      return 0;
    }
    if (command === 'list') {
      const pins: PinView[] = [];
      const done = await eachPage(call, (page) => void pins.push(...page));
      if (done !== undefined) return failed(io, done);
      const shown = pins.filter((p) => flags.all || p.state === 'changed').sort((a, b) => (a.ref < b.ref ? -1 : 1));
      if (flags.json) for (const p of shown) io.out(`${printableJson(p)}\n`);
      else if (shown.length === 0) io.out(flags.all ? 'no tool is pinned yet\n' : 'no pinned tool has changed\n');
      else io.out(shown.map((p) => printable(`${printable(p.ref).padEnd(40)}  ${p.state.padEnd(7)}  ${p.pinned.sha256.slice(0, 16)}${p.changed ? ` → ${p.changed.sha256.slice(0, 16)}` : ''}`)).join('\n') + '\n');
      return 0;
    }
    const found = await findPin(call, ref!);
    if ('status' in found) return failed(io, found);
    const pin = found.pin;
    if (pin === undefined) {
      io.err(notPinned(ref!));
      return 3;
    }
    if (flags.json) {
      io.out(`${printableJson(pin)}\n`);
      return 0;
    }
    // Refs, reviewers and the diff's paths are the upstream's and the reviewers' words: each line is made printable.
    const lines = [`${pin.ref}: ${pin.state}`, `pinned:  ${pin.pinned.sha256} (${new Date(pin.pinned.at).toISOString()}${pin.pinned.acceptedBy ? `, accepted by ${pin.pinned.acceptedBy}` : ''})`];
    if (pin.changed) {
      lines.push(`now:     ${pin.changed.sha256} (first seen ${new Date(pin.changed.at).toISOString()})`, 'changes:');
      for (const c of pin.changes) {
        lines.push(`  ${c.path}`);
        if (c.before !== undefined) lines.push(`    - ${printableJson(c.before)}`);
        if (c.after !== undefined) lines.push(`    + ${printableJson(c.after)}`);
      }
      // The accept that takes this definition and no later one.
      lines.push(`accept:  gatehouse pins accept ${pin.ref} --digest ${pin.changed.sha256}`);
    }
    io.out(`${lines.map(printable).join('\n')}\n`);
    return 0;
  } catch (err) {
    io.err(`error: ${(err as Error).message}\n`);
    return 1;
  }
}

/**
 * A ref GET /pins does not list: none is pinned, or tools.pinningReviewers keeps it from this reviewer (the
 * API lists only the pins one reviews, as it lists only the approvals one decides); either way nothing is shown.
 */
function notPinned(ref: string): string {
  return `error: no tool "${printable(ref)}" is pinned that you review (tools.pinningReviewers)\n`;
}

type Failed = Parameters<typeof failed>[1];

/**
 * Follows GET /pins page by page (nextCursor), handing each page to `visit` until it returns true (found) or
 * the pages end; an answer other than 200 is returned to be reported. A cursor given twice stops it: the API
 * never does, but a proxy replaying answers would list for ever.
 */
async function eachPage(call: AdminCall, visit: (pins: PinView[]) => boolean | void): Promise<Failed | undefined> {
  const seen = new Set<string>();
  let cursor: string | undefined;
  do {
    const r = await call('GET', `/pins${cursor !== undefined ? `?cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (r.status !== 200) return r;
    if (visit(r.json.pins as PinView[]) === true) return undefined;
    const next = r.json.nextCursor;
    cursor = typeof next === 'string' ? next : undefined;
    if (cursor !== undefined && seen.has(cursor)) throw new Error('the admin API gave the same page cursor twice; the list stopped there');
    if (cursor !== undefined) seen.add(cursor);
  } while (cursor !== undefined);
  return undefined;
}

/** The pin of `ref` as GET /pins shows it, read page by page until found; undefined when none is pinned. */
async function findPin(call: AdminCall, ref: string): Promise<{ pin: PinView | undefined } | Failed> {
  let pin: PinView | undefined;
  const done = await eachPage(call, (page) => (pin = page.find((p) => p.ref === ref)) !== undefined);
  return done ?? { pin };
}
