// Globs from the config (`*` any run of characters, `?` one), matched without a regular expression.
//
// A glob became `^a.*b.*c$` until 3 December, and V8's backtracking engine tries every way the stars can
// split a text that does not match: time of the text's length to the power of the stars. The texts are
// often a client's (a resource URI, an argument value an approval rule looks at): an 8 KB URI against the
// access rule `file:///*/*/*.txt` blocked the gateway for 55 s, a 40 KB argument against `*prod*x` 0.4 s.
//
// A glob is the literal pieces between its stars, so a match is: the first piece at the start, the last at
// the end, and each one between found in turn, as far left as it can be, which leaves the most room for the
// rest (no other placement can succeed where the leftmost fails). Each piece is sought once: time of the
// text's length times the pattern's at worst, and one `indexOf` per piece without `?`.

export interface Glob {
  test(text: string): boolean;
}

export interface GlobOptions {
  /** Whether `?` stands for one character (policy globs) or for itself (approval values). Default true. */
  anyOne?: boolean;
  /** Compare without regard to case (lower-cased both sides). Default false. */
  ignoreCase?: boolean;
}

/** One piece between stars: its text, and whether it holds a `?` to be matched as any one character. */
interface Piece {
  text: string;
  wild: boolean;
}

class CompiledGlob implements Glob {
  /** The pieces between stars; one piece and no star when the glob has none. */
  private readonly pieces: Piece[];
  private readonly starred: boolean;

  constructor(
    glob: string,
    anyOne: boolean,
    private readonly ignoreCase: boolean,
  ) {
    const source = ignoreCase ? glob.toLowerCase() : glob;
    const parts = source.split('*');
    this.starred = parts.length > 1;
    this.pieces = parts.map((text) => ({ text, wild: anyOne && text.includes('?') }));
  }

  test(input: string): boolean {
    const text = this.ignoreCase ? input.toLowerCase() : input;
    const pieces = this.pieces;
    const first = pieces[0]!;
    if (!this.starred) return text.length === first.text.length && pieceAt(text, first, 0);
    const last = pieces[pieces.length - 1]!;
    // The first and the last piece are anchored and may not overlap.
    const end = text.length - last.text.length;
    if (end < first.text.length || !pieceAt(text, first, 0) || !pieceAt(text, last, end)) return false;
    let from = first.text.length;
    for (let i = 1; i < pieces.length - 1; i++) {
      const piece = pieces[i]!;
      if (piece.text.length === 0) continue;
      const at = find(text, piece, from, end);
      if (at < 0) return false;
      from = at + piece.text.length;
    }
    return true;
  }
}

/** Whether `piece` matches `text` at `at`. */
function pieceAt(text: string, piece: Piece, at: number): boolean {
  if (!piece.wild) return text.startsWith(piece.text, at);
  const p = piece.text;
  if (at + p.length > text.length) return false;
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    if (c !== QUESTION && c !== text.charCodeAt(at + i)) return false;
  }
  return true;
}

/** Where `piece` first matches in `text` at or after `from`, ending at or before `end`; -1 if nowhere. */
function find(text: string, piece: Piece, from: number, end: number): number {
  const last = end - piece.text.length;
  if (!piece.wild) {
    const at = text.indexOf(piece.text, from);
    return at >= 0 && at <= last ? at : -1;
  }
  for (let at = from; at <= last; at++) if (pieceAt(text, piece, at)) return at;
  return -1;
}

const QUESTION = '?'.charCodeAt(0);

/** Compiled globs by their text and options: the same few recur across rules and reloads. */
const cache = new Map<string, Glob>();
const CACHE_MAX = 10_000;

export function compileGlob(glob: string, options: GlobOptions = {}): Glob {
  const anyOne = options.anyOne ?? true;
  const ignoreCase = options.ignoreCase ?? false;
  const key = `${anyOne ? 1 : 0}${ignoreCase ? 1 : 0}${glob}`;
  let compiled = cache.get(key);
  if (compiled === undefined) {
    compiled = new CompiledGlob(glob, anyOne, ignoreCase);
    if (cache.size < CACHE_MAX) cache.set(key, compiled);
  }
  return compiled;
}
