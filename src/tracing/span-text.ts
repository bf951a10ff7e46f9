// Client-chosen strings (method, tool and prompt names, the JSON-RPC id, the subject) made fit for a span:
// scrubbed as the log scrubs its lines (`Logger.scrub`: credential shapes and the configured secret values;
// a span goes to a backend more people read than the log) and cut at a bound, so one request cannot put a
// megabyte into every span the export queue holds.

import type { Logger } from '../log/logger.js';

/**
 * How far past the cut a string is scrubbed: a credential that straddles the cut is then found whole,
 * not left as a prefix too short for its shape (a `gh_` key under 20 characters) or a configured secret
 * cut in two, which would no longer match.
 */
const SCRUB_SLACK = 512;
/** Bounded: a client that sends ever new names empties it, and pays what every span paid without it. */
const CLEAN_TEXTS_MAX = 1024;

export class SpanTexts {
  /**
   * Client strings seen before with nothing to scrub: the same methods and tool names recur on every span.
   * Per tracer, as the secrets are the gateway's own, and emptied when a secret is added (a reload): a
   * string that held none before may hold the new one.
   */
  private readonly clean = new Set<string>();
  private generation: number;

  constructor(
    private readonly log: Pick<Logger, 'scrub' | 'secretsGeneration'>,
    private readonly defaultMax: number,
  ) {
    this.generation = log.secretsGeneration();
  }

  /** `value` scrubbed and cut at `max` characters; a value that is not a string as its JSON text. */
  text(value: unknown, max: number = this.defaultMax): string {
    const s = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
    const generation = this.log.secretsGeneration();
    if (generation !== this.generation) {
      this.clean.clear();
      this.generation = generation;
    }
    if (s.length <= max && this.clean.has(s)) return s;
    const scrubbed = this.log.scrub(s.length <= max + SCRUB_SLACK ? s : s.slice(0, max + SCRUB_SLACK));
    const text = scrubbed.length <= max ? scrubbed : `${scrubbed.slice(0, max)}…`;
    // Kept only when nothing was cut or scrubbed, so the set never holds a credential a client sent.
    if (text === s) {
      if (this.clean.size >= CLEAN_TEXTS_MAX) this.clean.clear();
      this.clean.add(s);
    }
    return text;
  }
}
