// Watches a config file by polling its content every second and hashing it (DESIGN.md §3; a Kubernetes
// ConfigMap update swaps a symlink, which polling sees without special handling, unlike fs.watch). SIGHUP
// asks for a look at once (`checkNow`), as operators of other daemons expect.
//
// The files the config reads through `${file:PATH}` are watched with it: a secret is rotated by replacing
// its file (a Kubernetes Secret volume swaps it the same way), and the config text then stays the same.

import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { contentDigest as digest, unreadableDigest } from './file-digest.js';
import { referencedFiles } from './interpolate.js';

/** What one look at the file found. */
export type ConfigCheck = 'changed' | 'unchanged' | 'unreadable';

export interface ConfigWatcher {
  /** Looks at the file now (after any look in progress), calling `onChange` when its content changed. */
  checkNow(): Promise<ConfigCheck>;
  stop(): void;
}

/**
 * Calls `onChange` with the config's text whenever it or a file it reads changes; `changed` names what
 * changed (the config file, or the files it reads). Unreadable moments of the config file are skipped; a
 * file it reads that cannot be read counts as content of its own, so its return is a change too.
 * `loadedText`: the text the running config was read from; a first look that finds another is a change.
 * `loadedFiles`: what each file it read held then (LoadOptions.filesRead); one that holds something else at
 * the first look (a secret rotated while the gateway was starting) is a change too.
 */
export function watchConfigFile(file: string, onChange: (text: string, changed: string[]) => void, intervalMs = 1000, loadedText?: string, loadedFiles?: ReadonlyMap<string, string>): ConfigWatcher {
  const baseDir = dirname(resolve(file));
  /** The digest of each file at the last look: the config file's own, then each file it reads. */
  let last: Map<string, string> | undefined;
  let looking: Promise<ConfigCheck> | undefined;
  const look = async (): Promise<ConfigCheck> => {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      // Mid-rename or briefly missing: keep the running config and look again next tick.
      return 'unreadable';
    }
    const digests = new Map([[file, digest(text)]]);
    for (const read of referencedFiles(text, baseDir)) digests.set(read, await digestOfFile(read));
    // The first look is measured against what the running config was read from, when known: the config's
    // text, and the files it read as the load found them. A file changed while the gateway was starting
    // (before this look) is a change, not the baseline.
    const previous = last ?? (loadedText === undefined ? undefined : new Map([...digests, ...(loadedFiles ?? []), [file, digest(loadedText)]]));
    last = digests;
    if (previous === undefined) return 'unchanged';
    const changed = [...digests].filter(([name, d]) => previous.get(name) !== d).map(([name]) => name);
    if (changed.length === 0) return 'unchanged';
    onChange(text, changed);
    return 'changed';
  };
  // One look at a time: a poll that finds one in progress skips its turn.
  const lookOnce = (): Promise<ConfigCheck> => (looking ??= look().finally(() => (looking = undefined)));
  void lookOnce();
  const timer = setInterval(() => void lookOnce(), intervalMs).unref();
  return {
    async checkNow() {
      // A look already under way may have read the file before its last write: wait for it, then look again.
      await looking;
      return lookOnce();
    },
    stop: () => clearInterval(timer),
  };
}

/** The content's digest, or the reason it cannot be read (a missing secret file is a state like any other). */
async function digestOfFile(path: string): Promise<string> {
  try {
    return digest(await readFile(path));
  } catch (err) {
    return unreadableDigest(err);
  }
}
