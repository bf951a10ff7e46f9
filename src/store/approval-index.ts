// What a store keeps beside each approval document so that approvals are found without reading every
// document under `{approvals}` (pins, binding pointers and continuations live there too): by caller, those
// that may still be pending; and all of them in the order they were opened, a page at a time.

/** The index entry of one approval, given with its document (Store.putApproval). */
export interface ApprovalIndexEntry {
  /** Who asked (the caller's principal key): a caller's pending approvals are read without the others. */
  caller: string;
  /** When it was opened (epoch ms): approvals are listed in this order, then by id. */
  createdAt: number;
  /**
   * Until when it may still be pending (its deadline), or 0 once it cannot be. An entry is a candidate, not
   * a verdict: readers judge the document itself (its deadline, an unaudited decision).
   */
  pendingUntil: number;
  /**
   * Until when the expiry sweep must look at it: its deadline while it may be pending or approved and not
   * used up (an unaudited decision included, as it reads pending), 0 once decided otherwise, expired or
   * used. The sweep reads those whose liveUntil has passed (Store.expiredApprovals), not every document.
   */
  liveUntil: number;
}

/** One approval of a page: its place in the listing (a cursor to list on from) and its document. */
export interface ApprovalPageItem {
  at: string;
  doc: string;
}

export interface ApprovalPage {
  items: ApprovalPageItem[];
  /** Where the next page starts; undefined when the listing has ended. */
  next: string | undefined;
}

/** Digits of a creation time in a place: epoch ms stay within 15 digits until the year 33658. */
const TIME_DIGITS = 15;

/**
 * An approval's place in the listing: its creation time, zero-padded, then its id. Places sort as strings in
 * the order approvals were opened, which is what both stores index (SQLite a text column, Redis a set
 * ordered by member), and a place is the cursor a reader lists on from.
 */
export function approvalPlace(createdAt: number, id: string): string {
  return `${String(Math.max(0, Math.trunc(createdAt))).padStart(TIME_DIGITS, '0')}:${id}`;
}

/** Whether `text` is a place approvalPlace made (a cursor from outside is checked before any store sees it). */
export function isApprovalPlace(text: string): boolean {
  return /^[0-9]{15}:[!-~]{1,200}$/.test(text);
}
