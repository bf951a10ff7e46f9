// The LoggingLevel values (RFC 5424 severities, least severe first), and how two compare
// (2026-07-28/server/utilities/logging.mdx §Log Levels).

export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;

const SEVERITY = new Map<string, number>(LOG_LEVELS.map((level, i) => [level, i]));

/**
 * Whether a message of `level` goes to a receiver that asked for `threshold` and above. A level that is not
 * one of the eight cannot be ranked, and is let through rather than hidden.
 */
export function atOrAbove(level: unknown, threshold: string): boolean {
  const severity = typeof level === 'string' ? SEVERITY.get(level) : undefined;
  const wanted = SEVERITY.get(threshold);
  return severity === undefined || wanted === undefined || severity >= wanted;
}
