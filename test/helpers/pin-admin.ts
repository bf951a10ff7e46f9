// The admin API over a PinBook on a real Store, signed into with an admin token: for tests of GET /pins and
// of the inbox's changed tools with more pins than a page holds, made through the book as calls make them.
// `port` may wrap the store port (pinStoreOver), to count what the admin API reads.

import assert from 'node:assert/strict';
import { createAdminListener } from '../../src/admin/server.js';
import { ReviewerAuth } from '../../src/admin/reviewer-auth.js';
import { ApprovalBook } from '../../src/approvals/book.js';
import { PinBook, pinView, type PinStore } from '../../src/approvals/pins.js';
import { createLogger } from '../../src/log/logger.js';
import type { Store } from '../../src/store/store.js';
import { approvalStoreOver } from './approval-store.js';
import { pinStoreOver, toolRoute } from './pin-store.js';

export interface PinAdmin {
  /** The admin listener's base URL. */
  url: string;
  pins: PinBook;
  /** Closes the listener, then the store. */
  close(): Promise<void>;
}

export async function startPinAdmin(store: Store, token: string, port: (store: Store) => PinStore = pinStoreOver): Promise<PinAdmin> {
  const pins = new PinBook(port(store), createLogger('error', () => {}));
  const desk = {
    page: async (after: string | undefined, limit: number) => {
      const page = await pins.page(after, limit);
      return { pins: page.pins.map(pinView), next: page.next };
    },
    accept: (ref: string, by: string, digest: string) => pins.accept(ref, by, digest),
    // Only the admin token signs in here, which reviews every pin (tools.pinningReviewers).
    mayReview: () => true,
    refused: (ref: string, by: string, digest: string | undefined) => pins.refused(ref, by, digest),
  };
  const admin = createAdminListener({ book: new ApprovalBook(approvalStoreOver(store)), policyVersion: () => 'p', pins: desk, auth: new ReviewerAuth(token, [], undefined), log: createLogger('error', () => {}) });
  const url = await admin.listen('127.0.0.1', 0);
  return {
    url,
    pins,
    close: async () => {
      await admin.close();
      await store.close();
    },
  };
}

/**
 * Pins `total` tools (up/tool000, up/tool001, …: they sort as their numbers do), then changes every `every`th
 * one from the first, as calls seeing new definitions do; resolves with the changed refs, in ref order.
 */
export async function pinAndChange(pins: PinBook, total: number, every: number): Promise<string[]> {
  const nameOf = (i: number) => `tool${String(i).padStart(3, '0')}`;
  const changed: string[] = [];
  for (let i = 0; i < total; i++) assert.deepEqual(await pins.check(toolRoute(nameOf(i), 'v1')), { ok: true });
  for (let i = 0; i < total; i += every) {
    assert.equal((await pins.check(toolRoute(nameOf(i), 'v2'))).ok, false);
    changed.push(`up/${nameOf(i)}`);
  }
  return changed;
}
