// The SQLite store's reads of the audit log (sqlite-worker.ts), kept apart so a test can ask SQLite how it
// runs them (test/unit/store/sqlite-audit-reads.test.ts).

/**
 * The records after a seq, in seq order, within a time window (all of time when none is asked). Along the
 * primary key, the window a filter on the rows passed (`+time_ms` keeps SQLite off the time index): through
 * the index, which a window of all time does not narrow, SQLite sorted every record in the window to give
 * the first page, so each page cost the whole log and a walk of it (verify, export) the log's square. A
 * narrow window is now found by walking the log from `afterSeq` once, not by sorting it once per page.
 */
export const AUDIT_AFTER_SQL = 'SELECT seq, record FROM audit WHERE seq > ? AND +time_ms >= ? AND +time_ms <= ? ORDER BY seq LIMIT ?';
