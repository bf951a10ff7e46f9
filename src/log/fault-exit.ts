// The process's last resort: a fault nothing caught (an uncaught exception, or a rejection nobody handled)
// ends the process with exit code 1, as Node's default would (fail closed: a gateway in a state nobody
// knows must not keep governing calls), but says so in one `error` line through the logger. Node's own
// report is the raw stack on stderr: it quotes the error's message, which may hold request data or a
// credential, unscrubbed, and breaks the JSON-lines stream a log shipper reads.

import type { Logger } from './logger.js';

export type Fault = 'uncaughtException' | 'unhandledRejection';

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
  const handler =
    (fault: Fault) =>
    (reason: unknown): void => {
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
  const onException = handler('uncaughtException');
  const onRejection = handler('unhandledRejection');
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
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
