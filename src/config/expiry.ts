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
  const m = EXPIRES.exec(expires);
  if (m === null) return -Infinity;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // Day 0 of the next month is this month's last day.
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return -Infinity;
  if (m[4] === undefined) return Date.UTC(year, month - 1, day) + 86_400_000;
  const [hour, minute, second] = [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
  if (hour > 23 || minute > 59 || second > 59) return -Infinity;
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  let offsetMinutes = 0;
  if (m[9] !== undefined) {
    const [oh, om] = [Number(m[10]), Number(m[11])];
    if (oh > 23 || om > 59) return -Infinity;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  return Date.UTC(year, month - 1, day, hour, minute, second, ms) - offsetMinutes * 60_000;
}
