// Where a top-level member's value starts in a JSON object's text, found by walking the text's structure
// rather than parsing it into objects. It lets Gatehouse add to an answer it relays (a `_meta` entry in
// `result`) by inserting bytes, leaving the rest of the upstream's bytes as they came, instead of writing the
// whole answer again. Meant for text JSON.parse has accepted: it checks structure, not validity.

/** The characters where the structure can change at the top level; between them: numbers, literals, space. */
const TOP = /["{}[\],]/g;
/** Deeper down only strings and nesting matter: commas there are skipped in one jump. */
const DEEP = /["{}[\]]/g;

/**
 * The offset of the first character of the value of top-level member `name` of the object in `text`, or -1
 * when the text is not an object, has no such member, has it more than once (JSON.parse keeps the last; a
 * caller must not guess), or writes any top-level key with an escape (which could spell `name`). With
 * `start`, the object is the one that opens there (a member's value found before), and its members are the
 * top level.
 */
export function topLevelMemberValue(text: string, name: string, start = 0): number {
  let i = skipSpace(text, start);
  if (text[i] !== '{') return -1;
  let depth = 0;
  let expectKey = false;
  let found = -1;
  const escapes = new Escapes(text);
  for (let at = i; ; ) {
    const scan = depth <= 1 ? TOP : DEEP;
    scan.lastIndex = at;
    // test(), not exec(): no match object per character found (it runs for every audited answer); the
    // patterns match one character, so it is the one before lastIndex.
    if (!scan.test(text)) return -1;
    at = scan.lastIndex;
    i = at - 1;
    const c = text[i];
    if (c === '"') {
      const isKey = depth === 1 && expectKey;
      // A key's first backslash, asked before stringEnd moves the search for backslashes past the key.
      const escape = isKey ? escapes.from(i + 1) : -1;
      const end = stringEnd(text, i, escapes);
      if (end < 0) return -1;
      if (isKey) {
        expectKey = false;
        // A key with an escape could spell `name`.
        if (escape >= 0 && escape < end) return -1;
        if (end - i - 1 === name.length && text.startsWith(name, i + 1)) {
          if (found >= 0) return -1;
          const colon = skipSpace(text, end + 1);
          if (text[colon] !== ':') return -1;
          found = skipSpace(text, colon + 1);
        }
      }
      at = end + 1;
    } else if (c === '{' || c === '[') {
      depth++;
      if (depth === 1) expectKey = true;
    } else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return found;
    } else if (depth === 1) {
      expectKey = true;
    }
  }
}

/** The index of the quote that closes the string opening at `start`, or -1. */
function stringEnd(text: string, start: number, escapes: Escapes): number {
  for (let at = start + 1; ; ) {
    const q = text.indexOf('"', at);
    if (q < 0) return -1;
    const escape = escapes.from(at);
    if (escape < 0 || escape > q) return q;
    // An escape comes first: skip it and the character it escapes (a quote among them), then look again.
    at = escape + 2;
  }
}

/**
 * The next backslash at or after a position, remembered: positions only move forward in a scan, so the text
 * is searched for backslashes once in all, not once per string (which would be quadratic in a text with few).
 */
class Escapes {
  private next = -2;

  constructor(private readonly text: string) {}

  from(at: number): number {
    if (this.next === -1 || this.next >= at) return this.next;
    this.next = this.text.indexOf('\\', at);
    return this.next;
  }
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && (text[at] === ' ' || text[at] === '\n' || text[at] === '\r' || text[at] === '\t')) at++;
  return at;
}
