// Whether a JSON text names a member twice in one object (`{"isError":true,"isError":false}`), at any depth.
// RFC 8259 §4 leaves such text's meaning to the parser: JSON.parse, and so every check Gatehouse makes of an
// answer (the audit's outcome, the output schema), keeps the last, while other parsers keep the first or
// refuse it. An upstream answer relayed as its bytes must not mean one thing to the record and another to
// the client, so a governed call's answer that does is the upstream's failure (pipeline/final-answer.ts).
//
// Counted, not tokenised in JavaScript: the members the text writes (a colon outside strings separates a
// name from its value, and nothing else in valid JSON) against the members its parse kept. They differ
// exactly when some object lost a member to a later one of the same name. Both passes are native or close
// to it: about one JSON.parse of the same text for the usual answer.

/** A JSON string with its escapes: linear, and it only ever starts at a string's opening quote in valid JSON. */
const STRING = /"[^"\\]*(?:\\.[^"\\]*)*"/g;

/**
 * Whether `text`, which JSON.parse read as `parsed`, names some member twice in one object. Meant for text
 * JSON.parse has accepted; `parsed` must be that parse's own value (not changed since).
 */
export function namesAMemberTwice(text: string, parsed: unknown): boolean {
  if (parsed === null || typeof parsed !== 'object') return false;
  return membersWritten(text) !== membersKept(parsed);
}

/** The colons outside strings: one per member written. */
function membersWritten(text: string): number {
  const outside = text.indexOf('"') < 0 ? text : text.replace(STRING, '');
  let n = 0;
  for (let at = outside.indexOf(':'); at >= 0; at = outside.indexOf(':', at + 1)) n++;
  return n;
}

/** The members of every object in a parsed value. A stack, not recursion: an upstream's answer may nest without bound. */
function membersKept(value: object): number {
  let n = 0;
  const stack: object[] = [value];
  for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const item: unknown = v[i];
        if (item !== null && typeof item === 'object') stack.push(item);
      }
      continue;
    }
    // for-in over a parsed object: own members only (a parse makes plain objects, `__proto__` an own one).
    const o = v as Record<string, unknown>;
    for (const key in o) {
      n++;
      const item = o[key];
      if (item !== null && typeof item === 'object') stack.push(item);
    }
  }
  return n;
}
