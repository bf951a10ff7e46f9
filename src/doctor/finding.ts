// What `gatehouse doctor` reports: one finding per thing checked, each with a verdict, what was found and,
// when something is to be done, a hint. The checks live beside this file; printing is the CLI's.

import { looksLikeSecretEnv } from '../config/secrets.js';
import { redactText, REDACTED } from '../log/logger.js';

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

/**
 * A stdio command line fit to print: servers often take their credentials as arguments (`--api-key
 * ${env:KEY}`, a database URL with its password), and doctor's output ends up in CI and `helm test` logs.
 * The value of an option named like a credential, a URL's password and credential-shaped text are hidden.
 */
export function printableCommand(command: readonly string[]): string {
  const out: string[] = [];
  let hideNext = false;
  for (const arg of command) {
    if (hideNext && !arg.startsWith('-')) {
      out.push(REDACTED);
      hideNext = false;
      continue;
    }
    hideNext = false;
    const option = /^(--?[A-Za-z][\w.-]*)(=.*)?$/s.exec(arg);
    if (option !== null && looksLikeSecretEnv(option[1]!.replace(/^-+/, ''))) {
      if (option[2] !== undefined) out.push(`${option[1]}=${REDACTED}`);
      else {
        out.push(arg);
        hideNext = true;
      }
      continue;
    }
    out.push(redactText(withoutUrlPassword(arg)));
  }
  return out.join(' ');
}

/** `postgres://app:pw@db/app` → `postgres://app:[redacted]@db/app`, anywhere in an argument. */
function withoutUrlPassword(arg: string): string {
  return arg.replace(/([a-z][a-z0-9+.-]*:\/\/[^\s:/?#@]*):[^\s/?#@]*@/gi, `$1:${REDACTED}@`);
}
