// Secret files replaced the way Kubernetes updates a mounted Secret: a new file renamed over the old one
// (an atomic swap), never the file rewritten in place. Tests of `${file:...}` rotation do the same, so the
// watcher sees what it sees in a cluster.

import { renameSync, writeFileSync } from 'node:fs';

/** Replaces `file` with exactly `content` (a mounted secret usually ends with a newline: say so). */
export function replaceLikeSecretVolume(file: string, content: string): void {
  writeFileSync(`${file}.next`, content);
  renameSync(`${file}.next`, file);
}
