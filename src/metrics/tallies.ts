// The per-call metrics, counted in plain cells. prom-client validates and hashes a label object on every
// `inc` and `observe` (300–400 ns each in a loop, four per call: about 2% of a pass-through call), so the
// metrics every call touches are kept here instead: a cell per label set, found through one Map per label
// (no string built per call). Counters are handed to prom-client when it collects them for a scrape; the
// histograms are registry metrics of their own, in prom-client's exposition shape.

import type { Counter, Registry } from 'prom-client';

/** Up to four label values, in the order of the label names. */
type Values = readonly [string, string?, string?, string?];

/** One cell per label set; the label object is built once, when the set is first seen. */
class LabelCells<C> {
  private readonly root = new Map<string, unknown>();
  readonly all: C[] = [];

  constructor(
    private readonly names: readonly string[],
    private readonly make: (labels: Record<string, string>) => C,
  ) {
    if (names.length < 1 || names.length > 4) throw new Error('a tallied metric has one to four labels');
  }

  at(v0: string, v1?: string, v2?: string, v3?: string): C {
    const last = this.names.length - 1;
    let level = this.root;
    for (let i = 0; i < last; i++) {
      const v = (i === 0 ? v0 : i === 1 ? v1 : v2) ?? '';
      let next = level.get(v) as Map<string, unknown> | undefined;
      if (next === undefined) level.set(v, (next = new Map()));
      level = next;
    }
    const key = (last === 0 ? v0 : last === 1 ? v1 : last === 2 ? v2 : v3) ?? '';
    let cell = level.get(key) as C | undefined;
    if (cell === undefined) {
      const values: Values = [v0, v1, v2, v3];
      const labels: Record<string, string> = {};
      this.names.forEach((name, i) => (labels[name] = values[i] ?? ''));
      cell = this.make(labels);
      level.set(key, cell);
      this.all.push(cell);
    }
    return cell;
  }

  clear(): void {
    this.root.clear();
    this.all.length = 0;
  }
}

/** Counts for a prom-client Counter, handed to it (`flushInto`) from the counter's `collect`. */
export class CounterTally {
  private readonly cells: LabelCells<{ labels: Record<string, string>; pending: number }>;

  constructor(labelNames: readonly string[]) {
    this.cells = new LabelCells(labelNames, (labels) => ({ labels, pending: 0 }));
  }

  /** One more for this label set (values in the order of the label names). */
  inc(v0: string, v1?: string, v2?: string, v3?: string): void {
    this.cells.at(v0, v1, v2, v3).pending++;
  }

  flushInto(counter: Counter<string>): void {
    for (const cell of this.cells.all) {
      if (cell.pending === 0) continue;
      counter.inc(cell.labels, cell.pending);
      cell.pending = 0;
    }
  }
}

interface HistogramCell {
  labels: Record<string, string>;
  /** Observations per bucket, not yet cumulative; one past the last bound is +Inf's own. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A value line of prom-client's metric shape, as its registry formats it. */
interface ValueLine {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
  /** prom-client's own lines carry this member: null on buckets, undefined on `_sum` and `_count`. */
  exemplar: null | undefined;
}

/**
 * A Prometheus histogram registered in a prom-client registry, written exactly as prom-client's own
 * Histogram writes it (`_bucket` with `le` first, `+Inf`, `_sum`, `_count`), but observed without building
 * or hashing a label object per call.
 */
export class TalliedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly cells: LabelCells<HistogramCell>;

  constructor(
    readonly name: string,
    readonly help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registers: readonly Registry[],
  ) {
    this.cells = new LabelCells(labelNames, (labels) => ({ labels, counts: new Float64Array(bounds.length + 1), sum: 0, count: 0 }));
    // The registry takes any object with prom-client's metric shape (name, help, type, get, reset).
    for (const registry of registers) registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  observe(value: number, v0: string, v1?: string, v2?: string, v3?: string): void {
    const cell = this.cells.at(v0, v1, v2, v3);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    cell.counts[i]!++;
    cell.sum += value;
    cell.count++;
  }

  getForPromString(): { name: string; help: string; type: string; values: ValueLine[]; aggregator: string } {
    const values: ValueLine[] = [];
    const bucket = `${this.name}_bucket`;
    for (const cell of this.cells.all) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += cell.counts[i]!;
        values.push({ labels: { le: this.bounds[i]! }, sharedLabels: cell.labels, value: cumulative, metricName: bucket, exemplar: null });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: cell.labels, value: cell.count, metricName: bucket, exemplar: null });
      values.push({ labels: {}, sharedLabels: cell.labels, value: cell.sum, metricName: `${this.name}_sum`, exemplar: undefined });
      values.push({ labels: {}, sharedLabels: cell.labels, value: cell.count, metricName: `${this.name}_count`, exemplar: undefined });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The JSON form (`registry.getMetricsAsJSON`): each line's labels whole, as prom-client gives them. */
  async get(): Promise<ReturnType<TalliedHistogram['getForPromString']>> {
    const data = this.getForPromString();
    data.values = data.values.map(({ sharedLabels, ...line }) => ({ ...line, labels: { ...line.labels, ...sharedLabels } }));
    return data;
  }

  reset(): void {
    this.cells.clear();
  }
}
