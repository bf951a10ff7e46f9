// An SSE body that has all come, read once. A short answer's stream (its headers, one event and its end in
// one read) is looked at by up to three steps on its way: the legacy pass-through (does it hold the answer,
// or must the stream be resumed?), the audit (which event is the answer, to record it and add its run id)
// and the edge (what did the answer say, for the metrics and the log). Each used to split the events and
// parse their JSON again; this reading is kept with the body (RelayBody.peekWholeSse), so the events are
// split once and each event's JSON is parsed at most once, whoever asks first.

import { namesAMemberTwice } from './duplicate-members.js';
import type { JsonRpcId } from './jsonrpc.js';
import { SseParser, type SseEvent } from './sse.js';

/** Not parsed yet (undefined is a parse's answer for an event without data, or whose data is not JSON). */
const UNREAD = Symbol('unread');

/** A JSON-RPC response as the steps read it: its id, and a result or an error. */
export interface SseResponse {
  id?: unknown;
  method?: unknown;
  result?: { isError?: unknown; [key: string]: unknown };
  error?: unknown;
}

export class WholeSse {
  private readonly parsed: unknown[];
  /** Per event, once asked (a governed call's answer only): whether its JSON names a member twice. */
  private readonly twice: Array<boolean | undefined>;

  private constructor(
    /** The events, in order. */
    readonly events: readonly SseEvent[],
    /** False when the bytes end inside an event (cut short): the steps then take the stream path. */
    readonly complete: boolean,
  ) {
    this.parsed = new Array<unknown>(events.length).fill(UNREAD);
    this.twice = new Array<boolean | undefined>(events.length);
  }

  static read(bytes: Buffer | string): WholeSse {
    // The body is all here already: no event of it can grow, so no bound applies.
    const parser = new SseParser(Infinity);
    const events = parser.push(bytes);
    return new WholeSse(events, parser.remainder === '');
  }

  /**
   * The same events with the one at `at` replaced by `raw`, whose JSON is `message` (the audit's answer with
   * its run id): the edge reads the new body without splitting or parsing it again.
   */
  replacing(at: number, raw: string, message: unknown): WholeSse {
    const [event] = new SseParser(Infinity).push(raw);
    const events = this.events.slice();
    events[at] = event!;
    const next = new WholeSse(events, this.complete);
    for (let i = 0; i < events.length; i++) next.parsed[i] = i === at ? message : this.parsed[i];
    for (let i = 0; i < events.length; i++) next.twice[i] = i === at ? false : this.twice[i];
    return next;
  }

  /**
   * Whether the event's JSON names a member twice (protocol/duplicate-members.ts), asked once per event:
   * every stage that looks at a governed call's answer asks. False for an event that is not JSON.
   */
  namesAMemberTwice(at: number): boolean {
    let twice = this.twice[at];
    if (twice === undefined) {
      const data = this.events[at]!.data;
      twice = data !== undefined && namesAMemberTwice(data, this.message(at));
      this.twice[at] = twice;
    }
    return twice;
  }

  /** The event's data as JSON, parsed the first time it is asked for; undefined without data or when not JSON. */
  message(at: number): unknown {
    let value = this.parsed[at];
    if (value !== UNREAD) return value;
    const data = this.events[at]!.data;
    value = undefined;
    // Cheap pre-check: notifications carry no "id" and are most of a long stream; only responses are asked for.
    if (data !== undefined && data.includes('"id"')) {
      try {
        value = JSON.parse(data);
      } catch {
        // not JSON: never the answer
      }
    }
    this.parsed[at] = value;
    return value;
  }

  /**
   * The first event that answers request `id`: a message with that id and no method. `strict` also asks
   * for a result or an error (what the edge and the resuming reader count as an answer; the audit takes
   * any response with the id, so a malformed one is still recorded). `marker`: only events whose data
   * holds it are parsed. -1 when none does.
   */
  answerAt(id: JsonRpcId | null, strict: boolean, marker?: string): number {
    for (let i = 0; i < this.events.length; i++) {
      if (marker !== undefined && this.events[i]!.data?.includes(marker) !== true) continue;
      if (answers(this.message(i), id, strict)) return i;
    }
    return -1;
  }
}

/**
 * Whether a parsed message is the response to request `id`: that id, and no method (a server's request may
 * reuse a client's id). `strict` also asks for a result or an error. The one rule of the steps that look
 * for a request's answer among a stream's events.
 */
export function answers(message: unknown, id: JsonRpcId | null, strict: boolean): message is SseResponse {
  if (message === null || typeof message !== 'object') return false;
  const m = message as SseResponse;
  if (m.id !== id || m.method !== undefined) return false;
  return !strict || m.result !== undefined || m.error !== undefined;
}

/** `text` parsed, if it is the response to request `id` (see `answers`); undefined otherwise, or when not JSON. */
export function answerIn(text: string, id: JsonRpcId | null, strict: boolean): SseResponse | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  return answers(message, id, strict) ? message : undefined;
}
