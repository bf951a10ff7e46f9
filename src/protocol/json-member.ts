// Where a top-level member's value starts in a JSON object's text, found by walking the text's structure
// rather than parsing it into objects. It lets Gatehouse add to an answer it relays (a `_meta` entry in
// `result`) by inserting bytes, leaving the rest of the upstream's bytes as they came, instead of writing the
// whole answer again. Meant for text JSON.parse has accepted: it checks structure, not validity.

/** The characters where the structure can change; everything between them is numbers, literals and space. */
const STRUCTURAL = /["{}[\],]/g;

/**
 * The offset of the first character of the value of top-level member `name` of the object in `text`, or -1
 * when the text is not an object, has no such member, has it more than once (JSON.parse keeps the last; a
 * caller must not guess), or writes any top-level key with an escape (which could spell `name`).
 */
export function topLevelMemberValue(text: string, name: string): number {
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return -1;
  let depth = 0;
  let expectKey = false;
  let found = -1;
  STRUCTURAL.lastIndex = i;
  for (let m = STRUCTURAL.exec(text); m !== null; m = STRUCTURAL.exec(text)) {
    i = m.index;
    const c = text[i];
    if (c === '"') {
      const end = stringEnd(text, i);
      if (end < 0) return -1;
      if (depth === 1 && expectKey) {
        expectKey = false;
        const raw = text.slice(i + 1, end);
        if (raw.includes('\\')) return -1;
        if (raw === name) {
          if (found >= 0) return -1;
          const colon = skipSpace(text, end + 1);
          if (text[colon] !== ':') return -1;
          found = skipSpace(text, colon + 1);
        }
      }
      STRUCTURAL.lastIndex = end + 1;
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
  return -1;
}

/** The index of the quote that closes the string opening at `start`, or -1. */
function stringEnd(text: string, start: number): number {
  for (let at = start + 1; ; ) {
    const q = text.indexOf('"', at);
    if (q < 0) return -1;
    let backslashes = 0;
    for (let k = q - 1; text[k] === '\\'; k--) backslashes++;
    if (backslashes % 2 === 0) return q;
    at = q + 1;
  }
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && (text[at] === ' ' || text[at] === '\n' || text[at] === '\r' || text[at] === '\t')) at++;
  return at;
}
