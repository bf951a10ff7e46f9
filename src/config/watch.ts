// Watches a config file by polling its content every second and hashing it (DESIGN.md §3; a Kubernetes
// ConfigMap update swaps a symlink, which polling sees without special handling, unlike fs.watch).

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';

export interface ConfigWatcher {
  stop(): void;
}

/** Calls `onChange` with the new text whenever the file's content changes; unreadable moments are skipped. */
export function watchConfigFile(file: string, onChange: (text: string) => void, intervalMs = 1000): ConfigWatcher {
  let lastHash: string | undefined;
  let busy = false;
  const check = async (): Promise<void> => {
    if (busy) return;
    busy = true;
    try {
      const text = await readFile(file, 'utf8');
      const hash = createHash('sha256').update(text).digest('hex');
      if (lastHash !== undefined && hash !== lastHash) onChange(text);
      lastHash = hash;
    } catch {
      // Mid-rename or briefly missing: keep the running config and look again next tick.
    } finally {
      busy = false;
    }
  };
  void check();
  const timer = setInterval(() => void check(), intervalMs).unref();
  return { stop: () => clearInterval(timer) };
}
