// A Logger that keeps the warnings and errors told to it, for a check that opens a part which reports
// through a logger (the Redis store's notices, store/redis-notices.ts): what it says becomes the check's
// finding instead of a JSON line on stderr, or nothing at all when no logger is given.

import { redactText, type Logger } from '../log/logger.js';

export interface NoticeLog {
  log: Logger;
  /** The warn and error messages told so far, in order, each once. */
  readonly notices: readonly string[];
}

export function noticeLog(): NoticeLog {
  const notices: string[] = [];
  const keep = (msg: string): void => {
    // The parts never log a password; scrubbed anyway, as every logged line is.
    const text = redactText(msg);
    if (!notices.includes(text)) notices.push(text);
  };
  const log: Logger = {
    debug: () => {},
    info: () => {},
    warn: keep,
    error: keep,
    child: () => log,
    enabled: (level) => level === 'warn' || level === 'error',
    addSecrets: () => {},
    scrub: redactText,
    secretsGeneration: () => 0,
    flush: () => {},
    infoMembers: () => {},
  };
  return { log, notices };
}
