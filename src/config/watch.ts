// Watches a config file by polling its content every second and hashing it (DESIGN.md §3; a Kubernetes
// ConfigMap update swaps a symlink, which polling sees without special handling, unlike fs.watch). SIGHUP
// asks for a look at once (`checkNow`), as operators of other daemons expect.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';

/** What one look at the file found. */
export type ConfigCheck = 'changed' | 'unchanged' | 'unreadable';

export interface ConfigWatcher {
  /** Looks at the file now (after any look in progress), calling `onChange` when its content changed. */
  checkNow(): Promise<ConfigCheck>;
  stop(): void;
}

/** Calls `onChange` with the new text whenever the file's content changes; unreadable moments are skipped. */
export function watchConfigFile(file: string, onChange: (text: string) => void, intervalMs = 1000): ConfigWatcher {
  let lastHash: string | undefined;
  let looking: Promise<ConfigCheck> | undefined;
  const look = async (): Promise<ConfigCheck> => {
    try {
      const text = await readFile(file, 'utf8');
      const hash = createHash('sha256').update(text).digest('hex');
      const changed = lastHash !== undefined && hash !== lastHash;
      lastHash = hash;
      if (changed) onChange(text);
      return changed ? 'changed' : 'unchanged';
    } catch {
      // Mid-rename or briefly missing: keep the running config and look again next tick.
      return 'unreadable';
    }
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
