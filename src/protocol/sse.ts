// Incremental Server-Sent Events framing (WHATWG HTML §9.2): splits a byte stream into complete events,
// keeping each event's raw text so a relay can forward exactly what it received, event by event.

import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  /** The event's text as received, terminator included. */
  raw: string;
  event?: string;
  /** The joined `data:` lines; undefined for comment-only or id-only events. */
  data?: string;
  id?: string;
  retry?: number;
}

/**
 * A blank line: a line terminator (CRLF, LF or CR) right after another (WHATWG HTML §9.2.5). The terminators
 * may differ (`\n\r\n`, `\r\n\r`, `\r\r\n`); a CR followed by LF is one terminator, CRLF, never a line
 * end and a blank line. A blank line that ends in a CR whose LF has not come yet ends the event all the same;
 * that LF, when it comes, is passed on as bytes of their own (push).
 */
const TERMINATOR = /(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r)/;

/**
 * The most an event may hold before it ends: an upstream that never ends one would otherwise grow the
 * gateway's memory without bound. Far above any answer a client would take in one message.
 */
export const MAX_EVENT_CHARS = 16 * 1024 * 1024;

/**
 * Whether a Content-Type names an event stream. A media type's type and subtype are case-insensitive, and
 * parameters follow a `;` after optional white space (RFC 9110 §8.3.1, §5.6.6): `Text/Event-Stream;
 * charset=UTF-8` is one, `text/event-streams` is not. It runs on every answer (most are JSON, refused at
 * their first character), so it compares in place: no copy, no lower-cased string.
 */
export function isEventStreamType(contentType: string): boolean {
  let at = 0;
  while (at < contentType.length && isWhiteSpace(contentType.charCodeAt(at))) at++;
  if (contentType.length - at < EVENT_STREAM.length) return false;
  for (let k = 0; k < EVENT_STREAM.length; k++) {
    let c = contentType.charCodeAt(at + k);
    if (c >= 0x41 && c <= 0x5a) c |= 0x20;
    if (c !== EVENT_STREAM.charCodeAt(k)) return false;
  }
  // The whole subtype, not a prefix of a longer one: then the end, parameters, or white space before either.
  for (let i = at + EVENT_STREAM.length; i < contentType.length; i++) {
    const c = contentType.charCodeAt(i);
    if (c === 0x3b) return true;
    if (!isWhiteSpace(c)) return false;
  }
  return true;
}

const EVENT_STREAM = 'text/event-stream';

function isWhiteSpace(c: number): boolean {
  return c === 0x20 || c === 0x09;
}

/**
 * What a relay that passes a stream on only up to its response writes for an event it keeps (`isResponse`:
 * the event is the response, and the relay stops after it). The one rule of both such relays, the legacy
 * resuming reader (upstream/resumable-sse.ts readSseText) and the modern scoped stream
 * (upstream/modern-answer-stream.ts scopedEvents), which each keep their own loop: a shared generator or
 * iterator between them would cost a step (a promise or a result object) on every event of every stream.
 * An event whose blank line ended in a CR may have its LF still to come (SseParser passes it on as bytes of
 * its own), and a parser that waits after a CR for a possible LF (eventsource-parser, in the v1 SDK) never
 * dispatches the event a relay stops after: the relay writes that LF itself. Per event, one comparison; a
 * new string only for a response that ended in a CR.
 */
export function relayedUpToResponse(raw: string, isResponse: boolean): string {
  return isResponse && raw.charCodeAt(raw.length - 1) === 0x0d ? raw + '\n' : raw;
}

/** An event grew past its bound without ending: the peer that sent it failed (upstream/failures.ts says whose). */
export class SseEventTooLarge extends Error {
  constructor(readonly maxChars: number) {
    super(`sent an SSE event that grew past ${maxChars} characters without ending`);
    this.name = 'SseEventTooLarge';
  }
}

export class SseParser {
  private readonly decoder = new StringDecoder('utf8');
  /** Text of an event not complete yet, in the pieces it came in: joined once, when it completes. */
  private held: string[] = [];
  private heldLength = 0;
  /** The last three characters held, where a terminator split across two pieces begins. */
  private heldTail = '';
  /** Whether any text has come yet (see push: a leading byte order mark). */
  private begun = false;
  /** The last event ended on a CR at the very end of the text so far, whose LF may come next (see push). */
  private endedOnCr = false;

  constructor(private readonly maxEventChars = MAX_EVENT_CHARS) {}

  /** Feeds a chunk; returns the events it completed (possibly none). */
  push(chunk: Buffer | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    if (!this.begun) {
      // UTF-8 decode strips one leading byte order mark (WHATWG HTML §9.2.5); left on, it would be part of
      // the first field's name, and that field (an HTTP+SSE server's `event: endpoint`) would be lost.
      if (text === '') return [];
      this.begun = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const events: SseEvent[] = [];
    if (this.endedOnCr && text !== '') {
      this.endedOnCr = false;
      // The LF of the CRLF whose CR ended the last event: it belongs to no event, and goes on at once as
      // bytes of its own. Held as the start of the next event, it was lost when the stream then ended, and a
      // client that waits after a CR for a possible LF (eventsource-parser) never dispatched that event.
      if (text.charCodeAt(0) === 0x0a) {
        events.push({ raw: '\n' });
        text = text.slice(1);
      }
    }
    if (this.heldLength > 0) {
      // Only the new text (and the held tail) can complete what is held: searching all of it again for
      // every piece cost time by the square of a large event's length.
      const window = this.heldTail + text;
      const completes = TERMINATOR.test(window) || (this.held[0]!.charCodeAt(0) === 0x3a && window.includes('\n'));
      if (!completes) {
        this.hold(text);
        return events;
      }
      text = this.held.join('') + text;
      this.held = [];
      this.heldLength = 0;
      this.heldTail = '';
    }
    let pending = text;
    for (;;) {
      const m = TERMINATOR.exec(pending);
      // A comment line that starts an event (a keep-alive such as `:` or `: ping`) is passed on as soon as
      // it is whole, not when a blank line next comes: a keep-alive held back keeps nothing alive. Ended by
      // `\n` (or `\r\n`) only: after a lone `\r`, a `\n` may still be on its way.
      const newline = pending.charCodeAt(0) === 0x3a /* : */ ? pending.indexOf('\n') : -1;
      if (newline >= 0 && (m === null || m.index > newline)) {
        events.push({ raw: pending.slice(0, newline + 1) });
        pending = pending.slice(newline + 1);
        continue;
      }
      if (!m) break;
      const end = m.index + m[0].length;
      events.push(parseEvent(pending.slice(0, end), pending.slice(0, m.index)));
      pending = pending.slice(end);
    }
    if (pending !== '') this.hold(pending);
    else if (events.length > 0 && text !== '' && text.charCodeAt(text.length - 1) === 0x0d) this.endedOnCr = true;
    return events;
  }

  /** Bytes received after the last complete event (an event cut short by the stream's end). */
  get remainder(): string {
    return this.held.join('');
  }

  /** How many characters the incomplete event holds. */
  get remainderLength(): number {
    return this.heldLength;
  }

  private hold(text: string): void {
    if (text === '') return;
    this.held.push(text);
    this.heldLength += text.length;
    this.heldTail = (this.heldTail + text).slice(-3);
    if (this.heldLength > this.maxEventChars) {
      throw new SseEventTooLarge(this.maxEventChars);
    }
  }
}

function parseEvent(raw: string, body: string): SseEvent {
  const ev: SseEvent = { raw };
  let data: string[] | undefined;
  let type: string | undefined;
  for (const line of body.split(/\r\n|\n|\r/)) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        (data ??= []).push(value);
        break;
      case 'event':
        type = value;
        break;
      case 'id':
        if (!value.includes('\0')) ev.id = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) ev.retry = Number(value);
        break;
      default:
        break; // unknown fields are ignored, as the standard says
    }
  }
  // An empty type is no type: the event is a `message` (WHATWG HTML §9.2.5, dispatch), as every reader takes undefined.
  if (type !== undefined && type !== '') ev.event = type;
  if (data) ev.data = data.join('\n');
  return ev;
}

/** Formats one JSON-RPC message as an SSE `message` event on a single data line. */
export function formatSseMessage(message: unknown, id?: string): string {
  return formatSseJson(JSON.stringify(message), id);
}

/** formatSseMessage for a message already written as JSON text. */
export function formatSseJson(json: string, id?: string): string {
  return `${id !== undefined ? `id: ${id}\n` : ''}event: message\ndata: ${json}\n\n`;
}
