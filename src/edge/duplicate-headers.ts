// Headers that must appear at most once. Node keeps the first `Authorization`, `Host` or `Content-Length`
// and silently drops the rest, and joins repeated MCP headers with ", "; a proxy in front may have picked
// another copy than Node did. Two values of one of these is ambiguous, so the request is refused outright
// (RFC 9110 §5.3: a field that is not a list must not be repeated).

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
  'traceparent',
]);

/** Lengths of the names above: most headers are ruled out without lower-casing them. */
const LENGTHS: ReadonlySet<number> = new Set([...SINGLETONS].map((n) => n.length));

/** The first singleton header the request carries more than once, lower-cased, if any. */
export function repeatedSingletonHeader(rawHeaders: readonly string[]): string | undefined {
  let seen: string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const raw = rawHeaders[i]!;
    if (!LENGTHS.has(raw.length)) continue;
    const name = raw.toLowerCase();
    if (!SINGLETONS.has(name)) continue;
    if (seen === undefined) seen = [name];
    else if (seen.includes(name)) return name;
    else seen.push(name);
  }
  return undefined;
}
