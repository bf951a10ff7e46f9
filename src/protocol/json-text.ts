// The JSON text of a message Gatehouse writes again (one it holds as an object: the catalog's and the
// bridges' answers, an answer with the audit's run id merged in). JSON sets no depth; a client's messages
// are held to `listen.maxJsonDepth`, an upstream's are not, and an answer nested thousands of levels deep
// overflows JSON.stringify's stack. Whether an answer can be written is decided once, before any stage
// records it (pipeline/final-answer.ts), and the text made then is kept for the edge, which would
// otherwise make it again.

/** Texts made before the message was written, by message. Weak: a message nobody holds takes its text with it. */
const texts = new WeakMap<object, string>();

/** The JSON text of `message` (the one kept for it, if any), or undefined when it nests too deeply to write. */
export function jsonOf(message: unknown): string | undefined {
  return (typeof message === 'object' && message !== null ? texts.get(message) : undefined) ?? stringified(message);
}

/** The same, and the text kept for whoever writes `message` next. Messages must not change after this. */
export function writableJson(message: object): string | undefined {
  let text = texts.get(message);
  if (text === undefined) {
    text = stringified(message);
    if (text !== undefined) texts.set(message, text);
  }
  return text;
}

/** Keeps `text` as what `message` is written as: equal JSON, made another way (its bytes spliced). */
export function keepJsonText(message: object, text: string): void {
  texts.set(message, text);
}

function stringified(message: unknown): string | undefined {
  try {
    return JSON.stringify(message);
  } catch (err) {
    // Too deep: the stack ran out. Anything else (a BigInt, a throwing toJSON) cannot come from parsed JSON.
    if (err instanceof RangeError) return undefined;
    throw err;
  }
}
