// The helm binary for tests: HELM_BIN, else `helm` on PATH, else `$(go env GOPATH)/bin/helm` (where
// `.ci/run` installs it with `go install`). A missing helm fails the test that needs it, never skips it.

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** Whether `cmd args` runs and exits 0 (within 30 s). */
export function runs(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

let found: string | undefined;

export function helmBinary(): string {
  if (found !== undefined) return found;
  const candidates: string[] = [];
  if (process.env['HELM_BIN']) candidates.push(process.env['HELM_BIN']);
  candidates.push('helm');
  try {
    const gopath = execFileSync('go', ['env', 'GOPATH'], { encoding: 'utf8', timeout: 30_000 }).trim();
    if (gopath) candidates.push(join(gopath.split(':')[0] ?? gopath, 'bin/helm'));
  } catch {
    // No Go toolchain: only the first two candidates count.
  }
  for (const c of candidates) if (runs(c, ['version', '--short'])) return (found = c);
  throw new Error(`helm not found (tried ${candidates.join(', ')}); install it with: go install helm.sh/helm/v3/cmd/helm@v3.22.0, or set HELM_BIN`);
}
