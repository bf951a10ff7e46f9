// Text from elsewhere (an upstream's tool names and schemas, a caller's subject, a reviewer's reason) made
// safe to print on an operator's terminal. Written raw, a control character is an instruction to the
// terminal, not text: an upstream could name a schema property `x\u001b[3A\u001b[J` and have `gatehouse pins
// show` erase the lines above it (the description it rewrote) from the reviewer's screen before they accept,
// or start a tool name with a line break and forge a row of `gatehouse approvals list`. Bidirectional
// overrides reorder what is shown (a preview's `rm -rf` read backwards). Each such character is written as
// the JSON escape `\uXXXX`, so a JSON text stays valid JSON with the same meaning (these characters appear
// only inside its strings).

/** C0 and C1 controls, DEL, line and paragraph separators, and the bidirectional embeddings, overrides and isolates. */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every character a terminal would act on written as `\uXXXX`. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** What JSON.stringify leaves as it is inside strings (it escapes C0 controls itself): DEL, C1, separators, bidi marks. */
const UNPRINTABLE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** A JSON text for a terminal; its line breaks (with `indent`) are its own, outside strings, and stay. */
export function printableJson(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? 'undefined').replace(UNPRINTABLE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
