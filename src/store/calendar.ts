// Calendar windows in UTC for budgets: a minute, an hour, a day, or a calendar month (28 to 31 days). The
// SQLite store computes them here; the Redis store computes the same in Lua on Redis' clock.

import type { CalendarWindow } from './store.js';

/** The window around `nowMs`: its start and end (epoch ms, end exclusive). */
export function calendarWindow(nowMs: number, window: CalendarWindow): { start: number; end: number } {
  switch (window) {
    case 'minute':
    case 'hour':
    case 'day': {
      const size = window === 'minute' ? 60_000 : window === 'hour' ? 3_600_000 : 86_400_000;
      const start = nowMs - (nowMs % size);
      return { start, end: start + size };
    }
    case 'month': {
      const d = new Date(nowMs);
      const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
      const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
      return { start, end };
    }
  }
}
