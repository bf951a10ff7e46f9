// What `gatehouse doctor` reports: one finding per thing checked, each with a verdict, what was found and,
// when something is to be done, a hint. The checks live beside this file; printing is the CLI's.

export type Verdict = 'ok' | 'warn' | 'fail';

export interface Finding {
  /** What was checked, e.g. `upstream crm: era` or `listen 127.0.0.1:8080`. */
  check: string;
  verdict: Verdict;
  /** What was found, in one line. */
  detail: string;
  /** What to do about it. */
  hint?: string;
  /** Facts for `--json` readers (era, tool counts, algorithms…). */
  data?: Record<string, unknown>;
}

/** How long each check may take, and how long to keep trying an upstream that refuses connections. */
export interface CheckLimits {
  timeoutMs: number;
  waitMs: number;
}

export function finding(check: string, verdict: Verdict, detail: string, hint?: string, data?: Record<string, unknown>): Finding {
  return { check, verdict, detail, ...(hint !== undefined ? { hint } : {}), ...(data !== undefined ? { data } : {}) };
}

/** Rejects with "`what` did not finish in N ms" when `work` takes longer than `ms`. */
export async function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish in ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** An error's message without its stack, for a finding's detail. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message || err.name : String(err);
}

/** A URL fit to print: configured URLs may carry credentials in userinfo or the query. */
export function printableUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}
