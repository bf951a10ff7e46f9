// An observer that throws (a log line, a metric, a span) must not end the process: diagnostics_channel
// rethrows a subscriber's error on the next tick as an uncaught exception. On the answer event a failing
// subscriber withholds the answer instead, as a failed audit write does (fail closed).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import { subscribe, type CallAnswerEvent } from '../../../src/pipeline/events.js';

test('a throwing subscriber is contained and reported once; the others still hear the event', async () => {
  const channel = diagnostics.channel('gatehouse:test:throwing');
  const warnings: string[] = [];
  const onWarning = (w: Error): void => void warnings.push(w.message);
  process.on('warning', onWarning);
  const heard: unknown[] = [];
  const stopBad = subscribe(channel, () => {
    throw new Error('observer bug');
  });
  const stopGood = subscribe(channel, (e) => heard.push(e));
  try {
    channel.publish({ n: 1 });
    channel.publish({ n: 2 });
    // An uncaught exception would surface on the next tick and fail this test.
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(heard, [{ n: 1 }, { n: 2 }]);
    assert.equal(warnings.filter((w) => w.includes('observer bug')).length, 1, 'said once');
  } finally {
    stopBad();
    stopGood();
    process.off('warning', onWarning);
  }
});

test('on the answer event, a subscriber that throws hands the answer a failed piece of work', async () => {
  const channel = diagnostics.channel('gatehouse:test:answer');
  const stop = subscribe<CallAnswerEvent>(channel, () => {
    throw new Error('record could not be built');
  });
  const work: Array<Promise<unknown>> = [];
  try {
    channel.publish({ waitFor: (w: Promise<unknown>) => void work.push(w), addMeta: () => {} });
    assert.equal(work.length, 1);
    await assert.rejects(work[0]!, /record could not be built/);
  } finally {
    stop();
  }
});
