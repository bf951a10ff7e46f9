// The inbox page's two pagers (src/admin/inbox-page.ts): the pending calls (`cursor`) and the changed tools
// (`pins`) come a page at a time each, and each list's links keep the other's place, so paging through the
// changed tools does not send a reviewer back to the first page of calls, nor the reverse.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inboxPage } from '../../../src/admin/inbox-page.js';

const reviewer = { subject: 'admin-token', groups: [], admin: true };
const hrefOf = (html: string, id: string) => new RegExp(`<a id="${id}" href="([^"]+)"`).exec(html)?.[1]?.replace(/&amp;/g, '&');

test('each list\'s links keep the other\'s place', () => {
  const html = inboxPage({ reviewer, csrf: 't', approvals: [], changedPins: [], nextCursor: 'C2', first: false, pinsNextCursor: 'P2', pinsFirst: false, here: { cursor: 'C1', pins: 'P1' } });
  assert.equal(hrefOf(html, 'more'), '/?cursor=C2&pins=P1');
  assert.equal(hrefOf(html, 'first'), '/?pins=P1');
  assert.equal(hrefOf(html, 'pins-more'), '/?cursor=C1&pins=P2');
  assert.equal(hrefOf(html, 'pins-first'), '/?cursor=C1');
  assert.match(html, /<p id="no-pins">No more changed tools\.<\/p>/);
});

test('on both first pages, with nothing changed and nothing more, there is no changed-tools section and no link', () => {
  const html = inboxPage({ reviewer, csrf: 't', approvals: [], changedPins: [], first: true, pinsFirst: true, here: {} });
  assert.doesNotMatch(html, /Changed tools|id="pins-more"|id="pins-first"|id="more"|id="first"/);
});

test('a first page of tools with none changed among those read, but more to read, says so and links on', () => {
  const html = inboxPage({ reviewer, csrf: 't', approvals: [], changedPins: [], pinsNextCursor: 'P2', pinsFirst: true, here: {} });
  assert.match(html, /None of the tools read so far has changed; more follow\./);
  assert.equal(hrefOf(html, 'pins-more'), '/?pins=P2');
});
