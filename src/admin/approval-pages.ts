// GET /approvals a page at a time: the query (state, limit, cursor), and the walk through the store's
// listing of approvals in the order they were opened (approval-index.ts) that fills one page. Not who may
// see what (reviewer-rights.ts) nor the HTTP answer (server.ts).
//
// A page holds at most `limit` approvals; `nextCursor` says where the next one starts, and its absence that
// the listing has ended. A page may hold fewer than `limit` and still have a next: one request reads at most
// MAX_SCANNED approvals, so a reviewer shown few of many (another team's rule, state=pending among a week
// of decided ones) is answered in bounded time, and follows the cursor for the rest.

import { approvalView, type ApprovalState, type ApprovalView } from '../approvals/approval.js';
import type { ApprovalBook } from '../approvals/book.js';
import type { Approval } from '../approvals/approval.js';
import { isApprovalPlace } from '../store/approval-index.js';

/** Approvals on a page when the query names no limit. */
export const DEFAULT_LIMIT = 100;
/** The most approvals one page holds, whatever the query asks. */
export const MAX_LIMIT = 500;
/** Approvals read from the store per step of the walk. */
const STORE_PAGE = 250;
/** Approvals one request reads at most, shown or not: past it the page ends early with a cursor. */
const MAX_SCANNED = 5_000;

const STATES = new Set<string>(['pending', 'approved', 'rejected', 'expired', 'used', 'all']);

export interface ListQuery {
  state: ApprovalState | 'all';
  limit: number;
  /** The place to list on from (the decoded cursor); undefined for the first page. */
  after: string | undefined;
}

export interface ListPage {
  approvals: ApprovalView[];
  nextCursor: string | undefined;
}

/** The query of GET /approvals, or what is wrong with it (said to the client as 400). */
export function listQuery(params: URLSearchParams, defaultState: ApprovalState | 'all'): ListQuery | { problem: string } {
  const state = params.get('state') ?? defaultState;
  if (!STATES.has(state)) return { problem: `state must be one of ${[...STATES].join(', ')}` };
  const limitText = params.get('limit');
  const limit = limitText === null ? DEFAULT_LIMIT : /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) return { problem: `limit must be a whole number from 1 to ${MAX_LIMIT}` };
  const cursor = params.get('cursor');
  const after = cursor === null ? undefined : placeOf(cursor);
  if (after === null) return { problem: 'cursor must be a nextCursor this API gave, as it gave it' };
  return { state: state as ApprovalState | 'all', limit, after };
}

/** A place as a cursor: opaque to clients, so its form may change without breaking them. */
export function cursorOf(place: string): string {
  return Buffer.from(place, 'utf8').toString('base64url');
}

/** The place a cursor names; null when it is none this API could have given. */
function placeOf(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) return null;
  const place = Buffer.from(cursor, 'base64url').toString('utf8');
  return isApprovalPlace(place) && cursorOf(place) === cursor ? place : null;
}

/**
 * One page of the approvals `shown` lets through whose state (as of `now`) the query asks for, in the order
 * they were opened. `keep` may narrow it further (the inbox: not those a policy change left undecidable).
 */
export async function approvalPage(book: ApprovalBook, query: ListQuery, shown: (a: Approval) => boolean, now: number, policyVersion: string, keep: (v: ApprovalView) => boolean = () => true): Promise<ListPage> {
  const approvals: ApprovalView[] = [];
  let after = query.after;
  for (let scanned = 0; scanned < MAX_SCANNED; scanned += STORE_PAGE) {
    // Pending ones are read from the store's listing of those alone: a week of decided approvals before
    // them would otherwise fill whole requests with nothing to show (an inbox page empty but for its link).
    const page = await book.page(after, STORE_PAGE, query.state === 'pending');
    for (let i = 0; i < page.items.length; i++) {
      const { at, approval } = page.items[i]!;
      after = at;
      if (!shown(approval)) continue;
      const view = approvalView(approval, now, policyVersion);
      if ((query.state !== 'all' && view.state !== query.state) || !keep(view)) continue;
      approvals.push(view);
      if (approvals.length === query.limit) {
        const more = i < page.items.length - 1 || page.next !== undefined;
        return { approvals, nextCursor: more ? cursorOf(at) : undefined };
      }
    }
    if (page.next === undefined) return { approvals, nextCursor: undefined };
    after = page.next;
  }
  // Read as much as one request may: the rest is for the next.
  return { approvals, nextCursor: after === undefined ? undefined : cursorOf(after) };
}
