// Watches a config file by polling its content every second and hashing it (DESIGN.md §3; a Kubernetes
// ConfigMap update swaps a symlink, which polling sees without special handling, unlike fs.watch). SIGHUP
// asks for a look at once (`checkNow`), as operators of other daemons expect. A change is reported once
// it stands (SETTLE_MS), never while the file is caught between two writes.
//
// The files the config reads through `${file:PATH}` are watched with it: a secret is rotated by replacing
// its file (a Kubernetes Secret volume swaps it the same way), and the config text then stays the same.

import { dirname, resolve } from 'node:path';
import { CONFIG_FILE_MAX_BYTES, INTERPOLATED_FILE_MAX_BYTES, readFileBounded } from './bounded-read.js';
import { contentDigest as digest, unreadableDigest } from './file-digest.js';
import { referencedFiles } from './interpolate.js';

/** What one look at the file found. */
export type ConfigCheck = 'changed' | 'unchanged' | 'unreadable';

export interface ConfigWatcher {
  /** Looks at the file now (after any look in progress), calling `onChange` when its content changed. */
  checkNow(): Promise<ConfigCheck>;
  stop(): void;
}

export interface WatchOptions {
  /** How often the files are looked at; SIGHUP asks for a look at once (`checkNow`). */
  intervalMs?: number;
  /** The text the running config was read from; a first look that finds another is a change. */
  loadedText?: string;
  /**
   * What each file it read held then (LoadOptions.filesRead); one that holds something else at the first
   * look (a secret rotated while the gateway was starting) is a change too.
   */
  loadedFiles?: ReadonlyMap<string, string>;
  /** How long a change must stand before it is reported: see SETTLE_MS. */
  settleMs?: number;
}

/**
 * A change is reported once a second read this much later finds the same content. A file rewritten in
 * place in several writes (an editor without atomic saves, a program writing 8 KiB at a time) can be read
 * between two of them, and a prefix of a config is often a valid one with its last entries missing (the
 * policy rules at its end): applied, it served what those rules hide until the next look. Renames (a
 * Kubernetes volume's symlink swap) are not affected; they only wait this long.
 */
const SETTLE_MS = 100;
/** A file that keeps changing is reported as it last stood after this many settle periods (2 s). */
const MAX_SETTLES = 20;

/**
 * Calls `onChange` with the config's text whenever it or a file it reads changes, and the change has
 * settled; `changed` names what changed (the config file, or the files it reads). Unreadable moments of
 * the config file are skipped; a file it reads that cannot be read counts as content of its own, so its
 * return is a change too.
 */
export function watchConfigFile(file: string, onChange: (text: string, changed: string[]) => void, options: WatchOptions = {}): ConfigWatcher {
  const { intervalMs = 1000, loadedText, loadedFiles, settleMs = SETTLE_MS } = options;
  const baseDir = dirname(resolve(file));
  /** The digest of each file at the last look: the config file's own, then each file it reads. */
  let last: Map<string, string> | undefined;
  let looking: Promise<ConfigCheck> | undefined;
  let stopped = false;
  /** The config's text and the digest of each file, or undefined while the config file cannot be read. */
  const read = async (): Promise<{ text: string; digests: Map<string, string> } | undefined> => {
    let text: string;
    // Past its limit the config file is unreadable like a missing one (the running config stays): the
    // watcher looks every second and must not read a huge file whole each time.
    try {
      text = (await readFileBounded(file, CONFIG_FILE_MAX_BYTES)).toString('utf8');
    } catch {
      return undefined;
    }
    const digests = new Map([[file, digest(text)]]);
    for (const name of referencedFiles(text, baseDir)) digests.set(name, await digestOfFile(name));
    return { text, digests };
  };
  const look = async (): Promise<ConfigCheck> => {
    let seen = await read();
    // Mid-rename or briefly missing: keep the running config and look again next tick.
    if (seen === undefined) return 'unreadable';
    // The first look is measured against what the running config was read from, when known: the config's
    // text, and the files it read as the load found them. A file changed while the gateway was starting
    // (before this look) is a change, not the baseline.
    const previous = last ?? (loadedText === undefined ? undefined : new Map([...seen.digests, ...(loadedFiles ?? []), [file, digest(loadedText)]]));
    const changedFrom = (digests: Map<string, string>, before: Map<string, string>): string[] => [...digests].filter(([name, d]) => before.get(name) !== d).map(([name]) => name);
    if (previous === undefined || changedFrom(seen.digests, previous).length === 0) {
      last = seen.digests;
      return 'unchanged';
    }
    // Changed: reported once it stands (SETTLE_MS). Nothing is recorded until then, so a look that ends
    // here (the file gone mid-write) leaves the next one to find the change again.
    for (let i = 0; i < MAX_SETTLES && !stopped; i++) {
      await new Promise((r) => setTimeout(r, settleMs));
      const again = await read();
      if (again === undefined) return 'unreadable';
      const settled = changedFrom(again.digests, seen.digests).length === 0 && again.digests.size === seen.digests.size;
      seen = again;
      if (settled) break;
    }
    last = seen.digests;
    const changed = changedFrom(seen.digests, previous);
    // Written back as it was while it settled: nothing to apply.
    if (changed.length === 0 || stopped) return 'unchanged';
    onChange(seen.text, changed);
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
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}

/** The content's digest, or the reason it cannot be read (a missing secret file is a state like any other). */
async function digestOfFile(path: string): Promise<string> {
  try {
    // Past its limit the file's state is EFBIG, as the load records it: its growth is a change, and the
    // reload that follows refuses it by name.
    return digest(await readFileBounded(path, INTERPOLATED_FILE_MAX_BYTES));
  } catch (err) {
    return unreadableDigest(err);
  }
}
