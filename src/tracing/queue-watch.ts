// The BatchSpanProcessor drops a finished span when its queue is full and says so only to OpenTelemetry's
// diag logger, a no-op unless one is set: a collector that is slow (not failing) lost spans without a word.
// It exposes no count, so this keeps its own: a span processor placed before it sees every span it will
// be offered, and the exporter sees every span it takes out of the queue, so the difference is the queue's
// length. That holds because the batch processor hands a batch to the exporter in the same turn as it takes
// it from the queue (it waits first only for a resource's async attributes, which Gatehouse's has none of).

import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** W3C trace flag `sampled`: only sampled spans enter the batch processor's queue. */
const SAMPLED = 1;

export interface QueueWatch {
  /** Goes before the BatchSpanProcessor in the provider's list. */
  readonly processor: SpanProcessor;
  /** Wraps the BatchSpanProcessor's exporter. */
  exporter(inner: SpanExporter): SpanExporter;
}

/** Calls `dropped` with each span the batch processor's queue of `maxQueueSize` has no room for. */
export function watchQueue(maxQueueSize: number, dropped: (spans: number) => void): QueueWatch {
  let queued = 0;
  let stopped = false;
  return {
    processor: {
      onStart(_span: Span, _parent: Context): void {},
      onEnd(span: ReadableSpan): void {
        if (stopped || (span.spanContext().traceFlags & SAMPLED) === 0) return;
        if (queued >= maxQueueSize) dropped(1);
        else queued++;
      },
      forceFlush: () => Promise.resolve(),
      shutdown(): Promise<void> {
        stopped = true;
        return Promise.resolve();
      },
    },
    exporter(inner) {
      return {
        export(spans, done) {
          queued = Math.max(0, queued - spans.length);
          inner.export(spans, done);
        },
        shutdown: () => inner.shutdown(),
        forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
      };
    },
  };
}
