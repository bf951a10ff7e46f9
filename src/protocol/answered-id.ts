// Which request a JSON-RPC message answers, read in pieces from a message too large to keep. A stdio
// line past its upstream's `maxMessageBytes` is dropped, not parsed; if it was the answer to a request,
// that request should fail at once (the answer came, and was too large) instead of waiting for its time
// limit. So the dropped text goes through this as it streams past, and nothing of it is held but the few
// characters of a member name or an id.
//
// Only the top level of one JSON object is followed: strings (with their escapes) and nested values are
// stepped over. Its member names are read; the value of `id` is kept when it is a string or a number.
// The message answers that id when it has `result` or `error` and no `method` (a message with `method` is
// the peer's own request, whose id is the peer's and may equal one of ours). Text whose top level it
// cannot follow to the object's end answers nothing. Nested values are stepped over, not checked: a line
// broken inside its `result` still names the request it meant to answer, which it answered badly either way.

import type { JsonRpcId } from './jsonrpc.js';

/** Member names longer than this (as written, escapes included) are none of `id`, `method`, `result`, `error`. */
const MAX_NAME_CHARS = 64;
/** An id written longer than this is not kept: the answer is then matched to nothing, as before. */
const MAX_ID_CHARS = 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

type Expect = 'open' | 'name' | 'colon' | 'value' | 'next' | 'done';

export class AnsweredIdScanner {
  private expect: Expect = 'open';
  /** Nesting depth: 1 inside the top-level object. */
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** What the characters of the current string or number are kept for, if anything. */
  private keeping: 'name' | 'id' | undefined;
  private kept = '';
  private keptTooLong = false;
  /** The member whose value is being read (at depth 1). */
  private member = '';
  private idText: string | undefined;
  private hasMethod = false;
  private hasOutcome = false;
  private broken = false;

  /** Reads the next piece of the message. */
  feed(text: string): void {
    if (this.broken) return;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) {
          this.inString = false;
          if (this.keeping !== undefined) this.endKept();
          continue;
        }
        if (this.keeping !== undefined) this.keep(text[i]!);
        continue;
      }
      if (c === QUOTE) {
        this.inString = true;
        if (this.depth === 1) this.startString();
        continue;
      }
      if (this.depth > 1) {
        if (c === 0x7b || c === 0x5b) this.depth++;
        else if (c === 0x7d || c === 0x5d) {
          this.depth--;
          if (this.depth === 1) this.expect = 'next';
        }
        continue;
      }
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
        if (this.keeping === 'id') this.endKept();
        continue;
      }
      this.structural(c, text[i]!);
      if (this.broken) return;
    }
  }

  /** The id of the request the whole message answers, once it has all been fed; undefined if none. */
  answered(): JsonRpcId | undefined {
    if (this.keeping === 'id' && !this.inString) this.endKept();
    if (this.broken || this.expect !== 'done' || this.idText === undefined || this.hasMethod || !this.hasOutcome) return undefined;
    try {
      const id: unknown = JSON.parse(this.idText);
      return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : undefined;
    } catch {
      return undefined;
    }
  }

  /** A character outside strings, at the top level or the opening brace. */
  private structural(c: number, ch: string): void {
    if (this.depth === 0) {
      if (this.expect === 'open' && c === 0x7b) {
        this.depth = 1;
        this.expect = 'name';
      } else this.broken = true;
      return;
    }
    switch (this.expect) {
      case 'colon':
        if (c === 0x3a) this.expect = 'value';
        else this.broken = true;
        return;
      case 'value':
        if (c === 0x7b || c === 0x5b) {
          this.depth++;
          this.expect = 'next';
          return;
        }
        // A number, true, false or null: its characters run until a comma, a brace or white space.
        this.expect = 'next';
        if (this.member === 'id') this.startKept('id', ch);
        return;
      case 'next':
        if (this.keeping === 'id') {
          if (c !== 0x2c && c !== 0x7d) return this.keep(ch);
          this.endKept();
        }
        if (c === 0x2c) this.expect = 'name';
        else if (c === 0x7d) {
          this.depth = 0;
          this.expect = 'done';
        } else if (this.member === 'id' || !isLiteralChar(c)) this.broken = true;
        return;
      default:
        // A name expected and something else came, or text after the object's end.
        this.broken = true;
    }
  }

  private startString(): void {
    if (this.expect === 'name') {
      this.startKept('name', '"');
      this.expect = 'colon';
    } else if (this.expect === 'value') {
      this.expect = 'next';
      if (this.member === 'id') this.startKept('id', '"');
    } else this.broken = true;
  }

  private startKept(what: 'name' | 'id', first: string): void {
    this.keeping = what;
    this.kept = first;
    this.keptTooLong = false;
  }

  private keep(ch: string): void {
    if (this.kept.length >= (this.keeping === 'name' ? MAX_NAME_CHARS : MAX_ID_CHARS)) this.keptTooLong = true;
    else this.kept += ch;
  }

  private endKept(): void {
    const what = this.keeping;
    this.keeping = undefined;
    if (what === 'name') {
      this.member = this.keptTooLong ? '' : nameOf(this.kept + '"');
      if (this.member === 'method') this.hasMethod = true;
      else if (this.member === 'result' || this.member === 'error') this.hasOutcome = true;
      else if (this.member === 'id') this.idText = undefined;
    } else if (what === 'id') {
      // A string ends at its closing quote, which was not kept.
      const text = this.kept.startsWith('"') ? this.kept + '"' : this.kept;
      this.idText = this.keptTooLong ? undefined : text;
    }
    this.kept = '';
  }
}

/** A member name's text, its escapes read (`"\u0069d"` is `id`); '' when it is not valid JSON. */
function nameOf(json: string): string {
  if (!json.includes('\\')) return json.slice(1, -1);
  try {
    return JSON.parse(json) as string;
  } catch {
    return '';
  }
}

/** The characters of a number or of true, false and null. */
function isLiteralChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x45;
}
