// What a reload says about `listen` keys it cannot apply. The listener is read once at start (its address,
// its paths, its Host/Origin guard, the public URL its OAuth metadata and legacy SSE endpoint name); a
// reload keeps the running ones and judges the new config with them. It does not decide what is static.

import type { ListenConfig } from './types.js';

/** The `listen` keys whose value differs between the running listener and the new file's, sorted. */
export function changedListenKeys(running: ListenConfig, next: ListenConfig): Array<keyof ListenConfig> {
  const keys = new Set([...Object.keys(running), ...Object.keys(next)] as Array<keyof ListenConfig>);
  return [...keys].filter((k) => JSON.stringify(running[k]) !== JSON.stringify(next[k])).sort();
}

/**
 * The refusal's line for a reload that changed `listen` and was refused: without it the problems quote the
 * running listen (`must equal listen.publicUrl ("<old>")`) against a file that says otherwise, and nothing
 * says why. Undefined when `listen` did not change.
 */
export function listenRestartProblem(running: ListenConfig, next: ListenConfig): string | undefined {
  const keys = changedListenKeys(running, next);
  if (keys.length === 0) return undefined;
  const names = keys.map((k) => `listen.${k}`);
  const list = names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)!}`;
  const was = keys.map((k) => `running listen.${k} is ${running[k] === undefined ? 'unset' : JSON.stringify(running[k])}`).join(', ');
  return `${list} ${keys.length === 1 ? 'is' : 'are'} read only at start (the listener is bound and its routes, Host/Origin guard and public URL set up once), so this config was judged with the running listen (${was}); restart Gatehouse to apply the new listen`;
}
