// decodeURIComponent throws on broken percent-encoding (`%E0%A4%A`, a lone `%`). Text from the wire that
// does not decode is not a name Gatehouse knows; callers say so in their own terms (400, 407), never by the
// exception reaching a handler's catch-all or, worse, an unhandled rejection.

/** `text` with its percent-encoding undone, or undefined when the encoding is broken. */
export function percentDecoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
