// When an API key's `expires` value ends its life. Parsed here, next to the config it comes from, so the
// config checks and the key store agree on what a date means. The fields are read and range-checked one by
// one: Date.parse rolls an impossible day over (2026-02-30 is read as 2 March, T24:00 as the next day), which
// would move a key's end to a day nobody wrote.

/** YYYY-MM-DD, then optionally a time (T, t or a space) with minutes, seconds, a fraction and an offset. */
const EXPIRES = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(?:([Zz])|([+-])(\d{2}):(\d{2}))?)?$/;

/**
 * Epoch ms after which the key is refused. A date alone (YYYY-MM-DD) means the key is good through that
 * whole day, UTC; a time without an offset is UTC. A value that names no real day or time is -Infinity: it
 * refuses the key rather than letting it live forever, and the config checks refuse the config.
 */
export function expiryOf(expires: string): number {
  const t = parseDateTime(expires);
  if (t === undefined) return -Infinity;
  return t.dateOnly ? t.ms + DAY_MS : t.ms;
}

const DAY_MS = 86_400_000;

/**
 * A date (its first instant, UTC, with `dateOnly`) or a date and time (UTC without an offset), written as
 * YYYY-MM-DD or RFC 3339; undefined when it names no real day or time. The command line's time flags read
 * dates with this too, so a date means the same there as in the config.
 */
export function parseDateTime(text: string): { ms: number; dateOnly: boolean } | undefined {
  const m = EXPIRES.exec(text);
  if (m === null) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // Day 0 of the next month is this month's last day.
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined;
  if (m[4] === undefined) return { ms: Date.UTC(year, month - 1, day), dateOnly: true };
  const [hour, minute, second] = [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  let offsetMinutes = 0;
  if (m[9] !== undefined) {
    const [oh, om] = [Number(m[10]), Number(m[11])];
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  return { ms: Date.UTC(year, month - 1, day, hour, minute, second, ms) - offsetMinutes * 60_000, dateOnly: false };
}
