// Headers that must appear at most once. Node keeps the first `Authorization`, `Host` or `Content-Length`
// and silently drops the rest, and joins repeated MCP headers with ", "; a proxy in front may have picked
// another copy than Node did. Two values of one of these is ambiguous, so the request is refused outright
// (RFC 9110 §5.3: a field that is not a list must not be repeated).
//
// So is every `Mcp-Param-{Name}`: each carries one encoded parameter value (2026-07-28 streamable-http.mdx
// §Value Encoding), never a list, so two copies are not one value but a request whose header and body a
// proxy in front and Gatehouse would read differently (§Server Validation), and the joined text Node makes
// of them is a value nobody sent, which forwarding it upstream would pass on as the client's.
//
// `traceparent` is not among them: W3C Trace Context treats two of them as an invalid one, which restarts
// the trace and fails nothing (its test suite's `test_traceparent_duplicated` expects a new trace id). Node
// joins the two with ", ", which no traceparent matches, so the edge reads no trace context from them
// (protocol/trace-context.ts) and the pass-through sends neither on.

const SINGLETONS: ReadonlySet<string> = new Set([
  'authorization',
  'host',
  'content-length',
  'content-type',
  'origin',
  'mcp-session-id',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'last-event-id',
]);

/** The names above by length: most headers are ruled out by their length alone, the rest without a lower-cased copy. */
const BY_LENGTH: ReadonlyMap<number, ReadonlyArray<{ name: string; bit: number }>> = (() => {
  const out = new Map<number, Array<{ name: string; bit: number }>>();
  let bit = 1;
  for (const name of SINGLETONS) {
    const same = out.get(name.length) ?? [];
    same.push({ name, bit });
    out.set(name.length, same);
    bit <<= 1;
  }
  return out;
})();

/** The prefix of the headers mirroring tool arguments (streamable-http.mdx §Custom Headers from Tool Parameters). */
const PARAM_PREFIX = 'mcp-param-';

/**
 * The first singleton header the request carries more than once, lower-cased, if any. Runs on every request:
 * no allocation, but for the names of its Mcp-Param headers when it has any.
 */
export function repeatedSingletonHeader(rawHeaders: readonly string[]): string | undefined {
  let seen = 0;
  let params: Set<string> | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const raw = rawHeaders[i]!;
    if (raw.length > PARAM_PREFIX.length && startsWithIgnoringCase(raw, PARAM_PREFIX)) {
      const name = raw.toLowerCase();
      if (params?.has(name)) return name;
      (params ??= new Set()).add(name);
      continue;
    }
    const candidates = BY_LENGTH.get(raw.length);
    if (candidates === undefined) continue;
    for (const { name, bit } of candidates) {
      // Of the same length: starting with the name is being it.
      if (!startsWithIgnoringCase(raw, name)) continue;
      if ((seen & bit) !== 0) return name;
      seen |= bit;
      break;
    }
  }
  return undefined;
}

/** `raw` starts with the lower-case `name` but for ASCII case (header names are ASCII tokens). */
function startsWithIgnoringCase(raw: string, name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    let c = raw.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== name.charCodeAt(i)) return false;
  }
  return true;
}
