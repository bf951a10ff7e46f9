// Shared by the bench processes: protocol constants, the child "listening" handshake, and the small
// helpers every child server uses (bounded body read, clean stop on SIGTERM or when the parent goes away).

import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const LEGACY_VERSION = '2025-11-25';
export const MODERN_VERSION = '2026-07-28';
export const TOOL_NAME = 'echo';
export const ECHO_TEXT = 'hello';
/** Upper bound on request bodies the bench servers accept (they only ever see small JSON-RPC messages). */
export const MAX_BODY_BYTES = 1 << 20;

export type Era = 'legacy' | 'modern';

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * A distribution-free confidence interval for the median of `values`: the order statistics between which
 * the true median lies with at least `confidence`, from the binomial distribution of how many values fall
 * below it (for 30 values at 95%, the 10th and the 21st smallest). It says whether one run's median decides
 * a limit: on this VM the pairs of the log toggle and the p99 phases spread so widely that a median near
 * its limit is often undecided. Undefined when there are too few values for any interval (five or fewer at
 * 95%).
 */
export function medianInterval(values: readonly number[], confidence = 0.95): { low: number; high: number; coverage: number } | undefined {
  const n = values.length;
  const sorted = [...values].sort((a, b) => a - b);
  // below[k] = P(Binomial(n, 1/2) < k): the chance that fewer than k values lie under the true median.
  let pmf = 0.5 ** n;
  let below = 0;
  let k = 0;
  const tail = (1 - confidence) / 2;
  while (k < n && below + pmf <= tail) {
    below += pmf;
    pmf = (pmf * (n - k)) / (k + 1);
    k++;
  }
  // Now P(fewer than k values under the median) <= tail: the interval runs from the kth to the (n-k+1)th smallest.
  if (k === 0) return undefined;
  return { low: sorted[k - 1]!, high: sorted[n - k]!, coverage: 1 - 2 * below };
}

/** The line a bench child prints on stdout once it accepts connections; the runner waits for it. */
export function announceListening(server: Server, path: string, name: string): void {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(JSON.stringify({ msg: 'listening', name, url: `http://127.0.0.1:${port}${path}`, pid: process.pid }) + '\n');
}

/** Parses `--flag value` pairs; only the flags named in `known` are accepted. */
export function parseFlags(argv: string[], known: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i];
    const value = argv[i + 1];
    if (key === undefined || !key.startsWith('--') || value === undefined || !known.includes(key.slice(2))) {
      throw new Error(`usage: ${known.map((k) => `--${k} VALUE`).join(' ')} (got ${argv.join(' ')})`);
    }
    out[key.slice(2)] = value;
  }
  return out;
}

/** Reads a request body up to `limit` bytes; resolves null when it is larger (the caller answers 413). */
export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.destroy();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Stops the child on SIGTERM/SIGINT, and also when the parent disappears (its stdin pipe closes), so a
 * killed bench run never leaves servers behind. `extra` runs before the listener closes.
 */
export function stopOnSignals(server: Server, extra?: () => Promise<void>): void {
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    const hardExit = setTimeout(() => process.exit(0), 2000);
    hardExit.unref();
    void (async () => {
      try {
        await extra?.();
      } catch {
        // best effort: the process is going away anyway
      }
      server.close(() => process.exit(0));
      server.closeAllConnections();
    })();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
}

/** Listens on 127.0.0.1 with an OS-assigned port unless one is given. */
export function listenLoopback(server: Server, port = 0): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}
