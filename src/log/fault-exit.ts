// The process's last resort: a fault nothing caught (an uncaught exception, or a rejection nobody handled)
// ends the process with exit code 1, as Node's default would (fail closed: a gateway in a state nobody
// knows must not keep governing calls), but says so in one `error` line through the logger. Node's own
// report is the raw stack on stderr: it quotes the error's message, which may hold request data or a
// credential, unscrubbed, and breaks the JSON-lines stream a log shipper reads.

import { redactText, type Logger } from './logger.js';

/** `commandError`: an error a command let escape, up to main.ts's last catch (reportEscaped). */
export type Fault = 'uncaughtException' | 'unhandledRejection' | 'commandError';

/** The installed handlers' report, while `serve`'s logger exists: main.ts's last catch goes through it. */
let installed: ((fault: Fault, reason: unknown) => void) | undefined;

/** At most this many stack frames are logged: where the fault came from, not a wall of text. */
const MAX_FRAMES = 20;
/** A frame line of a V8 stack: a code location, never the message (which is what may quote request data). */
const FRAME = /^\s+at /;

/**
 * Installs the handlers for `serve`, once its logger exists; returns the function that removes them.
 * `exit`: process.exit, or a test's stand-in.
 */
export function exitOnFault(log: Logger, exit: (code: number) => void = (code) => process.exit(code)): () => void {
  let exiting = false;
  const report = (fault: Fault, reason: unknown): void => {
    // A second fault while the first is being reported: the process is leaving anyway.
    if (exiting) return;
    exiting = true;
    try {
      // The error's name, message and code (scrubbed with the line, as every field is) and its frames;
      // never the stack text, whose first lines are the message again, unscrubbed by position.
      log.error('gatehouse stopped: a fault nothing handled', { fault, err: reason, ...framesOf(reason) });
      // Batched lines would wait for a timer that never fires: written now, before the exit.
      log.flush();
    } finally {
      exit(1);
    }
  };
  const onException = (reason: unknown): void => report('uncaughtException', reason);
  const onRejection = (reason: unknown): void => report('unhandledRejection', reason);
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  installed = report;
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
    if (installed === report) installed = undefined;
  };
}

/**
 * An error a command let escape (main.ts's last catch). Once `serve`'s logger exists, it is the same fault
 * line as an uncaught exception, with the configured secrets scrubbed too, and the process exits 1: the
 * gateway may be listening, and must not go on serving in a state nobody knows with exit code 1 pending.
 * Before that (or in another command), one line with the error's name and message, credential shapes
 * scrubbed, never the stack, whose text quotes the message again and may hold request data.
 * `write`: stderr, or a test's stand-in. True when the process is leaving through the logger's report.
 */
export function reportEscaped(err: unknown, write: (text: string) => void = (text) => void process.stderr.write(text)): boolean {
  if (installed !== undefined) {
    installed('commandError', err);
    return true;
  }
  write(`gatehouse: ${redactText(describe(err))}\n`);
  return false;
}

/** Name and message, as a line says them; anything else thrown, as text. */
function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  try {
    return String(err);
  } catch {
    return 'a value that cannot be printed was thrown';
  }
}

function framesOf(reason: unknown): { frames?: string[] } {
  const stack = reason instanceof Error ? reason.stack : undefined;
  if (typeof stack !== 'string') return {};
  const frames = stack
    .split('\n')
    .filter((line) => FRAME.test(line))
    .slice(0, MAX_FRAMES)
    .map((line) => line.trim());
  return frames.length > 0 ? { frames } : {};
}
