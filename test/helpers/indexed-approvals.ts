// The set-up of the tests of the store's approval indexes (by caller, by deadline): a book over a real store
// on a clock the test moves, counting every whole-store list (the indexes exist so that none is needed),
// calls to approve under one reviewer rule, and other documents to fill the store with.

import { randomUUID } from 'node:crypto';
import { ApprovalBook, type ApprovalStore, type CallToApprove } from '../../src/approvals/book.js';
import { compileApprovalRules } from '../../src/approvals/rules.js';
import type { Route } from '../../src/pipeline/context.js';
import type { Principal } from '../../src/pipeline/principal.js';
import type { Store } from '../../src/store/store.js';
import { approvalStoreOver } from './approval-store.js';

/** The policy version every approval here is opened under. */
export const V1 = 'policy-1';
const route: Route = { kind: 'tools', ref: 'up/send', publicName: 'send', original: 'send', upstream: 'up', listed: true, params: [] };

/** An API-key caller named `name`. */
export const principal = (name: string): Principal => ({ subject: `key:${name}`, scopes: [], groups: [], via: 'api_key', keyId: name });

/** Calls of up/send under one reviewer rule naming no one, whose approvals are due after `deadlineMs`. */
export function callsUnder(deadlineMs: number): (p: Principal, item: string) => CallToApprove {
  const rule = compileApprovalRules([{ id: 'r', by: 'reviewer', reviewers: { subjects: [], groups: [] }, deadlineSeconds: deadlineMs / 1000, reuse: 1 }])[0]!;
  return (p, item) => ({ callId: randomUUID(), principal: p, route, args: { item }, rule, policyVersion: V1 });
}

export interface IndexedBook {
  book: ApprovalBook;
  /** What the book reads as now (epoch ms): a test moves it past deadlines. */
  clock: number;
  /** Whole-store lists (ApprovalStore.list) so far. */
  listed: number;
  /** A reviewer's decision, as the admin API makes it (any reviewer may decide). */
  decide(id: string, approve: boolean): ReturnType<ApprovalBook['decide']>;
}

/** A book over `store` on its own clock (starting now), counting whole-store lists. */
export function indexedBook(store: Store): IndexedBook {
  const port: ApprovalStore = { ...approvalStoreOver(store), list: () => (state.listed++, store.listApprovals()) };
  const book = new ApprovalBook(port, {}, () => state.clock);
  const state: IndexedBook = {
    book,
    clock: Date.now(),
    listed: 0,
    decide: (id, approve) => book.decide(id, { approve, by: 'reviewer', policyVersion: V1, requestId: randomUUID(), mayDecide: () => true }),
  };
  return state;
}

/** Stores `count` pin documents named `<name>-<i>` beside the approvals, as a store holds them. */
export async function storePins(store: Store, name: string, count: number, ttlMs: number): Promise<void> {
  for (let i = 0; i < count; i++) await store.putApproval(`pin:up/${name}-${i}`, JSON.stringify({ kind: 'pin', ref: `up/${name}-${i}` }), ttlMs);
}
