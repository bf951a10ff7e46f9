// GET /pins a page at a time: its query (limit, cursor), as GET /approvals takes them (approval-pages.ts).
// Pins are listed by ref (the store's set of pins, by id); a cursor names the last pin of a page. It once
// answered every pin in one body, each with its definitions and their diff, however many tools there are.

import { DEFAULT_LIMIT, MAX_LIMIT } from './approval-pages.js';

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
  const after = cursor === null ? undefined : pinIdOf(cursor);
  if (after === null) return { problem: 'cursor must be a nextCursor this API gave, as it gave it' };
  return { limit, after };
}

/** A pin id as a cursor: opaque to clients, as the approvals' are. */
export function pinCursorOf(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

/** The pin id a cursor names; null when it is none this API could have given. */
function pinIdOf(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,1400}$/.test(cursor)) return null;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  return PIN_ID.test(id) && pinCursorOf(id) === cursor ? id : null;
}
