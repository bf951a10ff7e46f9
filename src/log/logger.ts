// A small JSON-lines logger: one object per line on stderr, levels from config. Fields never carry
// credentials: callers pass names and ids, not header values.

import type { LogLevel } from '../config/types.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  enabled(level: LogLevel): boolean;
}

export type LogWrite = (line: string) => void;

export function createLogger(level: LogLevel, write: LogWrite = (l) => process.stderr.write(l), base: Record<string, unknown> = {}): Logger {
  const min = RANK[level];
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (RANK[lvl] < min) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...base, ...fields }, errorReplacer) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(level, write, { ...base, ...fields }),
    enabled: (lvl) => RANK[lvl] >= min,
  };
}

// Errors serialize to {} by default; keep their name, message and code so logs say what went wrong.
function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, message: value.message, ...(code !== undefined ? { code } : {}) };
  }
  return value;
}
