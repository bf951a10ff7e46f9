// Time limits per tool (`upstreams[].timeouts.tools`): middleware SHOULD let request timeouts be set per
// request (2026-07-28/basic/patterns/cancellation.mdx §Timeouts), and for a gateway the tool is what sets a
// call apart: a build may rightly take an hour where a search should give up after seconds. Names are the
// upstream's own (what its list says and what it is sent), so a rename by Gatehouse never moves a limit.
//
// For an HTTP upstream a tool's limit replaces `callMs` (the whole answer, upstream-stage.ts) and the wait
// for the answer's headers, longer or shorter than `headersMs`: a tool that answers with JSON only when it
// is done may then take as long as its limit, and no longer. For a stdio upstream it replaces `requestMs`.

import { compileGlob, type Glob } from '../policy/glob.js';

/** The limit for a call to `tool` (the upstream's own name), or undefined: the upstream's general one applies. */
export type ToolTimeout = (tool: string) => number | undefined;

/** An exact name wins over a glob; among globs, the first written that matches. */
export function compileToolTimeouts(limits: Readonly<Record<string, number>> | undefined): ToolTimeout | undefined {
  const entries = Object.entries(limits ?? {});
  if (entries.length === 0) return undefined;
  const exact = new Map<string, number>();
  const globs: Array<{ pattern: Glob; ms: number }> = [];
  for (const [name, ms] of entries) {
    if (/[*?]/.test(name)) globs.push({ pattern: compileGlob(name), ms });
    else exact.set(name, ms);
  }
  return (tool) => exact.get(tool) ?? globs.find((g) => g.pattern.test(tool))?.ms;
}

/** The tool a message calls (its `params.name`), if it is a `tools/call`. */
export function toolCalled(message: { method?: unknown; params?: unknown } | object): string | undefined {
  const m = message as { method?: unknown; params?: { name?: unknown } };
  return m.method === 'tools/call' && typeof m.params?.name === 'string' ? m.params.name : undefined;
}
