// The admin API on its own listener (DESIGN.md §5, §7), never on the MCP port: reviewers list, show,
// approve and reject approvals, and accept changed tool definitions; the inbox page serves the same to a
// browser. JSON in and out; every error is `{ error: { code, message } }` with a fitting status. A reviewer
// is shown and may decide only the approvals of rules they review (another rule's approval is answered 404,
// as one that does not exist), and never approve their own call (403 self_approval;
// approvals/reviewer-rights.ts), whatever state the approval is in (who asks is judged first, so a refused
// reviewer learns nothing of it), and is shown and may accept only the changed
// tools they review (tools.pinningReviewers; 403 forbidden); the admin token sees and decides all. Refused
// credentials count toward auth.failureLimit with the MCP endpoint's, per client address (429 past it).
//
//   GET  /approvals[?state=pending|approved|rejected|expired|used|all&limit=N&cursor=C]  → { approvals, nextCursor? }
//   GET  /approvals/{id}
//   POST /approvals/{id}/approve   POST /approvals/{id}/reject   body { reason?, previewSha256? }
//   GET  /pins[?limit=N&cursor=C]  → { pins, nextCursor? }        POST /pins/{ref}/accept   body { digest }
//   GET  /[?cursor=C&pins=P]  (the inbox page: pending calls and changed tools, each a page at a time)
//   POST /login   POST /logout   GET /inbox.js   GET /inbox.css

import { randomUUID } from 'node:crypto';
import { percentDecoded } from '../protocol/percent-decode.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { closeNow, listenOn } from '../net/listen.js';
import type { Logger } from '../log/logger.js';
import { approvalView, type Approval } from '../approvals/approval.js';
import { approvalPage, DEFAULT_LIMIT, listQuery } from './approval-pages.js';
import { inboxPinCursor, pinCursorOf, pinQuery, shownPinPage } from './pin-pages.js';
import type { ApprovalBook, DecisionProblem } from '../approvals/book.js';
import { decisionRefusal, mayView } from '../approvals/reviewer-rights.js';
import { INBOX_CSS, INBOX_JS, inboxPage, loginPage, SECURITY_HEADERS, type ChangedPinView } from './inbox-page.js';
import { ReviewerAuth, SESSION_COOKIE, type AdminAuth, type Reviewer } from './reviewer-auth.js';

/** A pin as the admin API shows it (pinView): its ref decides who is shown it. */
export interface ListedPin {
  ref: string;
}

/** Pinned tool definitions, as the admin API shows and accepts them (tools.pinning). */
export interface PinDesk {
  /** Up to `limit` pins by ref after the pin id `after`; `next` is the id the next page starts after, undefined at the end. */
  page(after: string | undefined, limit: number): Promise<{ pins: ListedPin[]; next: string | undefined }>;
  /** Accepts the changed definition of `ref` whose digest is `digest` (the one reviewed); refused when there is no such change. */
  accept(ref: string, by: string, digest: string): Promise<{ ok: true; pin: unknown } | { ok: false; status: 404 | 409; message: string }>;
  /** Whether this reviewer is shown the pin of `ref` and may accept its change (tools.pinningReviewers; the admin token always). */
  mayReview(ref: string, reviewer: Reviewer): boolean;
  /** Audits an acceptance refused for who asked, with the digest they sent if it is one; resolves once it is recorded (a store that cannot take it rejects). */
  refused(ref: string, by: string, digest: string | undefined): Promise<void>;
}

/** The failed-authentication limit (auth.failureLimit), per client address, counted with the MCP endpoint's. */
export interface AdminAttempts {
  /** Seconds the request's address must wait before it may try again; 0 when it may try now. */
  retryAfter(req: IncomingMessage): number;
  /** Counts a refused credential from the request's address; resolves once it is counted. */
  fail(req: IncomingMessage): Promise<void>;
}

export interface AdminDeps {
  book: ApprovalBook;
  /** The running policy's version: approvals made under another one are invalid. */
  policyVersion(): string;
  pins?: PinDesk | undefined;
  auth: ReviewerAuth;
  /** Guessing the admin token or an admin group's token is limited as on the MCP endpoint; absent: no limit. */
  attempts?: AdminAttempts | undefined;
  log: Logger;
}

export interface AdminListener {
  listen(host: string, port: number): Promise<string>;
  close(): Promise<void>;
}

const MAX_BODY = 16 * 1024;
const TOO_LARGE = Symbol('body too large');
const BODY_TOO_LARGE = `The body is larger than the admin API takes (${MAX_BODY / 1024} KiB); a reason may be at most 1000 characters`;
/** A SHA-256 as Gatehouse writes it (previews, pinned definitions). */
const SHA256_HEX = /^[0-9a-f]{64}$/;
const PIN_FORBIDDEN = 'You are not among the reviewers of this tool\'s changes (tools.pinningReviewers); one of them, or the admin token, must accept it';
/**
 * What a reviewer outside an approval's rule is told of it: 404, as for an id that does not exist. An id is
 * no secret that only its owner could hold: it is derived from the call (approvalId in approvals/book.ts:
 * the caller, the tool, the arguments, the policy version), so a 403 there once told a reviewer who could
 * work one out that this caller had made that very call (until 5 December). The refusal is still logged
 * and audited as `forbidden`; self_approval stays 403, since that reviewer is shown the approval anyway.
 */
function notFoundToOutsiders(problem: DecisionProblem): DecisionProblem {
  return problem === 'forbidden' ? 'not_found' : problem;
}

const PROBLEM_STATUS: Record<DecisionProblem, number> = { not_found: 404, not_pending: 409, invalidated: 409, forbidden: 403, self_approval: 403, preview_mismatch: 409, expired: 409 };
const PROBLEM_MESSAGE: Record<DecisionProblem, string> = {
  not_found: 'No approval has this id',
  not_pending: 'This approval is already decided',
  invalidated: 'The policy changed after this approval was requested; it can no longer be decided, and the caller will be asked anew',
  forbidden: 'You are not among the reviewers of this approval\'s rule',
  self_approval: 'You requested this call, so you cannot approve it: another reviewer must (or the admin token). You may reject it to withdraw it',
  preview_mismatch: 'The arguments you reviewed are not the ones this approval binds; reload and review again',
  expired: 'This approval passed its deadline before a decision',
};

export function createAdminListener(deps: AdminDeps): AdminListener {
  const { log } = deps;
  const server: Server = createServer((req, res) => {
    handle(req, res, deps).catch((err: unknown) => {
      log.error('admin request failed', { err, path: req.url?.split('?')[0] });
      if (!res.headersSent) sendJson(res, 503, { error: { code: 'unavailable', message: 'The admin API cannot answer now (is the store reachable?)' } });
      else res.destroy();
    });
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  return {
    listen: (host, port) => listenOn(server, host, port),
    close: () => closeNow(server),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, deps: AdminDeps): Promise<void> {
  const url = requestUrl(req.url);
  // Not a URL (`//[`): the client's mistake, not the store's; it once fell to the catch-all 503 "unavailable".
  if (url === undefined) return sendError(res, 400, 'bad_request', 'The request target is not a valid URL path');
  const path = url.pathname;
  const method = req.method ?? 'GET';
  if (path === '/healthz' && method === 'GET') return sendJson(res, 200, { ok: true });
  if (path === '/inbox.js' && method === 'GET') return sendAsset(res, 'text/javascript; charset=utf-8', INBOX_JS);
  if (path === '/inbox.css' && method === 'GET') return sendAsset(res, 'text/css; charset=utf-8', INBOX_CSS);
  if (path === '/logout' && method === 'POST') {
    // The cookie is SameSite=Strict, so another site's form cannot end the session; browsers that say where
    // a request comes from are held to that too. Nor may it clear the cookie: a browser applies a cookie set
    // in the answer to a top-level navigation from another site, so any page could sign a reviewer out.
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return sendError(res, 403, 'csrf', 'Sign out from the inbox page itself');
    deps.auth.closeSession(req.headers);
    return redirect(res, '/', `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
  }
  // An address past its failed-authentication limit is refused before any credential is looked at, as on
  // the MCP endpoint: the admin port once let anyone guess the admin token without limit.
  const wait = deps.attempts?.retryAfter(req) ?? 0;
  if (wait > 0) {
    const message = `Too many failed authentication attempts from this address; retry in ${wait} s`;
    const headers = { 'retry-after': String(wait) };
    if (path === '/' || path === '/login') return sendHtml(res, 429, loginPage(message), headers);
    return sendError(res, 429, 'auth_failure_limit', message, headers);
  }
  if (path === '/') return page(req, res, deps, method, url.searchParams);
  if (path === '/login' && method === 'POST') return login(req, res, deps);

  const auth = deps.auth.session(req.headers) ?? (await deps.auth.bearer(req.headers));
  if (!auth.ok) {
    // A credential presented and refused is a guess; a request with none is not.
    if (auth.status === 401 && req.headers.authorization) await deps.attempts?.fail(req);
    return sendError(res, auth.status, 'unauthorized', auth.message, auth.status === 401 ? { 'www-authenticate': 'Bearer realm="gatehouse-admin"' } : {});
  }
  const changes = method === 'POST';
  if (changes && !ReviewerAuth.csrfHolds(auth, req.headers)) return sendError(res, 403, 'csrf', 'A browser session must send its X-CSRF-Token with every change, from the inbox page itself');

  const approval = /^\/approvals\/(ap_[0-9a-f]{24})(?:\/(approve|reject))?$/.exec(path);
  if (path === '/approvals' && method === 'GET') {
    // A page at a time (approval-pages.ts): it once answered every approval in the store in one body.
    const query = listQuery(url.searchParams, 'all');
    if ('problem' in query) return sendError(res, 400, 'bad_request', query.problem);
    const page = await approvalPage(deps.book, query, (a) => mayView(a, auth.reviewer), Date.now(), deps.policyVersion());
    return sendJson(res, 200, { approvals: page.approvals, ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}) });
  }
  if (approval !== null && approval[2] === undefined && method === 'GET') {
    const found = await deps.book.get(approval[1]!);
    // One the reviewer may not view is answered as one that does not exist, as deciding it is (notFoundToOutsiders).
    if (found === undefined || !mayView(found, auth.reviewer)) return sendError(res, 404, 'not_found', PROBLEM_MESSAGE.not_found);
    return sendJson(res, 200, { approval: approvalView(found, Date.now(), deps.policyVersion()) });
  }
  if (approval !== null && approval[2] !== undefined && method === 'POST') {
    const approve = approval[2] === 'approve';
    // Who may decide is judged before what they sent: a reviewer refused (not among the rule's reviewers, or
    // approving their own call) is answered 403 and audited whatever the body holds. A malformed body was
    // judged first, so such a reviewer got 400 (or 413) and the attempt went unrecorded. Their body is then
    // read for the record only (a well-formed reason is kept in the refusal's record).
    const current = await deps.book.get(approval[1]!);
    const refused = current !== undefined && decisionRefusal(current, auth.reviewer, approve) !== undefined;
    const fields = decisionFields(await readJson(req));
    if ('status' in fields && !refused) return sendError(res, fields.status, fields.code, fields.message);
    const { reason, previewSha256 } = 'status' in fields ? {} : fields;
    const result = await deps.book.decide(approval[1]!, {
      approve,
      by: auth.reviewer.subject,
      ...(reason !== undefined ? { reason } : {}),
      ...(previewSha256 !== undefined ? { previewSha256 } : {}),
      policyVersion: deps.policyVersion(),
      requestId: randomUUID(),
      mayDecide: (a: Approval) => decisionRefusal(a, auth.reviewer, approve) ?? true,
    });
    if (!result.ok) {
      if (result.problem === 'forbidden' || result.problem === 'self_approval') deps.log.warn('approval decision refused', { approval: approval[1], decision: approve ? 'approve' : 'reject', refusal: result.problem, reviewer: auth.reviewer.subject });
      // Decided already: say how, so a decision sent twice (a retry after a lost answer, a double click) tells
      // its sender whether theirs stands or another reviewer's does. Only who may decide it gets this far
      // (decide() refuses the others first); mayView stays as a second guard.
      const decided = result.problem === 'not_pending' && result.approval !== undefined && mayView(result.approval, auth.reviewer) ? approvalView(result.approval, Date.now(), deps.policyVersion()) : undefined;
      if (decided !== undefined && decided.state !== 'pending') {
        const by = decided.decision !== undefined ? ` by ${decided.decision.by}` : '';
        const how = decided.state === 'used' ? `approved${by}, and its approved runs are used` : `${decided.state}${by}`;
        return sendJson(res, 409, { error: { code: 'not_pending', message: `This approval is already ${how}`, state: decided.state } });
      }
      const shown = notFoundToOutsiders(result.problem);
      return sendError(res, PROBLEM_STATUS[shown], shown, PROBLEM_MESSAGE[shown]);
    }
    deps.log.info('approval decided', { approval: result.approval.id, decision: approve ? 'approved' : 'rejected', reviewer: auth.reviewer.subject, tool: result.approval.toolRef });
    return sendJson(res, 200, { approval: approvalView(result.approval, Date.now(), deps.policyVersion()) });
  }
  if (path === '/pins' && method === 'GET') {
    const desk = deps.pins;
    if (desk === undefined) return sendError(res, 404, 'pinning_off', 'Tool pinning is off (tools.pinning: off)');
    // A page at a time, as GET /approvals (pin-pages.ts): it once answered every pin, definitions and diffs, in one body.
    const query = pinQuery(url.searchParams);
    if ('problem' in query) return sendError(res, 400, 'bad_request', query.problem);
    const page = await desk.page(query.after, query.limit);
    // Only the pins this reviewer reviews, as GET /approvals lists only the approvals they decide: a page may
    // hold fewer than `limit` (none, even) and still be followed by another.
    const pins = page.pins.filter((p) => desk.mayReview(p.ref, auth.reviewer));
    return sendJson(res, 200, { pins, ...(page.next !== undefined ? { nextCursor: pinCursorOf(page.next) } : {}) });
  }
  const pin = /^\/pins\/(.+)\/accept$/.exec(path);
  if (pin !== null && method === 'POST') {
    const desk = deps.pins;
    if (desk === undefined) return sendError(res, 404, 'pinning_off', 'Tool pinning is off (tools.pinning: off)');
    const ref = percentDecoded(pin[1]!);
    if (ref === undefined) return sendError(res, 400, 'bad_request', 'The tool ref in the path is not valid percent-encoding');
    // Limited per tool as a decision is per rule: an admin group's member once accepted any tool's change,
    // one only another team reviews included. Refused and audited before the pin is looked at (the rights
    // are the config's, so a 403 says nothing of whether such a pin exists), and before the body is judged:
    // a refused reviewer with a malformed body got 400 (or 413), unrecorded. The body is then read for the
    // record only: the digest they sent, when it is one.
    if (!desk.mayReview(ref, auth.reviewer)) {
      const sent = await readJson(req);
      const digest = typeof sent === 'object' && typeof sent.digest === 'string' && SHA256_HEX.test(sent.digest) ? sent.digest : undefined;
      await desk.refused(ref, auth.reviewer.subject, digest);
      deps.log.warn('tool definition acceptance refused', { ref, refusal: 'forbidden', reviewer: auth.reviewer.subject });
      return sendError(res, 403, 'forbidden', PIN_FORBIDDEN);
    }
    // The accept names the definition reviewed, always. A body it cannot read is refused, and so is one with
    // no digest: either accepted whatever the upstream served by then, so a change made after the reviewer
    // looked (`curl -d` sends its JSON as a form; a script that posts nothing) went in unseen.
    const body = await readJson(req);
    if (body === TOO_LARGE) return sendError(res, 413, 'body_too_large', BODY_TOO_LARGE);
    if (body === undefined) return sendError(res, 400, 'bad_request', 'The body must be a JSON object: { "digest": "…" } (the changed.sha256 of the definition reviewed, from GET /pins), sent as application/json');
    const digest = body.digest;
    if (digest === undefined || digest === null) return sendError(res, 400, 'digest_required', 'Name the definition you reviewed: send { "digest": "…" }, its changed.sha256 from GET /pins (gatehouse pins show prints it); nothing was accepted');
    if (typeof digest !== 'string' || !SHA256_HEX.test(digest)) return sendError(res, 400, 'bad_request', 'digest must be 64 lowercase hex digits: the changed.sha256 that GET /pins shows');
    const result = await desk.accept(ref, auth.reviewer.subject, digest);
    if (!result.ok) return sendError(res, result.status, result.status === 404 ? 'not_found' : 'conflict', result.message);
    deps.log.info('tool definition accepted', { ref, reviewer: auth.reviewer.subject });
    return sendJson(res, 200, { pin: result.pin });
  }
  const known = path === '/approvals' || approval !== null || path === '/pins' || pin !== null;
  return sendError(res, known ? 405 : 404, known ? 'method_not_allowed' : 'not_found', known ? `${method} is not allowed on ${path}` : `Nothing at ${path}; see GET /approvals`);
}

/** The request target read as a URL against a placeholder origin; undefined when it is none. */
function requestUrl(target: string | undefined): URL | undefined {
  try {
    return new URL(target ?? '/', 'http://admin.invalid');
  } catch {
    return undefined;
  }
}

async function page(req: IncomingMessage, res: ServerResponse, deps: AdminDeps, method: string, params: URLSearchParams): Promise<void> {
  if (method !== 'GET') return sendError(res, 405, 'method_not_allowed', `${method} is not allowed on /`);
  const auth = deps.auth.session(req.headers);
  if (auth === undefined || !auth.ok) return sendHtml(res, 200, loginPage());
  // The pending calls a page at a time, as GET /approvals gives them; a link leads to the next page.
  // A cursor that is none of ours (a link cut short) shows the first page: the page only reads.
  const cursorParam = params.get('cursor');
  const asked = listQuery(new URLSearchParams(cursorParam === null ? { state: 'pending' } : { state: 'pending', cursor: cursorParam }), 'pending');
  const query = 'problem' in asked ? { state: 'pending' as const, limit: DEFAULT_LIMIT, after: undefined } : asked;
  const listed = await approvalPage(deps.book, query, (a) => mayView(a, auth.reviewer), Date.now(), deps.policyVersion(), (v) => !v.invalidated);
  const pending = listed.approvals;
  // The changed tools a page at a time too, by ref, as GET /pins gives them (pinView: state and the path-by-path
  // changes); only those of tools this reviewer reviews (tools.pinningReviewers). Every pin in the store was
  // read on each load, to show the few that changed. Their own link (`pins`) leads to the next page; each
  // list's link keeps the other's place. A `pins` that is none of ours shows the first page, as `cursor` does.
  const desk = deps.pins;
  const pinsParam = params.get('pins');
  const pinsAfter = inboxPinCursor(pinsParam);
  const changed = desk ? await shownPinPage(desk, pinsAfter, (p): p is ChangedPinView => isChangedPin(p) && desk.mayReview(p.ref, auth.reviewer)) : { pins: [], nextCursor: undefined };
  const here = { ...(query.after !== undefined && cursorParam !== null ? { cursor: cursorParam } : {}), ...(pinsAfter !== undefined && pinsParam !== null ? { pins: pinsParam } : {}) };
  return sendHtml(res, 200, inboxPage({
    reviewer: auth.reviewer,
    csrf: auth.csrf!,
    approvals: pending,
    ...(listed.nextCursor !== undefined ? { nextCursor: listed.nextCursor } : {}),
    first: query.after === undefined,
    changedPins: changed.pins,
    ...(changed.nextCursor !== undefined ? { pinsNextCursor: changed.nextCursor } : {}),
    pinsFirst: pinsAfter === undefined,
    here,
  }));
}

/** A pin view (pinView) whose tool changed: what the inbox page needs to show the change and accept it. */
function isChangedPin(p: unknown): p is ChangedPinView {
  const v = p as Partial<ChangedPinView> | null;
  return typeof v === 'object' && v !== null && v.state === 'changed' && typeof v.ref === 'string' && typeof v.pinned?.sha256 === 'string' && typeof v.changed?.sha256 === 'string' && Array.isArray(v.changes);
}

async function login(req: IncomingMessage, res: ServerResponse, deps: AdminDeps): Promise<void> {
  // A login form posted from another site would log the browser in as someone else; browsers say where it came from.
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return sendError(res, 403, 'csrf', 'The login form must be posted from the inbox page itself');
  const text = await readText(req);
  const credential = text === undefined ? undefined : new URLSearchParams(text).get('credential')?.trim();
  let auth: AdminAuth = { ok: false, status: 401, message: 'Paste the admin token, or an access token of an admin group' };
  if (credential) auth = await deps.auth.credential(credential, req.headers);
  if (!auth.ok) {
    if (credential && auth.status === 401) await deps.attempts?.fail(req);
    return sendHtml(res, auth.status, loginPage(auth.message));
  }
  const session = deps.auth.openSession(auth.reviewer satisfies Reviewer, auth.expiresAt);
  return redirect(res, '/', `${SESSION_COOKIE}=${session.id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${session.seconds}`);
}

async function readText(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** What a decision sends (reason, previewSha256; both optional), or why it is refused as sent. */
function decisionFields(body: Record<string, unknown> | undefined | typeof TOO_LARGE): { reason?: string; previewSha256?: string } | { status: 400 | 413; code: string; message: string } {
  if (body === TOO_LARGE) return { status: 413, code: 'body_too_large', message: BODY_TOO_LARGE };
  if (body === undefined) return { status: 400, code: 'bad_request', message: 'The body must be a JSON object: { "reason": "…", "previewSha256": "…" }, both optional' };
  const { reason, previewSha256 } = body;
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > 1000)) return { status: 400, code: 'bad_request', message: 'reason must be a string of at most 1000 characters' };
  if (previewSha256 !== undefined && (typeof previewSha256 !== 'string' || !SHA256_HEX.test(previewSha256))) return { status: 400, code: 'bad_request', message: 'previewSha256 must be 64 hex digits' };
  return { ...(typeof reason === 'string' && reason.trim() !== '' ? { reason: reason.trim() } : {}), ...(typeof previewSha256 === 'string' ? { previewSha256 } : {}) };
}

/**
 * The JSON object a change sends; undefined when it is none, TOO_LARGE past MAX_BODY (said as such: it was
 * answered as JSON that is not an object, and a script's author looked for the mistake in its JSON).
 */
async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined | typeof TOO_LARGE> {
  const text = await readText(req);
  if (text === undefined) return TOO_LARGE;
  if (text.trim() === '') return {};
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(type)) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...headers }).end(JSON.stringify(body));
}

function sendError(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { error: { code, message } }, headers);
}

function sendHtml(res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...SECURITY_HEADERS, ...headers }).end(html);
}

function sendAsset(res: ServerResponse, type: string, text: string): void {
  res.writeHead(200, { 'content-type': type, ...SECURITY_HEADERS }).end(text);
}

function redirect(res: ServerResponse, to: string, cookie: string): void {
  res.writeHead(303, { location: to, 'set-cookie': cookie, ...SECURITY_HEADERS }).end();
}
