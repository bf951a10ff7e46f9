// The final answer of a call, caught on its way out whatever shape the Outcome has, so work that must be
// done before the client sees it (an output check, the stored answer of an idempotent write, the audit
// record) is done first. A refusal, a JSON answer, the last message of a stream and the response inside
// relayed bytes (a JSON body, or the SSE event that answers the request) all come through `onFinal`.
// Relayed bytes pass unchanged unless `onFinal` returns another response.

import { Transform, type Readable } from 'node:stream';
import { asGatewayError, GatewayError, refusalOfTool, toWire, tooDeep, type Refusal } from '../errors.js';
import { carriesOneOutcome, type JsonRpcId, type JsonRpcMessage, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { formatSseJson, formatSseMessage, isEventStreamType, type SseEvent, SseParser } from '../protocol/sse.js';
import { jsonOf, keepJsonText, writableJson } from '../protocol/json-text.js';
import { CallStream, type StreamRefusal } from './call-stream.js';
import type { CallContext } from './context.js';
import type { AnswerHeaders, Misread, Outcome, RelayRead, RelayRefusal } from './outcome.js';
import { topLevelMemberValue } from '../protocol/json-member.js';
import { RelayBody } from './relay-body.js';
import { answerIn, type WholeSse } from '../protocol/whole-sse.js';
import { namesAMemberTwice } from '../protocol/duplicate-members.js';

/** The final answer as the client would get it: the response, and the refusal it renders, if it is one. */
export interface FinalAnswer {
  response: JsonRpcResponse;
  refusal?: Refusal;
  /** A failure reported by an adapter's stream (also rendered in `response`). */
  failure?: GatewayError;
}

/**
 * What comes back from `onFinal`: nothing (the answer goes as it is), another response, entries to add to
 * the result's `_meta` (the audit's run id), or a refusal that replaces the answer (for instance when a
 * record that had to be written before it could not be). `meta` is given only for an answer with a result.
 * A refusal names the `stage` that made it, which the request line and the span say: without one it
 * keeps the stage of the refusal it replaces, and a replaced answer's refusal would be taken for the
 * upstream's (the output check's invalid_output was logged as refused by stage `upstream`).
 */
export type FinalVerdict = void | undefined | { response: JsonRpcResponse } | { meta: Record<string, unknown> } | { refusal: Refusal; stage?: RefusingStage };

/**
 * Who refuses through a final answer: a stage's name (stage.ts StageName; not imported, since stage.ts
 * depends on events.ts, which depends on this module), or `audit` (an answer withheld for want of its record).
 */
export type RefusingStage = string;

export type OnFinal = (answer: FinalAnswer) => Promise<FinalVerdict>;

export interface InterceptOptions {
  /**
   * Only answers whose JSON text holds this string matter to `onFinal`: relayed bytes without it pass on
   * unparsed, a refusal is not shown, and neither is a relayed stream's failure. Answers Gatehouse already
   * holds as objects are all shown.
   */
  marker?: string;
}

/**
 * Whether `answer`, the final answer of `outcome`, is a refusal a stage already published (refuseAt, the
 * upstream stage, an inner stage's verdict: the output check's, a withheld answer's). A stage that puts
 * another refusal in its place (an audit or idempotency record not kept) then does not publish it again:
 * one refused call is one refusal in the metrics and one refusal event on its span, the one that refused
 * it; the request line still says what the client got. A refused outcome without a stage is a failure
 * found after the stages (final-answer's own), which nothing published yet.
 */
export function refusalAlreadyPublished(outcome: Outcome, answer: FinalAnswer): boolean {
  return answer.refusal !== undefined && (outcome.kind !== 'refused' || outcome.stage !== undefined);
}

/** The Outcome with its final answer passed through `onFinal` before it reaches the client. */
export function interceptFinal(outcome: Outcome, ctx: CallContext, onFinal: OnFinal, options: InterceptOptions = {}): Promise<Outcome> | Outcome {
  const id = ctx.kind === 'request' ? (ctx.message as { id: JsonRpcId }).id : null;
  const marker = options.marker;
  switch (outcome.kind) {
    case 'refused': {
      if (marker !== undefined) return outcome;
      const refusal = outcome.refusal;
      const answer: FinalAnswer = { response: toWire(refusalOfTool(refusal, ctx), { era: ctx.era, id, callId: ctx.callId }).body, refusal };
      return onFinal(answer).then((v) => (v === undefined ? outcome : replaced(outcome, v, answer)));
    }
    case 'json': {
      const message = outcome.message;
      if (!isResponse(message)) return outcome;
      // Decided before onFinal records it: an answer the edge cannot write is the upstream's failure, for
      // every stage and for the client alike. The text is kept, so the edge does not make it again.
      // So is one without exactly one of result and error, which the client may read otherwise than the audit.
      const text = writableJson(message);
      if (text === undefined || !carriesOneOutcome(message)) {
        const error = text === undefined ? tooDeep(ctx.route?.upstream) : misreadError('notOneOutcome', ctx.route?.upstream ?? 'upstream');
        return marker === undefined ? failedAnswer(error, onFinal, renderer(ctx, id)) : { kind: 'refused', refusal: { kind: 'failure', error } };
      }
      const answer: FinalAnswer = { response: message };
      return onFinal(answer).then((v) => (v === undefined ? outcome : replaced(outcome, v, answer, text)));
    }
    case 'stream':
      return { ...outcome, stream: interceptStream(outcome.stream, ctx, onFinal) };
    case 'relay': {
      if (marker !== undefined) {
        // The usual answer (JSON, or a short stream) is at hand whole and without the marker: it goes on as
        // it is, not even read.
        const whole = outcome.read?.body === outcome.body ? undefined : outcome.body.peekWhole();
        if (whole !== undefined && whole.indexOf(marker) < 0) return outcome;
      }
      if (!isEventStreamType(outcome.headers['content-type'] ?? '')) {
        return interceptRelayedJson(outcome, ctx, onFinal, marker);
      }
      const render = renderer(ctx, outcome.requestId);
      const reading = outcome.body.peekWholeSse();
      if (reading !== undefined) {
        const held = interceptWholeSse(outcome, reading, onFinal, render, marker);
        if (held !== undefined) return held;
      }
      // Events before the answer pass as they come; the answer may change length, so no declared length.
      const { 'content-length': _length, ...headers } = outcome.headers;
      const { maxMessageBytes } = outcome.body;
      // Shared with the stages further out and the edge: a refusal written in place of the answer event is
      // known only once that event has streamed through.
      const refused = outcome.refused ?? { value: undefined };
      const intercepted = interceptRelayedSse(outcome.body.readable(), outcome.requestId, onFinal, render, outcome.failureOf, outcome.upstream, marker, maxMessageBytes, refused);
      return { ...outcome, headers, body: RelayBody.fromReadable(intercepted, undefined, maxMessageBytes), refused };
    }
    case 'empty':
      return outcome;
  }
}

/** Writes a refusal as the response to request `id`, in the call's era. */
function renderer(ctx: CallContext, id: JsonRpcId | null): (refusal: Refusal) => JsonRpcResponse {
  return (refusal) => toWire(refusalOfTool(refusal, ctx), { era: ctx.era, id, callId: ctx.callId }).body;
}

function replaced(outcome: Outcome, verdict: Exclude<FinalVerdict, void | undefined>, answer: FinalAnswer, text?: string): Outcome {
  if ('refusal' in verdict) {
    const stage = verdict.stage ?? (outcome.kind === 'refused' ? outcome.stage : undefined);
    return { kind: 'refused', refusal: verdict.refusal, ...(stage !== undefined ? { stage } : {}) };
  }
  const response = responseOf(verdict, answer.response, text);
  if (outcome.kind === 'json') return { ...outcome, message: response };
  return { kind: 'json', status: 200, message: response };
}

/**
 * The response a `response` or `meta` verdict stands for. Given the answer's JSON text (`text`), the new
 * response's text is made from it, the entries inserted, and kept for the edge (protocol/json-text.ts).
 */
function responseOf(verdict: { response: JsonRpcResponse } | { meta: Record<string, unknown> }, answered: JsonRpcResponse, text?: string): JsonRpcResponse {
  if ('response' in verdict) return verdict.response;
  const result = answered.result;
  if (result === undefined) return answered;
  const existing = result._meta !== null && typeof result._meta === 'object' ? (result._meta as Record<string, unknown>) : {};
  const response = { ...answered, result: { ...result, _meta: { ...existing, ...verdict.meta } } };
  const inserted = text === undefined ? undefined : withMetaInserted(text, answered, verdict.meta);
  if (inserted !== undefined) keepJsonText(response, inserted);
  return response;
}

function isResponse(m: JsonRpcMessage): m is JsonRpcResponse {
  return !('method' in m) && 'id' in m;
}

/** A stream that passes every item on and holds the final one until `onFinal` is done with it. */
function interceptStream(source: CallStream, ctx: CallContext, onFinal: OnFinal): CallStream {
  const out = new CallStream({ requestId: source.requestId, mode: source.mode, acceptsSse: true });
  out.onClose(() => source.cancel());
  void (async () => {
    let answered = false;
    try {
      for await (const item of source.read()) {
        if ('comment' in item) out.comment();
        else if ('message' in item && !item.final) out.push(item.message);
        else {
          answered = true;
          // An answer the edge could not write (nested too deeply) is the upstream's failure before
          // onFinal records it, as in the JSON case above.
          const message = 'message' in item ? (item.message as JsonRpcResponse) : undefined;
          const text = message !== undefined ? writableJson(message) : undefined;
          const failure =
            'failure' in item ? item.failure : text === undefined ? tooDeep(ctx.route?.upstream) : !carriesOneOutcome(message!) ? misreadError('notOneOutcome', ctx.route?.upstream ?? 'upstream') : undefined;
          // A refusal an inner stage put in place of the answer: shown as one, and passed on as one.
          const prior = failure === undefined ? source.refused : undefined;
          const answer: FinalAnswer =
            failure !== undefined
              ? { response: toWire({ kind: 'failure', error: failure }, { era: ctx.era, id: source.requestId, callId: ctx.callId }).body, failure }
              : prior !== undefined
                ? { response: message!, refusal: prior.refusal }
                : { response: message! };
          const verdict = await onFinal(answer);
          if (verdict !== undefined && 'refusal' in verdict) {
            if (verdict.refusal.kind === 'failure') {
              // A failure a stage put in place of the answer (the audit or idempotency record not kept) is
              // that stage's refusal: the edge records it with its stage (refusalWritten says why).
              if (verdict.stage !== undefined) out.refused = { refusal: verdict.refusal, stage: verdict.stage };
              out.fail(verdict.refusal.error);
            } else out.refuse(toWire(refusalOfTool(verdict.refusal, ctx), { era: ctx.era, id: source.requestId, callId: ctx.callId }).body, { refusal: verdict.refusal, stage: verdict.stage ?? prior?.stage });
          } else if (verdict !== undefined) out.finish(responseOf(verdict, answer.response, text));
          else if (failure !== undefined) out.fail(failure);
          else if (prior !== undefined) out.refuse(message!, prior);
          else out.finish(message!);
        }
      }
      // Ended without an answer: its reader left (the client hung up, so the edge cancelled it), or the
      // producer ended it empty (a legacy client's notifications/cancelled, answered with nothing). The call
      // still ends here, and onFinal hears of it: the audit records it (aborted, when its client left) and
      // the stages holding something for it (an idempotency key's lease) let go. Nothing is written.
      if (!answered) {
        const ended = new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', 'The call ended without an answer', ctx.route?.upstream);
        await onFinal({ response: toWire({ kind: 'failure', error: ended }, { era: ctx.era, id: source.requestId, callId: ctx.callId }).body, failure: ended });
      }
    } catch (err) {
      // A check of the answer that throws (none should) fails this call, not the process: the promise here
      // has nobody waiting on it, and an unhandled rejection ends Node.
      // No logger reaches here: the error is told as a process warning.
      const warn = { error: (msg: string) => process.emitWarning(`${msg}: ${(err as Error)?.stack ?? String(err)}`, 'GatehouseAnswerCheckError') };
      out.fail(asGatewayError(err, 'GW_ERR_UPSTREAM_BAD_RESPONSE', warn, { callId: ctx.callId }));
    } finally {
      out.end();
    }
  })();
  return out;
}

/**
 * A relayed JSON body is one message: read it whole, then pass the same bytes on (with the upstream's
 * status and headers) unless `onFinal` replaces the answer, which then gets the status it deserves. Entries
 * for the result's `_meta` are inserted into the bytes where that is safe, so the answer is not written
 * again for a run id.
 */
async function interceptRelayedJson(outcome: Extract<Outcome, { kind: 'relay' }>, ctx: CallContext, onFinal: OnFinal, marker?: string): Promise<Outcome> {
  // Several stages may look at one answer (output check, idempotency, breaker, audit): read and parsed once.
  let read = outcome.read !== undefined && outcome.read.body === outcome.body ? outcome.read : undefined;
  if (read === undefined) {
    let bytes: Buffer;
    try {
      bytes = await outcome.body.collect();
    } catch (err) {
      const error = outcome.failureOf(err);
      return marker === undefined ? failedAnswer(error, onFinal, renderer(ctx, outcome.requestId)) : { kind: 'refused', refusal: { kind: 'failure', error } };
    }
    if (marker !== undefined && bytes.indexOf(marker) < 0) return { ...outcome, body: RelayBody.of(bytes) };
    const text = bytes.toString('utf8');
    const response = answerIn(text, outcome.requestId, false) as JsonRpcResponse | undefined;
    // An answer the client may read otherwise than the checks here is no answer (see misread()).
    const wrong = response === undefined ? undefined : misread(text, response);
    read = { body: RelayBody.of(bytes), text, response: wrong === undefined ? response : undefined, ...(wrong !== undefined ? { misread: wrong } : {}) };
  }
  const { text, response } = read;
  if (response === undefined && marker === undefined) return notAnAnswer(outcome, read, onFinal, renderer(ctx, outcome.requestId));
  const verdict = response === undefined ? undefined : await onFinal({ response });
  if (verdict === undefined) return { ...outcome, body: read.body, read };
  if ('refusal' in verdict) return { kind: 'refused', refusal: verdict.refusal, ...(verdict.stage !== undefined ? { stage: verdict.stage } : {}) };
  if ('meta' in verdict) {
    const spliced = withMetaInserted(text, response!, verdict.meta, outcome.headers);
    if (spliced !== undefined) return splicedRelay(outcome, spliced);
  }
  const message = responseOf(verdict, response!);
  if ('meta' in verdict && writableJson(message) === undefined) {
    // Too deep to write again (and so past what onFinal was told): the entries go into the upstream's
    // bytes whatever their size, so the client gets the answer that was recorded.
    const spliced = withMetaInserted(text, response!, verdict.meta, outcome.headers, Infinity);
    return spliced !== undefined ? splicedRelay(outcome, spliced) : { kind: 'refused', refusal: { kind: 'failure', error: tooDeep(outcome.upstream) } };
  }
  return { kind: 'json', status: outcome.status, message };
}

/** The relayed answer with its bytes replaced by `text` (entries inserted into them). */
function splicedRelay(outcome: Extract<Outcome, { kind: 'relay' }>, text: string): Outcome {
  const body = Buffer.from(text, 'utf8');
  return { ...outcome, headers: { ...outcome.headers, 'content-length': String(body.length) }, body: RelayBody.of(body) };
}

/** Tells `onFinal` the upstream failed (it records, counts); the refusal it answers with instead, if any. */
async function toldFailure(error: GatewayError, onFinal: OnFinal, render: (refusal: Refusal) => JsonRpcResponse): Promise<Refusal | undefined> {
  const verdict = await onFinal({ response: render({ kind: 'failure', error }), failure: error });
  return verdict !== undefined && 'refusal' in verdict ? verdict.refusal : undefined;
}

/** A failure of the upstream's answer, told to `onFinal` before it goes to the client. */
async function failedAnswer(error: GatewayError, onFinal: OnFinal, render: (refusal: Refusal) => JsonRpcResponse): Promise<Outcome> {
  return { kind: 'refused', refusal: (await toldFailure(error, onFinal, render)) ?? { kind: 'failure', error } };
}

/**
 * A relayed JSON body that is not the response to the request: not JSON, cut short, a response to another
 * id, not a response at all. The upstream failed this call, and `onFinal` is told so: an answer every
 * subscriber must see (the audit, the breaker) is never passed on unseen. A 2xx body is replaced by the
 * failure, with the request's id, so the client gets a structured error instead of bytes it cannot use.
 * Another status goes on as it came once `onFinal` is done (a 404 for a session the upstream no longer
 * knows must still reach a legacy client as a 404, whatever its body).
 */
async function notAnAnswer(outcome: Extract<Outcome, { kind: 'relay' }>, read: RelayRead, onFinal: OnFinal, render: (refusal: Refusal) => JsonRpcResponse): Promise<Outcome> {
  const error = read.misread !== undefined ? misreadError(read.misread, outcome.upstream) : new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${outcome.upstream}" answered with HTTP ${outcome.status} and a body that is not a JSON-RPC response to this request`, outcome.upstream);
  if (outcome.status >= 200 && outcome.status < 300) return failedAnswer(error, onFinal, render);
  const refusal = await toldFailure(error, onFinal, render);
  return refusal !== undefined ? { kind: 'refused', refusal } : { ...outcome, body: read.body, read };
}

/**
 * Why the response to the request, `text` parsed as `response`, cannot stand as its answer; undefined when
 * it can. Its JSON names a member twice in one object (`"isError":true,"isError":false`): every check here
 * reads the last (JSON.parse), some clients the first. Or it carries both `result` and `error`, or neither
 * (JSON-RPC 2.0 §5: exactly one): the audit reads the error, a client may read the result, or take an answer
 * with neither for done. Either way the record could say `ok` of what the client took for an error, or the
 * reverse: the upstream failed the call, and its bytes do not go on. The cheap look first.
 */
function misread(text: string, response: JsonRpcResponse): Misread | undefined {
  if (!carriesOneOutcome(response)) return 'notOneOutcome';
  return namesAMemberTwice(text, response) ? 'twice' : undefined;
}

function misreadError(why: Misread, upstream: string): GatewayError {
  const what = why === 'twice' ? 'names a member twice in one object' : 'does not carry exactly one of result and error (JSON-RPC 2.0 §5)';
  return new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${upstream}" answered with a response that ${what}, which clients may read otherwise than Gatehouse does`, upstream);
}

/**
 * Bodies up to this size get `_meta` inserted. Finding `result` walks the text in JavaScript, escape by
 * escape: for a small answer that is cheaper than serialising it again, but a megabyte of text full of
 * escaped quotes took 13 ms to walk against 3 ms for JSON.stringify (1 December, this VM).
 */
const INSERT_MAX_CHARS = 64 * 1024;

/**
 * `text` with `meta` as the result's `_meta`, inserted as its first member, or as the first entries of the
 * result's own `_meta`; undefined where inserting is not safe (the result or its `_meta` is not an object,
 * that `_meta` already names one of the entries, either cannot be found for certain, the body is encoded)
 * or not worth it (a body past `maxChars`), and the answer is then written again instead.
 */
export function withMetaInserted(text: string, response: JsonRpcResponse, meta: Record<string, unknown>, headers: AnswerHeaders = {}, maxChars = INSERT_MAX_CHARS): string | undefined {
  if (text.length > maxChars) return undefined;
  const result = response.result as Record<string, unknown> | undefined;
  if (result === null || typeof result !== 'object' || Array.isArray(result)) return undefined;
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return undefined;
  const at = topLevelMemberValue(text, 'result');
  if (at < 0 || text[at] !== '{') return undefined;
  const entries = JSON.stringify(meta).slice(1, -1);
  if (entries === '') return text;
  if (!Object.hasOwn(result, '_meta')) return `${text.slice(0, at + 1)}"_meta":{${entries}}${Object.keys(result).length > 0 ? ',' : ''}${text.slice(at + 1)}`;
  // Merged: the result's entries and these, none named twice (an entry of the upstream's own with one of
  // these names would be read first by some parsers and last by others).
  const own = result._meta as Record<string, unknown> | null;
  if (own === null || typeof own !== 'object' || Array.isArray(own)) return undefined;
  for (const key in meta) if (Object.hasOwn(own, key)) return undefined;
  const metaAt = topLevelMemberValue(text, '_meta', at);
  if (metaAt < 0 || text[metaAt] !== '{') return undefined;
  return `${text.slice(0, metaAt + 1)}${entries}${Object.keys(own).length > 0 ? ',' : ''}${text.slice(metaAt + 1)}`;
}

/**
 * A stream that had all come, and ended, before it was answered (a short answer's usual case), with the
 * response to the request in it: `onFinal` sees that response, and the bytes go on as one body, the same or
 * with that event written again, without the Transform and Readable of the streaming path (which doubled
 * the CPU of such a call; bench/README.md §SSE answers). Undefined, for the streaming path to handle, when
 * the stream does not end on a whole event or holds no response to the request.
 */
function interceptWholeSse(outcome: Extract<Outcome, { kind: 'relay' }>, reading: WholeSse, onFinal: OnFinal, render: (refusal: Refusal) => JsonRpcResponse, marker: string | undefined): Promise<Outcome> | undefined {
  if (!reading.complete) return undefined;
  const events = reading.events;
  const at = reading.answerAt(outcome.requestId, false, marker);
  if (at < 0) return undefined;
  const response = reading.message(at) as JsonRpcResponse;
  const wrong = !carriesOneOutcome(response) ? 'notOneOutcome' : reading.namesAMemberTwice(at) ? 'twice' : undefined;
  if (wrong !== undefined) {
    // Not the business of a stage that looks for its marker: the others refuse it (as the JSON case above).
    if (marker !== undefined) return Promise.resolve(outcome);
    outcome.body.dump();
    return failedAnswer(misreadError(wrong, outcome.upstream), onFinal, render);
  }
  // A refusal an inner stage wrote in place of the answer: shown as one, and passed on as one.
  const prior = outcome.refused?.value;
  return onFinal(prior !== undefined ? { response, refusal: prior.refusal } : { response }).then((verdict) => {
    if (verdict === undefined) return outcome;
    const { raw: replaced, message: written } = answerEvent(events[at]!, response, verdict, render);
    let text = '';
    for (let i = 0; i < events.length; i++) text += i === at ? replaced : events[i]!.raw;
    outcome.body.dump();
    const { 'content-length': _length, ...headers } = outcome.headers;
    const refused = refusalWritten(verdict, prior);
    // The edge reads these events too: it gets them split, the answer's JSON at hand.
    return { ...outcome, headers, body: RelayBody.of(Buffer.from(text, 'utf8'), reading.replacing(at, replaced, written)), ...(refused !== undefined ? { refused: { value: refused } } : {}) };
  });
}

/**
 * The refusal a verdict writes in place of an answer event, with its stage (else the stage of the refusal
 * it replaces); a verdict that is no refusal keeps the refusal the event already was. A failure is written
 * as an error event, which the edge reads as one: it needs no record here.
 */
function refusalWritten(verdict: Exclude<FinalVerdict, void | undefined>, prior: StreamRefusal | undefined): StreamRefusal | undefined {
  if (!('refusal' in verdict)) return prior;
  // A failure a stage put in place of the answer (GW_ERR_STATE_UNAVAILABLE: the audit or idempotency
  // record could not be kept) is that stage's, as a JSON answer replaced so is (replaced()); one without a
  // stage is the upstream's, which the edge records from the failure itself.
  if (verdict.refusal.kind === 'failure') return verdict.stage !== undefined ? { refusal: verdict.refusal, stage: verdict.stage } : undefined;
  return { refusal: verdict.refusal, stage: verdict.stage ?? prior?.stage };
}

/**
 * The answer event as the client gets it after `verdict`. Entries for the result's `_meta` (the run id) go
 * into the upstream's own event, inserted into its one data line where that is safe (withMetaInserted):
 * its id, its other fields and its JSON's spacing stay as they came. Otherwise (a refusal, a replaced
 * response, data over several lines, a result that has a `_meta`) the event is written again, under its
 * event id, so a client that resumes after it names the event it last saw.
 */
function answerEvent(ev: SseEvent, response: JsonRpcResponse, verdict: Exclude<FinalVerdict, void | undefined>, render: (refusal: Refusal) => JsonRpcResponse): { raw: string; message: JsonRpcResponse } {
  const message = 'refusal' in verdict ? render(verdict.refusal) : responseOf(verdict, response);
  const data = ev.data;
  if ('meta' in verdict && data !== undefined && !data.includes('\n')) {
    const inserted = withMetaInserted(data, response, verdict.meta);
    const at = inserted === undefined ? -1 : dataValueAt(ev.raw, data);
    if (at >= 0) return { raw: `${ev.raw.slice(0, at)}${inserted}${ev.raw.slice(at + data.length)}`, message };
  }
  const text = jsonOf(message);
  if (text !== undefined) return { raw: formatSseJson(text, ev.id), message };
  // Too deep to write again: the entries go into the upstream's own JSON whatever its size, on one data
  // line (a line break between data lines can only be JSON's white space, so a space stands for it).
  const inserted = 'meta' in verdict && data !== undefined ? withMetaInserted(data.replace(/\n/g, ' '), response, verdict.meta, {}, Infinity) : undefined;
  if (inserted !== undefined) return { raw: formatSseJson(inserted, ev.id), message };
  return { raw: formatSseMessage(render({ kind: 'failure', error: tooDeep() }), ev.id), message };
}

/** Where the value of an event's only `data:` line starts in its raw text, if that value is `data`; else -1. */
function dataValueAt(raw: string, data: string): number {
  for (let line = 0; line < raw.length; ) {
    if (raw.startsWith('data:', line)) {
      const value = raw[line + 5] === ' ' ? line + 6 : line + 5;
      return raw.startsWith(data, value) ? value : -1;
    }
    const lf = raw.indexOf('\n', line);
    const cr = raw.indexOf('\r', line);
    const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
    if (end === -1) return -1;
    line = raw[end] === '\r' && raw[end + 1] === '\n' ? end + 2 : end + 1;
  }
  return -1;
}

/**
 * An SSE body event by event, the event that answers `requestId` held until `onFinal` is done with it. A
 * stream that breaks, or ends, before that event is a failure `onFinal` hears of too (so the call is
 * audited, and a breaker counts it); the failure then goes on as the stream's error, which the edge
 * answers with an error event for the request.
 */
function interceptRelayedSse(body: Readable, requestId: JsonRpcId | null, onFinal: OnFinal, render: (refusal: Refusal) => JsonRpcResponse, failureOf: (err: unknown) => GatewayError, upstream: string, marker: string | undefined, maxEventChars: number, refused: RelayRefusal): Readable {
  const parser = new SseParser(maxEventChars);
  let answered = false;
  /** The answer came misread (see misread()): held back, and the stream's end is this failure. */
  let broken: GatewayError | undefined;
  /** The stream's end was decided by a failure (its error, or its end without the response): told once. */
  let told = false;
  /**
   * Tells `onFinal` of the failure, then ends the stream as the other paths do: with the refusal it answers
   * with (a record that could not be kept is GW_ERR_STATE_UNAVAILABLE, not the upstream's failure), as an
   * error for a failure and as the request's answer event for another kind; else with the failure itself.
   */
  const failed = (error: GatewayError, end: (err?: Error) => void): void => {
    told = true;
    toldFailure(error, onFinal, render).then(
      (refusal) => {
        if (refusal === undefined) return end(error);
        if (refusal.kind === 'failure') return end(refusal.error);
        transform.push(formatSseMessage(render(refusal)));
        end();
      },
      () => end(error),
    );
  };
  const transform = new Transform({
    transform(chunk: Buffer, _enc, done) {
      void (async () => {
        for (const ev of parser.push(chunk)) {
          const response = !answered && ev.data !== undefined && ev.data.includes('"id"') && (marker === undefined || ev.data.includes(marker)) ? (answerIn(ev.data, requestId, false) as JsonRpcResponse | undefined) : undefined;
          if (response === undefined) {
            this.push(ev.raw);
            continue;
          }
          const wrong = misread(ev.data!, response);
          if (wrong !== undefined) {
            // A stage looking for its marker passes it on for the others to refuse (see interceptWholeSse).
            if (marker !== undefined) {
              this.push(ev.raw);
              continue;
            }
            broken ??= misreadError(wrong, upstream);
            continue;
          }
          answered = true;
          const prior = refused.value;
          const verdict = await onFinal(prior !== undefined ? { response, refusal: prior.refusal } : { response });
          if (verdict !== undefined) refused.value = refusalWritten(verdict, prior);
          this.push(verdict === undefined ? ev.raw : answerEvent(ev, response, verdict, render).raw);
        }
      })().then(() => done(), done);
    },
    flush(done) {
      if (answered || told || requestId === null || marker !== undefined) return done();
      failed(broken ?? new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${upstream}" ended the stream without answering the request`, upstream), done);
    },
  });
  body.on('error', (err) => {
    if (answered || marker !== undefined) transform.destroy(err);
    else failed(broken ?? failureOf(err), (e) => (e !== undefined ? transform.destroy(e) : transform.end()));
  });
  return body.pipe(transform);
}
