// Numbers in a call's arguments that Gatehouse cannot read exactly. JSON.parse reads every number as an
// IEEE 754 double, so the integer 9007199254740993 (2^53 + 1) becomes 9007199254740992 and 1e400 becomes
// Infinity, while the upstream gets the client's bytes and may read them exactly (Python's json, Go's
// json.Number, Java's BigInteger). An approval binds the digest of the arguments as read and shows the
// reviewer a preview of them: with such a number, the reviewer would see, and approve, another number than
// the one that runs, and an approval of one (an account id) would run a call on its neighbour. Likewise an
// idempotency key's request, compared as read, would be the neighbour's, and replay its answer. RFC 7493
// (I-JSON) §2.2 says such numbers should not be sent; RFC 8259 §6 that parsers disagree on them.
//
// Only the client's text tells: the parsed value has lost the difference. Decimals are left alone: servers
// read them as doubles too, so "0.1" means to them what it means here.

/** A JSON string with its escapes (only ever starting at an opening quote in valid JSON). */
const STRING = /"[^"\\]*(?:\\.[^"\\]*)*"/g;
/** A JSON number; outside strings, digits are found in numbers only. */
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * Whether `args` (parsed from `text`, the call's JSON) holds a number whose literal in `text` JSON.parse
 * read as another value: an integer beyond ±(2^53 − 1) that no double equals, or any number past the
 * double range. Costs one scan of the text; the arguments are walked only when the text has such a literal.
 */
export function hasInexactNumber(text: string, args: unknown): boolean {
  const inexact = new Set(inexactLiterals(text).values());
  if (inexact.size === 0) return false;
  // A literal elsewhere in the message (a big request id) is no concern of the arguments'.
  const stack: unknown[] = [args];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') {
      if (inexact.has(v)) return true;
    } else if (typeof v === 'object' && v !== null) {
      for (const item of Array.isArray(v) ? v : Object.values(v)) stack.push(item);
    }
  }
  return false;
}

/**
 * The literals of `text`, as written and sorted, that JSON.parse read as a value `args` holds but not
 * exactly; none (the usual case) when the arguments read as they were written. What tells apart two requests
 * whose arguments parse alike (the idempotency stage: 9007199254740993 and 9007199254740992 are one double).
 */
export function inexactLiteralsIn(text: string, args: unknown): string[] {
  const inexact = inexactLiterals(text);
  if (inexact.size === 0) return [];
  const held = new Set<number>();
  const stack: unknown[] = [args];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') held.add(v);
    else if (typeof v === 'object' && v !== null) for (const item of Array.isArray(v) ? v : Object.values(v)) stack.push(item);
  }
  return [...inexact].filter(([, value]) => held.has(value)).map(([literal]) => literal).sort();
}

/** The literals of `text` that JSON.parse does not read exactly, each with the value it gives. */
function inexactLiterals(text: string): Map<string, number> {
  const outside = text.indexOf('"') < 0 ? text : text.replace(STRING, '""');
  const found = new Map<string, number>();
  for (const [literal] of outside.matchAll(NUMBER)) {
    // 15 digits or fewer, no exponent: below 10^15 < 2^53, always exact (the usual case, decided at once).
    if (literal.length <= 15 && !/[eE]/.test(literal)) continue;
    const value = Number(literal);
    if (!Number.isFinite(value)) found.set(literal, value);
    else if (!/[.eE]/.test(literal) && !Number.isSafeInteger(value) && BigInt(literal) !== BigInt(value)) found.set(literal, value);
  }
  return found;
}
