// One MCP server child process spoken to over stdio: newline-delimited JSON-RPC on stdin/stdout
// (2026-07-28/basic/transports/stdio.mdx), stderr into the log, pending requests failed when it exits.
// It does not know about HTTP or sessions; the session host above it does.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { classifyMessage, type JsonRpcId, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../protocol/jsonrpc.js';
import { AnsweredIdScanner } from '../protocol/answered-id.js';
import { isLateAnswer, PendingRequests } from './pending-requests.js';
import type { ToolTimeout } from './tool-timeouts.js';
import { MAX_WHOLE_BODY_BYTES } from '../pipeline/relay-body.js';
import { launchOf } from './die-with-gatehouse.js';
import { guardGroup, releaseGroup } from './group-watchdog.js';

export interface StdioProcessOptions {
  upstream: string;
  command: string[];
  env: Record<string, string>;
  cwd?: string;
  /** Read at each request (see RequestTimeouts): a getter may follow the upstream's current settings. */
  readonly requestTimeoutMs: number;
  /** The limits of calls to some tools, in place of requestTimeoutMs (`timeouts.tools`). */
  readonly toolTimeout?: ToolTimeout | undefined;
  /** Longest stdout line accepted; longer ones are dropped and logged, not parsed. */
  maxLineBytes?: number;
  /** Seconds from a request written to its response read (metrics). */
  observe?: (seconds: number) => void;
}

/** Only these variables of the gateway's own environment reach a child; secrets are passed explicitly. */
const INHERITED_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'LANG', 'TMPDIR', 'NODE_OPTIONS'];
const STDERR_LINE_LIMIT = 4096;
/** How many of a child's last stderr lines the warning of its exit carries (they usually say why). */
const LAST_STDERR_LINES = 5;
/** How long the warning of an exit waits for the rest of stderr: the exit may be seen before its last lines are read. */
const STDERR_TAIL_WAIT_MS = 250;
/** The line break of newline-delimited JSON (stdio.mdx §Message Format), as the byte it is in UTF-8. */
const NEWLINE = 0x0a;
/** How long what a child left of its process group has, after SIGTERM, before SIGKILL. */
const GROUP_GRACE_MS = 2000;
/**
 * How long a child whose stdout ended has to exit before it is taken for one that closed its output and
 * runs on: an exiting child's stdout ends a moment before its exit is seen.
 */
const STDOUT_CLOSED_GRACE_MS = 1000;
/** How much of a non-JSON stdout line is logged. */
const STDOUT_EXCERPT = 200;
/**
 * What is kept of a line past its excerpt, to be scrubbed with it before the cut: a secret up to this long
 * that the cut runs through is still whole when it is looked for (an RSA private key's PEM is ~3 KB).
 */
const SCRUB_MARGIN = 16 * 1024;

export class StdioProcess {
  private child?: ChildProcessWithoutNullStreams;
  private readonly pending: PendingRequests;
  /**
   * The stdout line still coming, as the bytes read of it (decoded once, whole, when its line break comes:
   * a character split between two reads is then whole), and how many bytes that is.
   */
  private stdoutParts: Buffer[] = [];
  private stdoutBytes = 0;
  /** Reading past an oversized line: which request it answers, and its text decoded for that. */
  private dropping: { scanner: AnsweredIdScanner; decoder: StringDecoder } | undefined;
  private exited = false;
  /** The stop under way, once stop() was called. */
  private stopped: Promise<void> | undefined;
  /** Set once stop() begins: the exit that follows is expected, not news. */
  private stopping = false;
  private exitWaiters: Array<() => void> = [];
  /** Settles once what the child left of its process group is gone too (see endGroup). */
  private groupEnded: Promise<void> = Promise.resolve();
  /** The child's last stderr lines, as logged, for the warning of its exit. */
  private readonly lastStderr: string[] = [];
  /** Settles once the child's stderr has ended (all of it read), or at once if it never ran. */
  private stderrEnded: Promise<void> = Promise.resolve();
  /** Set while the child's stdin backlog is past its bound (see backlogged), so that is logged once. */
  private starved = false;
  /** Called for every message that is not a response to a pending request. */
  onMessage: (msg: JsonRpcMessage) => void = () => {};
  /** Called once when the process is gone, whatever the reason. */
  onExit: (reason: string) => void = () => {};

  constructor(private readonly opts: StdioProcessOptions, private readonly log: Logger) {
    this.pending = new PendingRequests(opts.upstream, opts, opts.observe);
  }

  /** True once stop() was called: an exit now is expected, not a crash. */
  get stoppedOnPurpose(): boolean {
    return this.stopping;
  }

  get alive(): boolean {
    return this.child !== undefined && !this.exited;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Spawns the process; rejects with a clear error when it cannot be started at all. */
  start(): Promise<void> {
    const [cmd, ...args] = this.opts.command;
    if (cmd === undefined) return Promise.reject(new Error('empty command'));
    // A working directory that is missing (or a file) fails the spawn with an error that names the command
    // (`spawn /usr/bin/node ENOENT`), which is there: said as what it is, without the host's path.
    const cwdProblem = this.opts.cwd === undefined ? undefined : directoryProblem(this.opts.cwd);
    if (cwdProblem !== undefined) return this.notStarted(`its working directory (cwd) ${cwdProblem}`);
    const env: Record<string, string> = {};
    for (const k of INHERITED_ENV) if (process.env[k] !== undefined) env[k] = process.env[k]!;
    const nodeOptions = withoutInspector(env.NODE_OPTIONS);
    if (nodeOptions === undefined) delete env.NODE_OPTIONS;
    else env.NODE_OPTIONS = nodeOptions;
    Object.assign(env, this.opts.env);
    // A process group of its own (detached: setsid), whose id is the child's PID: what the child starts
    // (a browser it drives, the server behind an `npx` or a shell) is in it, and is ended with it (endGroup).
    // Started through setpriv where it can be (die-with-gatehouse.ts), it is killed when Gatehouse is.
    const launch = launchOf(cmd, args, env, this.opts.cwd, this.log);
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(launch.file, launch.args, { cwd: this.opts.cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    } catch (err) {
      // Node throws for what it cannot pass to a process (a NUL in an argument or a variable, which the config
      // checks refuse), quoting the value, which may be a credential: neither the log nor the client gets it.
      const code = (err as { code?: unknown }).code;
      this.markExited(`could not be started: its command, arguments, environment or working directory cannot be passed to a process (${typeof code === 'string' ? code : 'error'})`);
      return Promise.reject(new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream "${this.opts.upstream}" could not be started: its command, arguments, environment or working directory cannot be passed to a process`, this.opts.upstream));
    }
    this.child = child;
    // Listed with the watchdog (group-watchdog.ts) until the group is gone, which ends it if Gatehouse dies first.
    if (child.pid !== undefined) guardGroup(child.pid);
    // Read as bytes: maxMessageBytes bounds a line's bytes, not the UTF-16 units of its text.
    child.stdout.on('data', (chunk: Buffer) => this.onStdout(chunk));
    child.stdout.once('end', () => this.onStdoutEnd());
    this.pipeStderr(child);
    child.stdin.on('error', () => {}); // EPIPE after exit is reported through 'exit'
    return new Promise((resolve, reject) => {
      child.once('spawn', () => {
        this.log.info('stdio upstream started', { pid: child.pid, command: cmd });
        resolve();
      });
      child.once('error', (err) => {
        // Said of the configured command, not of setpriv in front of it (a working directory it may not enter).
        const message = launch.file === cmd ? err.message : `spawn ${cmd} ${(err as NodeJS.ErrnoException).code ?? 'failed'}`;
        this.markExited(`could not start "${cmd}": ${message}`);
        reject(new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream "${this.opts.upstream}" could not be started: ${message}`, this.opts.upstream, { cause: err }));
      });
      child.once('exit', (code, signal) => this.markExited(signal ? `killed by ${signal}` : `exited with code ${code}`));
    });
  }

  /** Marks the child as never started, and rejects with `reason` (in the log and to the caller alike). */
  private notStarted(reason: string, cause?: unknown): Promise<never> {
    this.markExited(`could not be started: ${reason}`);
    return Promise.reject(new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream "${this.opts.upstream}" could not be started: ${reason}`, this.opts.upstream, cause === undefined ? undefined : { cause }));
  }

  /** Sends a request and resolves with its response; fails on timeout, abort or process exit. */
  request(msg: JsonRpcRequest, signal?: AbortSignal, timed = true): Promise<JsonRpcResponse> {
    if (!this.alive) return Promise.reject(this.exitedError('is not running'));
    if (this.backlogged('request refused')) {
      return Promise.reject(new GatewayError('GW_ERR_UPSTREAM_OVERLOADED', `Upstream "${this.opts.upstream}" is not reading its input; try again later`, this.opts.upstream));
    }
    if (this.pending.has(msg.id)) return Promise.reject(new Error(`duplicate request id ${String(msg.id)}`));
    const answer = this.pending.wait(msg, signal, (m) => this.send(m), timed);
    this.send(msg);
    return answer;
  }

  hold(id: JsonRpcId): void {
    this.pending.hold(id);
  }

  resume(id: JsonRpcId): void {
    this.pending.resume(id);
  }

  abandon(id: JsonRpcId): void {
    this.pending.abandon(id);
  }

  /** Writes one message (notification, response, or a request whose answer is not awaited). */
  send(msg: JsonRpcMessage): void {
    if (!this.alive || this.backlogged('message dropped')) return;
    // As bytes, encoded once here rather than by the pipe: a pipe counts a string's UTF-16 units in its
    // backlog (writableLength), and backlogged() bounds bytes.
    this.child!.stdin.write(Buffer.from(JSON.stringify(msg) + '\n', 'utf8'));
  }

  /**
   * True when what was written to the child and not yet read by it (Node buffers it for as long as the
   * pipe is full) has reached the upstream's maxMessageBytes, in bytes (send writes Buffers: until
   * 4 December strings were written, counted in UTF-16 units, and 3-byte characters queued 3 times the bound): a child that reads nothing more (stuck, or
   * blocked) is written nothing more, or each request would grow the gateway's memory until requestMs
   * failed it. Logged once until the child reads again.
   */
  private backlogged(what: string): boolean {
    const stdin = this.child!.stdin;
    const max = this.opts.maxLineBytes ?? MAX_WHOLE_BODY_BYTES;
    if (stdin.writableLength < max) return false;
    if (!this.starved) {
      this.starved = true;
      this.log.warn('stdio upstream is not reading its input; nothing more is written to it until it does', { pid: this.child!.pid, first: what, waitingBytes: stdin.writableLength, maxMessageBytes: max });
      stdin.once('drain', () => (this.starved = false));
    }
    return true;
  }

  /**
   * Closes stdin, then SIGTERM, then SIGKILL (2026-07-28 stdio §Shutdown); resolves when it is gone, and
   * what it left of its process group with it.
   */
  stop(graceMs = 2000): Promise<void> {
    // Once: a second caller (a session's end, then the host's close) waits on the same stop, not a second
    // round of signals. Nothing to stop before the child is spawned, and nothing remembered.
    if (!this.child) return Promise.resolve();
    return (this.stopped ??= this.stopOnce(graceMs));
  }

  private async stopOnce(graceMs: number): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (this.exited) return this.groupEnded;
    const gone = new Promise<void>((r) => this.exitWaiters.push(r));
    this.stopping = true;
    child.stdin.end();
    if (!(await within(gone, graceMs))) {
      child.kill('SIGTERM');
      if (!(await within(gone, graceMs))) {
        child.kill('SIGKILL');
        await gone;
      }
    }
    await this.groupEnded;
  }

  /**
   * The child is gone: what is left of its process group (helpers it started and did not stop, which would
   * otherwise run on, one set per session, as long as the host does) gets SIGTERM, then SIGKILL after the
   * grace. The group's id stays taken while any member lives, so the signal reaches no stranger.
   */
  private async endGroup(pgid: number): Promise<void> {
    if (!signalGroup(pgid, 'SIGTERM')) return;
    const deadline = Date.now() + GROUP_GRACE_MS;
    while (Date.now() < deadline) {
      // Not unref: during a shutdown this wait may be all that keeps the process alive until the group is gone.
      await new Promise((r) => setTimeout(r, 50));
      if (!groupLives(pgid)) return;
    }
    if (groupLives(pgid) && signalGroup(pgid, 'SIGKILL')) this.log.warn('stdio upstream left processes that ignored SIGTERM; killed', { pgid });
  }

  /**
   * Splits stdout into lines at the byte 0x0A, which UTF-8 never uses inside a character. A line is
   * bounded by maxLineBytes in bytes (the upstream's maxMessageBytes): until 4 December the decoded text's
   * length was counted, and a line of 3-byte characters was held up to 3 times the bytes configured.
   */
  private onStdout(chunk: Buffer): void {
    const max = this.opts.maxLineBytes ?? MAX_WHOLE_BODY_BYTES;
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start);
      if (nl === -1) break;
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.dropping === undefined && this.stdoutBytes + piece.length > max) this.startDropping(max);
      if (this.dropping !== undefined) {
        const { scanner, decoder } = this.dropping;
        scanner.feed(decoder.write(piece) + decoder.end());
        this.dropping = undefined;
        this.endDropped(scanner, max);
        continue;
      }
      const line = this.stdoutParts.length === 0 ? piece.toString('utf8') : Buffer.concat([...this.stdoutParts, piece]).toString('utf8');
      this.stdoutParts = [];
      this.stdoutBytes = 0;
      this.onLine(line);
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0) return;
    if (this.dropping !== undefined) return this.dropping.scanner.feed(this.dropping.decoder.write(rest));
    this.stdoutParts.push(rest);
    this.stdoutBytes += rest.length;
    if (this.stdoutBytes > max) this.startDropping(max);
  }

  /**
   * stdout is the only way a stdio server speaks (2025-11-25/basic/transports.mdx §stdio): a child that closed
   * it and runs on can answer nothing again, and until 4 December every call on it waited its whole time
   * limit and the child ran on, unused, until its session ended. It is now treated as gone: the calls in
   * flight fail at once, saying why, and its process group is ended (endGroup), the child with it, as after
   * a crash. A child that is exiting (its stdout ends first) is given a moment to be seen exiting.
   */
  private onStdoutEnd(): void {
    if (this.exited || this.stopping) return;
    setTimeout(() => {
      if (this.exited || this.stopping) return;
      this.markExited('closed its output (stdout) but kept running; stopped');
    }, STDOUT_CLOSED_GRACE_MS);
  }

  /** The line read so far is past its bound: the rest is read past, not kept; only which request it answers, if any. */
  private startDropping(max: number): void {
    this.log.warn('stdio upstream wrote an oversized line; dropped', { maxLineBytes: max });
    const dropping = { scanner: new AnsweredIdScanner(), decoder: new StringDecoder('utf8') };
    for (const part of this.stdoutParts) dropping.scanner.feed(dropping.decoder.write(part));
    this.stdoutParts = [];
    this.stdoutBytes = 0;
    this.dropping = dropping;
  }

  /** A dropped line that answered a request fails that request now, rather than at its time limit. */
  private endDropped(scanner: AnsweredIdScanner, max: number): void {
    const id = scanner.answered();
    if (id === undefined) return;
    this.pending.fail(id, new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.opts.upstream}" answered with a message larger than its maxMessageBytes (${max})`, this.opts.upstream));
  }

  private onLine(line: string): void {
    const text = line.trim();
    if (text === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      this.log.warn('stdio upstream wrote a line that is not JSON; ignored', { line: excerpt(this.log, text, STDOUT_EXCERPT) });
      return;
    }
    // A 2025-03-26 batch (that revision's stdio allows them): its messages one by one, as every reader
    // downstream takes them (as protocol/sse-batch.ts splits one on an HTTP stream).
    const members = Array.isArray(parsed) ? parsed : [parsed];
    for (const member of members) {
      // JSON that is no JSON-RPC message (a structured logger writing to stdout: pino, structlog, a JSON
      // banner) is the server's own log, not MCP (transports.mdx §stdio: nothing but valid MCP messages on
      // stdout). Until 4 December it was routed as a message, and a perSession client was sent it, whatever
      // it held; now it is logged for the operator and skipped, as a line that is not JSON is.
      const classified = member !== null && typeof member === 'object' && !Array.isArray(member) ? classifyMessage(member) : undefined;
      if (classified?.ok !== true) {
        this.log.warn('stdio upstream wrote a line that is not a JSON-RPC message; ignored', { line: excerpt(this.log, members.length === 1 ? text : JSON.stringify(member) ?? String(member), STDOUT_EXCERPT) });
        continue;
      }
      this.onJsonRpc(classified.message);
    }
  }

  private onJsonRpc(msg: JsonRpcMessage): void {
    if (this.pending.settle(msg)) return;
    if (isLateAnswer(msg)) return this.log.debug('a late answer from the upstream, for a request no longer waiting; dropped', { id: (msg as { id?: unknown }).id });
    this.onMessage(msg);
  }

  private pipeStderr(child: ChildProcessWithoutNullStreams): void {
    child.stderr.setEncoding('utf8');
    let partial = '';
    const logLine = (l: string): void => {
      const line = excerpt(this.log, withoutCr(l), STDERR_LINE_LIMIT);
      this.log.info('stdio upstream stderr', { pid: child.pid, line });
      this.lastStderr.push(line);
      if (this.lastStderr.length > LAST_STDERR_LINES) this.lastStderr.shift();
    };
    this.stderrEnded = new Promise((resolve) => child.stderr.once('close', () => resolve()));
    child.stderr.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      // A line still coming is kept up to its excerpt and the margin scrubbed with it, never more.
      partial = (lines.pop() ?? '').slice(0, STDERR_LINE_LIMIT + SCRUB_MARGIN);
      for (const l of lines) if (l.trim() !== '') logLine(l);
    });
    // The last line of a child that exits may have no line break after it, and often says why it exited.
    child.stderr.on('end', () => {
      if (partial.trim() !== '') logLine(partial);
      partial = '';
    });
  }

  private markExited(reason: string): void {
    if (this.exited) return;
    this.exited = true;
    const pgid = this.child?.pid;
    if (pgid !== undefined) this.groupEnded = this.endGroup(pgid).then(() => releaseGroup(pgid));
    if (this.child !== undefined) {
      const pid = this.child.pid;
      if (this.stopping) this.log.info('stdio upstream stopped', { pid, reason });
      // Why a child exited on its own is usually in its last stderr lines, logged at info one by one: the
      // warning carries them, or an operator who reads warnings only learned the exit code alone. The exit
      // may be seen before those lines are read, so it waits (briefly) for the end of stderr.
      else void within(this.stderrEnded, STDERR_TAIL_WAIT_MS).then(() => this.log.warn('stdio upstream exited', { pid, reason, lastStderr: [...this.lastStderr] }));
    }
    this.pending.failAll(() => this.exitedError(reason));
    for (const w of this.exitWaiters.splice(0)) w();
    this.onExit(reason);
  }

  private exitedError(reason: string): GatewayError {
    return new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream "${this.opts.upstream}" process ${reason}`, this.opts.upstream);
  }
}

/**
 * At most `max` characters of what a child wrote, for the log: scrubbed before it is cut, since the log's
 * own scrubbing of the finished line would no longer recognise a secret the cut ran through.
 */
function excerpt(log: Logger, text: string, max: number): string {
  if (text.length <= max) return text;
  return log.scrub(text.slice(0, max + SCRUB_MARGIN)).slice(0, max);
}

/**
 * A stderr line without the carriage return of a CRLF line break (Windows programs, a Python script writing
 * \r\n): it is part of the line break, not of the line, and logged it ended every such line in a stray
 * `\r` that a search for the line's text did not match. Other text is kept.
 */
function withoutCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

/**
 * Gatehouse's NODE_OPTIONS as a child inherits it: without the inspector's flags (--inspect, --inspect-brk,
 * --inspect-wait, --inspect-port, --debug-port), which are for debugging Gatehouse. Inherited, --inspect-brk
 * had every Node child wait for a debugger before running a line (each initialize timed out), and
 * --inspect on a fixed port had each child fight Gatehouse for it. Undefined when nothing is left. Tokens
 * are split as Node splits them: at spaces, a double-quoted one kept whole.
 */
export function withoutInspector(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const tokens = value.match(/(?:[^\s"]+|"(?:[^"\\]|\\.)*")+/g) ?? [];
  const kept: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    const flag = /^--(inspect(-brk|-wait|-port)?|debug-port)(=|$)/.exec(token);
    if (flag === null) {
      kept.push(token);
      continue;
    }
    // The port flags may take their value as the next token.
    if ((flag[2] === '-port' || flag[1] === 'debug-port') && flag[3] === '' && tokens[i + 1] !== undefined && !tokens[i + 1]!.startsWith('-')) i++;
  }
  return kept.length === 0 ? undefined : kept.join(' ');
}

/** Why `path` cannot be a working directory ("does not exist", "is not a directory"), or undefined when it can. */
function directoryProblem(path: string): string | undefined {
  try {
    return statSync(path).isDirectory() ? undefined : 'is not a directory';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'does not exist';
    if (code === 'ENOTDIR') return 'is not a directory';
    // Anything else (EACCES on a parent, a NUL the config checks refuse): the spawn says what it says.
    return undefined;
  }
}

/** Signals a process group; false when it has no member left (or is not ours to signal). */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether a process group has a member that still runs. A member that ended is a zombie until whoever
 * adopted it reaps it (an init may take a second; node as PID 1 never does), and a signal to the group
 * still "reaches" it: where /proc can be read, zombies do not count.
 */
function groupLives(pgid: number): boolean {
  if (!signalGroup(pgid, 0)) return false;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    try {
      // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses, so read after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ', 3);
      if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}

function within(p: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    p.then(() => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

