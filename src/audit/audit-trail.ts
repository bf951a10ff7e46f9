// The audit: one record per governed call, written before the answer leaves Gatehouse (the FITsociety
// seed: "durably persisted before the official transport response is returned"). It subscribes to the
// pipeline's `answer` event, so no stage knows about it; the answer waits for the write, and a write that
// fails withholds the answer (GW_ERR_STATE_UNAVAILABLE). Each record carries the run id the client is
// given in `_meta["dev.gatehouse/run_id"]`, the SHA-256 of the canonical arguments and the arguments with
// secrets redacted; the store chains the records by hash.

import { randomUUID } from 'node:crypto';
import { refusalCode, upstreamFailureOf, type Refusal } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { isoNow, mayHoldSecrets, redactValue } from '../log/logger.js';
import { isGoverned } from '../pipeline/answer-event.js';
import { channels, subscribe, waitedOn, type CallAnswerEvent, type CallEndEvent, type CallStartEvent } from '../pipeline/events.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import type { JsonRpcRequest } from '../protocol/jsonrpc.js';
import { sha256Hex } from '../protocol/sha256.js';
import { IDEMPOTENCY_META } from '../policy/idempotency-stage.js';
import { canonicalEntryJson, knowEntryJson } from '../store/audit-chain.js';
import type { StoreGuard } from '../store/guard.js';
import type { AuditEntry } from '../store/store.js';

export const RUN_ID_META = 'dev.gatehouse/run_id';
const DAY_MS = 86_400_000;
/** How often records past `audit.retainDays` are removed. */
const PRUNE_EVERY_MS = 3_600_000;

/** The record of one answered call. Built by assignment: it is made for every governed call. */
export function auditEntryOf(e: CallAnswerEvent, runId: string): AuditEntry {
  const { ctx, answer } = e;
  const params = (ctx.message as JsonRpcRequest).params ?? {};
  const args = params.arguments ?? {};
  const p = ctx.principal;
  const result = answer.response.result;
  // The upstream failed this call, whether the failure came in the answer's stream or as the refusal a
  // stage made of it (a breaker or another stage that reads the answer turns one into the other). A refusal
  // of Gatehouse's own in the stream (no room for another upstream session) refused it: nothing ran.
  const own: Refusal | undefined = answer.failure?.refusedBeforeUpstream === true && !ctx.cancel.aborted ? { kind: 'failure', error: answer.failure } : undefined;
  const failed = own !== undefined ? undefined : (answer.failure ?? upstreamFailureOf(answer.refusal));
  const refusal = answer.refusal ?? own;
  const argsJson = canonicalJson(args);
  // Arguments without anything to redact (the usual case) are recorded as they are, and their canonical
  // JSON, made once for the digest, serves the record too.
  const plain = !mayHoldSecrets(args);
  const entry: AuditEntry = {
    time: isoNow(),
    callId: ctx.callId,
    runId,
    subject: p.subject,
    method: ctx.method ?? 'tools/call',
    argumentsSha256: sha256Hex(argsJson),
    arguments: plain ? args : redactValue(args),
    // A call whose answer broke off because its client left is `aborted`, as in the metrics and the request log.
    outcome: failed !== undefined ? (ctx.cancel.aborted ? 'aborted' : 'failed') : refusal !== undefined ? 'refused' : answer.response.error !== undefined ? 'error' : result?.isError === true ? 'tool_error' : 'ok',
    latencyMs: Math.round((performance.now() - ctx.receivedAt) * 1000) / 1000,
  };
  if (p.tenant !== undefined) entry.tenant = p.tenant;
  if (p.keyId !== undefined) entry.keyId = p.keyId;
  if (p.tokenId !== undefined) entry.tokenId = p.tokenId;
  if (ctx.route) {
    entry.toolRef = ctx.route.ref;
    entry.tool = ctx.route.publicName;
    entry.upstream = ctx.route.upstream;
  } else if (typeof params.name === 'string') entry.tool = params.name;
  if (failed !== undefined) {
    entry.refusal = ctx.cancel.aborted ? 'client_closed' : refusalCode({ kind: 'failure', error: failed });
    entry.stage = 'upstream';
  } else if (refusal !== undefined) {
    entry.refusal = refusalCode(refusal);
    const stage = refusal === own ? 'upstream' : e.stage;
    if (stage !== undefined) entry.stage = stage;
    if (refusal.kind === 'tool' && refusal.rule !== undefined) entry.rule = refusal.rule;
  }
  const key = (params._meta as Record<string, unknown> | undefined)?.[IDEMPOTENCY_META];
  if (typeof key === 'string') entry.idempotencyKey = key;
  if (ctx.approvalId !== undefined) entry.approvalId = ctx.approvalId;
  knowEntryJson(entry, canonicalEntryJson(entry, plain ? argsJson : undefined));
  return entry;
}

/** Audits every governed call answered on `edge`; returns the function that stops it. */
export function auditCalls(edge: object, guard: StoreGuard, settings: { retainDays: number }, log: Logger): () => void {
  // Governed calls under way and not yet answered: each will append soon, which lets the store make
  // several appends durable in one commit (see Store.appendAudit).
  const running = new Set<string>();
  const stopStart = subscribe<CallStartEvent>(channels.start, (e) => {
    if (e.edge === edge && isGoverned(e.ctx)) running.add(e.callId);
  });
  const stopEnd = subscribe<CallEndEvent>(channels.end, (e) => {
    if (e.edge === edge) running.delete(e.callId);
  });
  const stopAnswer = subscribe<CallAnswerEvent>(channels.answer, (e) => {
    if (e.edge !== edge) return;
    running.delete(e.callId);
    const runId = randomUUID();
    e.addMeta(RUN_ID_META, runId);
    e.waitFor(waitedOn(e, 'audit', 'store.append', guard.run((store) => store.appendAudit(auditEntryOf(e, runId), running.size))));
  });
  const stop = (): void => {
    stopStart();
    stopEnd();
    stopAnswer();
  };
  let stopped = false;
  const prune = (): void => {
    guard.run((store) => store.pruneAudit(Date.now() - settings.retainDays * DAY_MS)).then(
      (removed) => removed > 0 && log.info('audit records past retention removed', { removed, retainDays: settings.retainDays }),
      // A run the shutdown cut short (the store closes after the trail stops) is not news, and will not be tried again.
      (err: unknown) => stopped || log.warn('audit retention could not run; it is tried again later', { err }),
    );
  };
  const timer = setInterval(prune, PRUNE_EVERY_MS);
  timer.unref();
  prune();
  return () => {
    stopped = true;
    stop();
    clearInterval(timer);
  };
}
