// How a tool schema's patterns (`pattern`, `patternProperties`) become regular expressions: an upstream
// wrote them, a client's arguments are matched against them. A pattern such as `^(a+)+$` or
// `^(\w+\s?)*$` (common in the wild) backtracks exponentially on a client's `aaaa…!`: 40 characters held
// the gateway for hours, every other call waiting.
//
// The net is V8's: a regular expression that backtracks more than 50,000 times goes on in V8's
// linear-time engine, set below for the whole process when this module loads (where it can: no
// backreferences or lookarounds, and neither the `u` nor the `i` flag in this V8). Gatehouse's own
// expressions are linear by construction; this catches the ones it did not write. Ajv compiles patterns
// with `u`, which the fallback does not take, hence the engine below.
//
// So a pattern is compiled without `u` unless it needs it (`\p{…}`, `\P{…}`, `\u{…}`, or a character
// outside the Basic Multilingual Plane written in it). For a pattern that does not, the one difference is
// how a character outside that plane in the *text* counts: as two for `.` and negated classes, not one.
// Lengths (`minLength`, `maxLength`) are counted by Ajv apart from patterns, in code points, as before.
// A pattern that needs `u`, or uses a backreference or lookaround, has no such net.

import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

/** Ajv's `code.regExp` engine: the RegExp for a schema pattern; `unicode` is Ajv's flags (`u`). */
export const schemaPattern = Object.assign(
  (pattern: string, unicode: string): RegExp => {
    const needed = unicode !== '' && NEEDS_UNICODE.test(pattern);
    if (!needed) {
      try {
        return new RegExp(pattern, '');
      } catch {
        // Valid only as a Unicode pattern: compiled as Ajv would.
      }
    }
    return new RegExp(pattern, unicode);
  },
  // Only Ajv's standalone code (which Gatehouse does not generate) writes this out.
  { code: 'new RegExp' },
);

/** Syntax that means something else, or nothing, without `u`: property escapes, code point escapes, astral characters. */
const NEEDS_UNICODE = /\\[pP]\{|\\u\{|[\ud800-\udfff]/;
