// The reviewers' inbox: server-rendered HTML, one small script and one stylesheet, no build step. The
// Content-Security-Policy allows nothing but this origin's own script, style and fetches: no inline script,
// no framing, no form posts elsewhere. Every value shown is HTML-escaped; arguments are the redacted preview.
// A reviewer's own call is shown without an Approve button (four eyes; the API refuses it too).
// Below the pending calls, the tools whose definition changed since it was pinned (tools.pinning), each with
// its diff path by path and a button that accepts the definition shown (by its digest) as the new pin. Both
// lists come a page at a time, each with its own link to the next (`cursor`, `pins`) that keeps the other's place.

import type { ApprovalView } from '../approvals/approval.js';
import type { PinChange, PinnedDefinition, pinView } from '../approvals/pins.js';
import { isOwnCall } from '../approvals/reviewer-rights.js';
import type { Reviewer } from './reviewer-auth.js';

export const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

type PendingView = ApprovalView;

/** A pin as GET /pins shows it (pinView), whose tool serves another definition than the pinned one. */
export type ChangedPinView = ReturnType<typeof pinView> & { state: 'changed'; changed: PinnedDefinition };

/** Where the inbox's two lists stand: each list's cursor as the page was asked for it, absent on its first page. */
export interface InboxPlace {
  cursor?: string;
  pins?: string;
}

/**
 * The inbox: one page of pending calls (GET /approvals' page; `nextCursor` links to the next, `first` says
 * whether this is the first), then one page of changed tools (`pinsNextCursor`, `pinsFirst` likewise); `here`
 * is where both stand, so that each list's links keep the other's place.
 */
export function inboxPage(view: { reviewer: Reviewer; csrf: string; approvals: PendingView[]; changedPins: ChangedPinView[]; nextCursor?: string; first?: boolean; pinsNextCursor?: string; pinsFirst?: boolean; here?: InboxPlace }): string {
  const rows = view.approvals.map((a) => row(a, isOwnCall(a, view.reviewer))).join('');
  const here = view.here ?? {};
  const pinsFirst = view.pinsFirst !== false;
  const pins = view.changedPins.length === 0 && view.pinsNextCursor === undefined && pinsFirst ? '' : `
    <h2>Changed tools</h2>
    <p>These tools serve another definition than the one pinned, so their calls are refused with <code>tool_changed</code> (or only logged, with <code>tools.pinning: warn</code>) until the change is accepted. Accepting makes the definition shown here the new pin.</p>
    ${view.changedPins.length === 0 ? `<p id="no-pins">${pinsFirst ? 'None of the tools read so far has changed; more follow.' : 'No more changed tools.'}</p>` : view.changedPins.map(pinSection).join('')}
    ${pinPager(here, view.pinsNextCursor, pinsFirst)}`;
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="csrf-token" content="${esc(view.csrf)}">
  <title>Gatehouse · Approvals</title>
  <link rel="stylesheet" href="/inbox.css">
  <script src="/inbox.js" defer></script>
</head>
<body>
  <header>
    <h1>Approvals</h1>
    <form method="post" action="/logout" id="logout"><span>Signed in as <b>${esc(view.reviewer.subject)}</b></span> <button type="submit">Sign out</button></form>
  </header>
  <main>
    ${view.approvals.length === 0 ? `<p id="empty">${view.first === false ? 'No more calls are waiting for approval.' : 'No call is waiting for approval.'}</p>` : `
    <table id="pending">
      <thead><tr><th>Caller</th><th>Tool</th><th>Arguments (redacted)</th><th>Waiting</th><th>Decision</th></tr></thead>
      <tbody>${rows}
      </tbody>
    </table>`}
    ${pager(here, view.nextCursor, view.first !== false)}
    ${pins}
  </main>
</body>
</html>
`;
}

/**
 * One pending call. On the reviewer's own call there is no Approve button, and a note says why: someone else
 * must approve it (the API refuses it anyway, self_approval). Reject stays, to withdraw the call.
 */
function row(a: PendingView, own: boolean): string {
  const approve = own ? '<small class="own">Your own call: another reviewer must approve it. You may reject it to withdraw it.</small>' : '<button type="button" class="approve">Approve</button>';
  return `
      <tr data-approval="${esc(a.id)}" data-preview="${esc(a.previewSha256)}"${own ? ' data-own="true"' : ''}>
        <td><span class="mono">${esc(a.caller.subject)}</span>${a.caller.tenant ? `<br><small>tenant ${esc(a.caller.tenant)}</small>` : ''}</td>
        <td><span class="mono">${esc(a.toolRef)}</span><br><small>rule ${esc(a.rule)}</small></td>
        <td><pre class="args">${esc(JSON.stringify(a.preview, null, 2))}</pre><small class="mono">sha256 ${esc(a.previewSha256.slice(0, 16))}…</small></td>
        <td title="${esc(new Date(a.createdAt).toISOString())}">${esc(age(a.ageSeconds))}<br><small>deadline ${esc(new Date(a.expiresAt).toISOString().replace('.000', ''))}</small></td>
        <td class="actions">
          <input type="text" name="reason" maxlength="1000" placeholder="Reason (optional)" aria-label="Reason for ${esc(a.id)}">
          ${approve}
          <button type="button" class="reject">Reject</button>
          <output class="status"></output>
        </td>
      </tr>`;
}

/** Links to the next page of pending calls, and back to the first; the changed tools stay where they are. */
function pager(here: InboxPlace, nextCursor: string | undefined, first: boolean): string {
  const links = [
    ...(first ? [] : [`<a id="first" href="${esc(inboxHref(undefined, here.pins))}">First page</a>`]),
    ...(nextCursor !== undefined ? [`<a id="more" href="${esc(inboxHref(nextCursor, here.pins))}">More calls waiting</a>`] : []),
  ];
  return links.length === 0 ? '' : `<p class="pager">${links.join(' · ')}</p>`;
}

/** Links to the next page of changed tools, and back to the first; the pending calls stay where they are. */
function pinPager(here: InboxPlace, nextCursor: string | undefined, first: boolean): string {
  const links = [
    ...(first ? [] : [`<a id="pins-first" href="${esc(inboxHref(here.cursor, undefined))}">First changed tools</a>`]),
    ...(nextCursor !== undefined ? [`<a id="pins-more" href="${esc(inboxHref(here.cursor, nextCursor))}">More changed tools</a>`] : []),
  ];
  return links.length === 0 ? '' : `<p class="pager">${links.join(' · ')}</p>`;
}

/** The inbox's address with each list at the given cursor (undefined: its first page). */
function inboxHref(cursor: string | undefined, pins: string | undefined): string {
  const query = [...(cursor !== undefined ? [`cursor=${encodeURIComponent(cursor)}`] : []), ...(pins !== undefined ? [`pins=${encodeURIComponent(pins)}`] : [])];
  return query.length === 0 ? '/' : `/?${query.join('&')}`;
}

function pinSection(p: ChangedPinView): string {
  const rows = p.changes.map((c) => `
          <tr>
            <td class="mono path">${esc(c.path)}</td>
            <td>${side(c, 'before')}</td>
            <td>${side(c, 'after')}</td>
          </tr>`).join('');
  return `
    <section class="pin" data-pin="${esc(p.ref)}" data-digest="${esc(p.changed.sha256)}">
      <h3 class="mono">${esc(p.ref)}</h3>
      <p class="digests"><small>pinned <span class="mono pinned" title="${esc(p.pinned.sha256)}">sha256 ${esc(p.pinned.sha256.slice(0, 16))}…</span> ${esc(when(p.pinned.at))}${p.pinned.acceptedBy ? ` (accepted by ${esc(p.pinned.acceptedBy)})` : ''}
        · now <span class="mono current" title="${esc(p.changed.sha256)}">sha256 ${esc(p.changed.sha256.slice(0, 16))}…</span> seen ${esc(when(p.changed.at))}</small></p>
      <table class="diff">
        <thead><tr><th>Path</th><th>Pinned</th><th>Now</th></tr></thead>
        <tbody>${rows}
        </tbody>
      </table>
      <div class="actions">
        <button type="button" class="accept">Accept change</button>
        <output class="status"></output>
      </div>
    </section>`;
}

/** One side of a change: the JSON value, or a note when the path does not exist on that side. */
function side(change: PinChange, which: 'before' | 'after'): string {
  if (!(which in change)) return '<small class="absent">(absent)</small>';
  const text = JSON.stringify(change[which], null, 2) ?? String(change[which]);
  return `<pre class="${which}">${esc(text)}</pre>`;
}

function when(at: number): string {
  return Number.isFinite(at) ? new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z') : '';
}

export function loginPage(problem?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Gatehouse · Sign in</title>
  <link rel="stylesheet" href="/inbox.css">
</head>
<body>
  <main class="login">
    <h1>Gatehouse approvals</h1>
    ${problem ? `<p class="problem" role="alert">${esc(problem)}</p>` : ''}
    <form method="post" action="/login">
      <label for="credential">Admin token, or an access token of an admin group</label>
      <input id="credential" name="credential" type="password" autocomplete="off" required>
      <button type="submit">Sign in</button>
    </form>
  </main>
</body>
</html>
`;
}

/** The page's script: decisions go to the JSON API with the session's CSRF token and the preview hash reviewed. */
export const INBOX_JS = `'use strict';
(function () {
  var csrf = document.querySelector('meta[name="csrf-token"]').getAttribute('content');
  function decide(row, verdict) {
    var id = row.getAttribute('data-approval');
    var status = row.querySelector('.status');
    var reason = row.querySelector('input[name="reason"]').value;
    var buttons = row.querySelectorAll('button');
    buttons.forEach(function (b) { b.disabled = true; });
    status.textContent = 'Sending…';
    fetch('/approvals/' + encodeURIComponent(id) + '/' + verdict, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify({ reason: reason || undefined, previewSha256: row.getAttribute('data-preview') })
    }).then(function (res) {
      return res.json().then(function (body) {
        if (res.ok) {
          status.textContent = verdict === 'approve' ? 'Approved' : 'Rejected';
          row.classList.add('decided', verdict === 'approve' ? 'approved' : 'rejected');
        } else {
          status.textContent = (body && body.error && body.error.message) || ('Failed: HTTP ' + res.status);
          row.classList.add('failed');
          buttons.forEach(function (b) { b.disabled = false; });
        }
      });
    }).catch(function () {
      status.textContent = 'The gateway could not be reached';
      buttons.forEach(function (b) { b.disabled = false; });
    });
  }
  document.querySelectorAll('tr[data-approval]').forEach(function (row) {
    // One's own call has no Approve button (four eyes): only Reject, to withdraw it.
    var approve = row.querySelector('.approve');
    if (approve) approve.addEventListener('click', function () { decide(row, 'approve'); });
    row.querySelector('.reject').addEventListener('click', function () { decide(row, 'reject'); });
  });
  // Accepting a changed tool sends the digest of the definition shown: if the tool changed again since the
  // page was loaded, the gateway refuses (409) and the reviewer reloads to review the newer change.
  function accept(box) {
    var ref = box.getAttribute('data-pin');
    var status = box.querySelector('.status');
    var button = box.querySelector('button.accept');
    button.disabled = true;
    status.textContent = 'Sending…';
    fetch('/pins/' + encodeURIComponent(ref) + '/accept', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify({ digest: box.getAttribute('data-digest') })
    }).then(function (res) {
      return res.json().then(function (body) {
        if (res.ok) {
          status.textContent = 'Accepted';
          box.classList.add('accepted');
        } else {
          status.textContent = (body && body.error && body.error.message) || ('Failed: HTTP ' + res.status);
          box.classList.add('failed');
          button.disabled = false;
        }
      });
    }).catch(function () {
      status.textContent = 'The gateway could not be reached';
      button.disabled = false;
    });
  }
  document.querySelectorAll('section[data-pin]').forEach(function (box) {
    box.querySelector('button.accept').addEventListener('click', function () { accept(box); });
  });
})();
`;

export const INBOX_CSS = `body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
header { display: flex; justify-content: space-between; align-items: center; padding: 0.75rem 1.5rem; background: #1d232a; color: #fff; }
header h1 { font-size: 1.2rem; margin: 0; }
header button { margin-left: 0.5rem; }
main { padding: 1.5rem; }
main.login { max-width: 28rem; margin: 4rem auto; background: #fff; border-radius: 8px; box-shadow: 0 1px 4px rgba(0,0,0,.1); }
main.login input { display: block; width: 100%; box-sizing: border-box; margin: 0.5rem 0 1rem; padding: 0.5rem; }
.problem { color: #a4161a; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; vertical-align: top; padding: 0.6rem; border-bottom: 1px solid #e3e6ea; }
pre.args { margin: 0; max-width: 36rem; max-height: 16rem; overflow: auto; background: #f0f2f5; padding: 0.4rem; font-size: 0.85rem; }
.mono { font-family: ui-monospace, monospace; }
small { color: #5b6570; }
.actions input { width: 12rem; margin-bottom: 0.4rem; display: block; }
button { padding: 0.3rem 0.8rem; cursor: pointer; }
button.approve { background: #2b8a3e; color: #fff; border: 0; border-radius: 4px; }
button.reject { background: #c92a2a; color: #fff; border: 0; border-radius: 4px; }
tr.approved { background: #ebfbee; }
tr.rejected { background: #fff5f5; }
small.own { display: block; margin-bottom: 0.4rem; max-width: 14rem; }
output.status { display: block; margin-top: 0.3rem; font-size: 0.85rem; }
section.pin { background: #fff; border: 1px solid #e3e6ea; border-radius: 6px; padding: 0.8rem 1rem; margin-bottom: 1rem; }
section.pin h3 { margin: 0 0 0.3rem; font-size: 1rem; }
section.pin.accepted { background: #ebfbee; }
table.diff pre { margin: 0; max-width: 32rem; max-height: 16rem; overflow: auto; padding: 0.4rem; font-size: 0.85rem; white-space: pre-wrap; word-break: break-word; }
table.diff pre.before { background: #fff5f5; }
table.diff pre.after { background: #ebfbee; }
section.pin .actions { margin-top: 0.6rem; }
button.accept { background: #1864ab; color: #fff; border: 0; border-radius: 4px; }
`;

function age(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
