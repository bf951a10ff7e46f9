// Child processes of the bench (upstreams, bare hop, Gatehouse) and what /proc says about them.
// Every child is started here and stopped here by its PID: SIGTERM, then SIGKILL after a bound.

import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

const TAIL_LINES = 40;

export interface Child {
  readonly name: string;
  readonly pid: number;
  /** The URL the child announced once it was ready. */
  readonly url: string;
  readonly proc: ChildProcess;
  /** Lines and bytes the child wrote to stderr so far (Gatehouse's log goes there). */
  stderrLines: number;
  stderrBytes: number;
  /** Gatehouse's `config reloaded` lines on stderr so far (a reload the bench asked for has taken). */
  reloads: number;
  stdoutLines: number;
  /** Last lines of output, for error reports. */
  readonly tail: string[];
  exited: boolean;
  exitInfo: string | undefined;
}

export interface StartOptions {
  /** Arguments after the node executable. */
  args: string[];
  /** Returns the endpoint URL when a line says the child is ready. */
  ready: (line: string) => string | undefined;
  readyTimeoutMs?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

const live = new Set<Child>();

/** What Gatehouse's JSON line says when a reload was applied. */
const RELOADED = '"msg":"config reloaded"';

/** Starts `node <args>` and resolves once a line of its output satisfies `ready` (bounded in time). */
export function startChild(name: string, opts: StartOptions): Promise<Child> {
  const proc = spawn(process.execPath, opts.args, {
    cwd: opts.cwd ?? process.cwd(),
    env: opts.env ?? process.env,
    // stdin stays open as a lifeline: the bench children exit when it closes (i.e. when this process dies).
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  if (proc.pid === undefined) {
    return Promise.reject(new Error(`${name}: spawn failed`));
  }
  const timeoutMs = opts.readyTimeoutMs ?? 20_000;
  return new Promise<Child>((resolve, reject) => {
    let settled = false;
    let url: string | undefined;
    const tail: string[] = [];
    const child: Child = {
      name,
      pid: proc.pid!,
      get url() {
        return url ?? '';
      },
      proc,
      stderrLines: 0,
      stderrBytes: 0,
      reloads: 0,
      stdoutLines: 0,
      tail,
      exited: false,
      exitInfo: undefined,
    };
    live.add(child);
    const timer = setTimeout(() => {
      fail(new Error(`${name} (pid ${proc.pid}) did not report ready within ${timeoutMs} ms; output:\n${tail.join('\n')}`));
    }, timeoutMs);
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stopChild(child).finally(() => reject(err));
    };
    const onLine = (line: string): void => {
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      if (settled) return;
      const found = opts.ready(line);
      if (found !== undefined) {
        url = found;
        settled = true;
        clearTimeout(timer);
        resolve(child);
      }
    };
    // Once the child is ready its output is only counted, not split: a Gatehouse logs a line per request,
    // and splitting ten thousand lines a second in the load generator's process takes CPU from the cores
    // the measured processes share. The last chunk is kept for error reports.
    lineReader(
      proc.stdout!,
      (line) => {
        child.stdoutLines++;
        onLine(line);
      },
      () => !settled,
      (lines, _bytes, last) => {
        child.stdoutLines += lines;
        keepTail(tail, last);
      },
    );
    lineReader(
      proc.stderr!,
      (line, bytes) => {
        child.stderrLines++;
        child.stderrBytes += bytes;
        if (line.includes(RELOADED)) child.reloads++;
        onLine(line);
      },
      () => !settled,
      (lines, bytes, last) => {
        child.stderrLines += lines;
        child.stderrBytes += bytes;
        // A search of the raw chunk (a fast byte scan); a mark split across two chunks is missed, and the
        // bench that waits for it gives up after a bounded wait and checks the switch another way.
        for (let at = last.indexOf(RELOADED); at !== -1; at = last.indexOf(RELOADED, at + RELOADED.length)) child.reloads++;
        keepTail(tail, last);
      },
    );
    proc.stdin!.on('error', () => {});
    proc.on('error', (err) => fail(new Error(`${name}: ${err.message}`)));
    proc.on('exit', (code, signal) => {
      child.exited = true;
      child.exitInfo = signal !== null ? `signal ${signal}` : `exit code ${code}`;
      live.delete(child);
      fail(new Error(`${name} (pid ${proc.pid}) exited (${child.exitInfo}) before it was ready; output:\n${tail.join('\n')}`));
    });
  });
}

/** The last lines of a chunk of output, at most TAIL_LINES kept. */
function keepTail(tail: string[], chunk: Buffer): void {
  const text = chunk.subarray(Math.max(0, chunk.length - 4096)).toString('utf8');
  for (const line of text.split('\n')) {
    if (line === '') continue;
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
  }
}

/**
 * Calls `onLine` for each line while `detailed()` is true; after that, `onCounted` with the number of
 * newlines and bytes of each chunk, and the chunk.
 */
function lineReader(stream: NodeJS.ReadableStream, onLine: (line: string, bytes: number) => void, detailed: () => boolean, onCounted: (lines: number, bytes: number, chunk: Buffer) => void): void {
  let pending = '';
  const decoder = new StringDecoder('utf8');
  stream.on('data', (data: Buffer) => {
    if (!detailed() && pending === '') {
      let lines = 0;
      for (let at = data.indexOf(10); at !== -1; at = data.indexOf(10, at + 1)) lines++;
      onCounted(lines, data.length, data);
      return;
    }
    pending += decoder.write(data);
    let nl = pending.indexOf('\n');
    // Bounded by the chunk: each iteration consumes one line.
    while (nl !== -1) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      onLine(line, line.length + 1);
      nl = pending.indexOf('\n');
    }
    if (pending.length > 65_536) {
      onLine(pending, pending.length);
      pending = '';
    }
  });
}

function waitExit(child: Child, ms: number): Promise<boolean> {
  if (child.exited) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.proc.off('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    child.proc.once('exit', onExit);
  });
}

/** SIGTERM by PID, SIGKILL after `graceMs`, then waits (bounded) for the exit. */
export async function stopChild(child: Child, graceMs = 5000): Promise<void> {
  if (child.exited) {
    live.delete(child);
    return;
  }
  try {
    process.kill(child.pid, 'SIGTERM');
  } catch {
    // already gone
  }
  if (!(await waitExit(child, graceMs))) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await waitExit(child, 2000);
  }
  child.proc.stdin?.destroy();
  live.delete(child);
}

export async function stopAllChildren(): Promise<void> {
  await Promise.allSettled([...live].map((c) => stopChild(c)));
}

/** On SIGINT/SIGTERM: stop every child by PID, then exit. */
export function installSignalCleanup(): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`\nbench: ${signal}, stopping ${live.size} child process(es)\n`);
    void stopAllChildren().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

// ---- /proc -------------------------------------------------------------------------------------------

let clkTck: number | undefined;
/** Clock ticks per second for /proc/<pid>/stat times (`getconf CLK_TCK`, read once). */
export function clockTicksPerSecond(): number {
  if (clkTck === undefined) {
    const n = Number(execSync('getconf CLK_TCK', { encoding: 'utf8' }).trim());
    clkTck = Number.isFinite(n) && n > 0 ? n : 100;
  }
  return clkTck;
}

/** utime + stime of the whole process (all threads), in clock ticks. */
export function readCpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may contain spaces; fields after it start behind the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state), so utime (field 14) is fields[11] and stime (field 15) fields[12].
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * On-CPU time of all threads from /proc/<pid>/task/<tid>/schedstat, in nanoseconds: a high-resolution
 * cross-check of the tick-based figure. Undefined where schedstat is unavailable.
 */
export function readSchedNs(pid: number): number | undefined {
  try {
    let total = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended between readdir and read
      }
    }
    return total > 0 ? total : undefined;
  } catch {
    return undefined;
  }
}

function statusField(pid: number, field: string): number | undefined {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : undefined;
}

/** Peak resident set size (VmHWM) in kB. */
export function readPeakRssKb(pid: number): number | undefined {
  return statusField(pid, 'VmHWM');
}

export function readRssKb(pid: number): number | undefined {
  return statusField(pid, 'VmRSS');
}

/** Resets VmHWM to the current RSS (`echo 5 > /proc/<pid>/clear_refs`); false when not permitted. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

export function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    return m?.[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The URL a child announces on a JSON line `{"msg": msg, "url": …}` (the bench servers say "listening"). */
export function announcedUrl(line: string, msg = 'listening'): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const m = JSON.parse(line) as { msg?: unknown; url?: unknown };
    return m.msg === msg && typeof m.url === 'string' ? m.url : undefined;
  } catch {
    return undefined;
  }
}

/** Gatehouse's URL: from the banner it prints on stdout at any log level, or from its listening log line. */
export function gatehouseUrl(line: string): string | undefined {
  return /^Gatehouse is serving MCP at (\S+)/.exec(line)?.[1] ?? announcedUrl(line, 'gatehouse listening');
}
