// GET /pins a page at a time: its query (limit, cursor), as GET /approvals takes them (approval-pages.ts).
// Pins are listed by ref (the store's set of pins, by id); a cursor names the last pin of a page. It once
// answered every pin in one body, each with its definitions and their diff, however many tools there are.
// The inbox page's changed tools are read the same way (shownPinPage): a page of those a reviewer is shown,
// walked through the store's pages in bounded reads, with a cursor for the next; it once read every pin in
// the store on each load, to show the few that changed.

import { pinIdOf } from '../approvals/pins.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from './approval-pages.js';

/** Changed tools on one inbox page: each comes with its diff, so fewer than an API page. */
export const INBOX_PINS = 25;
/** Pins read from the store per step of the inbox's walk. */
const STORE_PAGE = 250;
/** Pins one inbox load reads at most, shown or not: past it the page ends early with a cursor. */
const MAX_SCANNED = 5_000;

/** Pins a page at a time, by ref (PinDesk.page). */
export interface PinPages<P extends { ref: string }> {
  page(after: string | undefined, limit: number): Promise<{ pins: P[]; next: string | undefined }>;
}

/** Pins are stored as `pin:<ref>` (approvals/pins.ts): a cursor names one such id, and nothing else. */
const PIN_ID = /^pin:[^\u0000-\u001f]{1,1000}$/u;

export interface PinQuery {
  limit: number;
  /** The pin id to list on from (the decoded cursor); undefined for the first page. */
  after: string | undefined;
}

/** The query of GET /pins, or what is wrong with it (said to the client as 400). */
export function pinQuery(params: URLSearchParams): PinQuery | { problem: string } {
  const limitText = params.get('limit');
  const limit = limitText === null ? DEFAULT_LIMIT : /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) return { problem: `limit must be a whole number from 1 to ${MAX_LIMIT}` };
  const cursor = params.get('cursor');
  const after = cursor === null ? undefined : pinIdOfCursor(cursor);
  if (after === null) return { problem: 'cursor must be a nextCursor this API gave, as it gave it' };
  return { limit, after };
}

/** A pin id as a cursor: opaque to clients, as the approvals' are. */
export function pinCursorOf(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

/** The pin id a cursor names; null when it is none this API could have given. */
function pinIdOfCursor(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,1400}$/.test(cursor)) return null;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  return PIN_ID.test(id) && pinCursorOf(id) === cursor ? id : null;
}

/** The pin id the inbox's `pins` parameter names; undefined (the first page) when it is none this API gave, as a link cut short. */
export function inboxPinCursor(param: string | null): string | undefined {
  if (param === null) return undefined;
  return pinIdOfCursor(param) ?? undefined;
}

/**
 * Up to `limit` of the pins `shown` lets through (the inbox: changed, and reviewed by who asks), by ref, after
 * the pin id `after`. `nextCursor` says where the next page starts; a page may hold fewer than `limit` and
 * still have one (one load reads at most MAX_SCANNED pins, so a reviewer shown few of many tools is answered
 * in bounded time and follows the link for the rest).
 */
export async function shownPinPage<P extends { ref: string }, S extends P>(pages: PinPages<P>, after: string | undefined, shown: (p: P) => p is S, limit = INBOX_PINS): Promise<{ pins: S[]; nextCursor: string | undefined }> {
  const pins: S[] = [];
  let from = after;
  for (let scanned = 0; scanned < MAX_SCANNED; scanned += STORE_PAGE) {
    const page = await pages.page(from, STORE_PAGE);
    for (let i = 0; i < page.pins.length; i++) {
      const pin = page.pins[i]!;
      from = pinIdOf(pin.ref);
      if (!shown(pin)) continue;
      pins.push(pin);
      if (pins.length === limit) {
        const more = i < page.pins.length - 1 || page.next !== undefined;
        return { pins, nextCursor: more ? pinCursorOf(from) : undefined };
      }
    }
    if (page.next === undefined) return { pins, nextCursor: undefined };
    from = page.next;
  }
  // Read as much as one load may: the rest is for the next.
  return { pins, nextCursor: from === undefined ? undefined : pinCursorOf(from) };
}
