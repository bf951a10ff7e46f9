// A small JSON-lines logger: one object per line on stderr, levels from config. Callers pass names and
// ids, not header values; as a second line of defence every line is scrubbed of anything shaped like a
// credential (fields named like one, bearer values, JWTs, Gatehouse API keys), so a careless field added
// later cannot leak a token.

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

/** Field names whose values are secrets, compared lower-case with `-` and `_` removed. */
const SECRET_FIELD = /^(authorization|proxyauthorization|cookie|setcookie|password|secret|clientsecret|token|accesstoken|refreshtoken|idtoken|apikey|xapikey|key|bearer|credentials?)$/;
/** Ids that name a credential without being one, and stay readable. */
const SAFE_FIELDS = new Set(['keyId', 'tokenId']);
/** Credential shapes inside free text: bearer values, JWTs (three base64url parts), Gatehouse keys. */
const SECRET_TEXT = /(Bearer\s+)[A-Za-z0-9\-._~+/]+=*|eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*|gh_[A-Za-z0-9_-]{20,}/gi;
export const REDACTED = '[redacted]';

export function redactText(s: string): string {
  return s.replace(SECRET_TEXT, (_match, bearer: string | undefined) => (bearer ? `${bearer}${REDACTED}` : REDACTED));
}

// Errors serialize to {} by default; keep their name, message and code so logs say what went wrong.
function errorReplacer(key: string, value: unknown): unknown {
  if (key !== '' && !SAFE_FIELDS.has(key) && SECRET_FIELD.test(key.toLowerCase().replace(/[-_]/g, ''))) return value === undefined ? value : REDACTED;
  if (typeof value === 'string') return redactText(value);
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, message: redactText(value.message), ...(code !== undefined ? { code } : {}) };
  }
  return value;
}
