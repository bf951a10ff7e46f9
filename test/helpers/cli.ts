// Runs the built CLI (dist/main.js) as a child process, the way an operator would.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion (bounded by `timeoutMs`). */
export function runCli(args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: opts.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gatehouse ${args.join(' ')} did not finish in time; stderr: ${stderr}`));
    }, opts.timeoutMs ?? 15_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

export interface ServingCli {
  child: ChildProcess;
  url: string;
  stdout(): string;
  stderr(): string;
  /** Sends SIGTERM and resolves with the exit code (SIGKILL after `timeoutMs`). */
  stop(timeoutMs?: number): Promise<number | null>;
  exited: Promise<number | null>;
}

/** Starts `gatehouse serve ...` (after `nodeArgs` for node itself) and resolves once it logs its listening URL. */
export function serveCli(args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number; configStore?: boolean; nodeArgs?: string[] } = {}): Promise<ServingCli> {
  // Each gateway its own SQLite file, unless the test names one or (configStore) uses its config's store.
  const store = args.includes('--store') || opts.configStore ? [] : ['--store', join(mkdtempSync(join(tmpdir(), 'gatehouse-cli-')), 'gatehouse.db')];
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), MAIN, 'serve', ...args, ...store], { cwd: ROOT, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gatehouse serve did not start in time; stderr: ${stderr}`));
    }, opts.timeoutMs ?? 15_000);
    // Ready once the listening line is logged and the connect banner printed (two streams, any order).
    const check = (): void => {
      const m = /"msg":"gatehouse listening","url":"([^"]+)"/.exec(stderr);
      if (m && stdout.includes('Gatehouse is serving MCP at')) {
        clearTimeout(timer);
        resolve({
          child,
          url: m[1]!,
          stdout: () => stdout,
          stderr: () => stderr,
          exited,
          async stop(timeoutMs = 10_000) {
            if (child.exitCode !== null) return child.exitCode;
            child.kill('SIGTERM');
            const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
            const code = await exited;
            clearTimeout(t);
            return code;
          },
        });
      }
    };
    child.stdout.on('data', (d) => {
      stdout += String(d);
      check();
    });
    child.stderr.on('data', (d) => {
      stderr += String(d);
      check();
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gatehouse serve exited with ${code} before listening; stderr: ${stderr}`));
    });
  });
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether `check` comes true within `ms`, looking every 100 ms (a served gateway's reloads and log batches). */
export async function until(check: () => Promise<boolean> | boolean, ms = 8000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}
