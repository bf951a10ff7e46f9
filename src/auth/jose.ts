// jose, the JWT library, is loaded only where OAuth is configured: a gateway on API keys never pays for it
// (issue 17: lazy-load what the configured features do not use). It is an ES module, so it is imported
// asynchronously; the token verifier starts the import when it is built, so the first token rarely waits.

export type Jose = typeof import('jose');

let loading: Promise<Jose> | undefined;

export function loadJose(): Promise<Jose> {
  return (loading ??= import('jose'));
}
