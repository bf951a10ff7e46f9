// Loaded into a process under test with `node --import bench/alloc-hook.mjs` (bench/alloc.ts). The first
// SIGUSR2 starts counting, the second stops and writes what was counted to $GATEHOUSE_ALLOC_OUT:
//
//   GATEHOUSE_ALLOC_MODE=heap      V8's sampling heap profiler, with the objects young and old collections
//                                  have already freed kept in (the default drops them, and per-call garbage
//                                  is what a hop makes): the bytes allocated, by function;
//   GATEHOUSE_ALLOC_MODE=promises  async_hooks: the promises, ticks, timers and immediates created.
//
// Only one at a time: async_hooks make every await create a promise more, and slow the process down.
// Plain JavaScript: the process under test runs the built dist/, without tsx.

import { createHook } from 'node:async_hooks';
import inspector from 'node:inspector';
import { renameSync, writeFileSync } from 'node:fs';

const out = process.env.GATEHOUSE_ALLOC_OUT;
const mode = process.env.GATEHOUSE_ALLOC_MODE ?? 'heap';
let on = false;

/** Whole or not at all: the bench waits for the file to appear. */
function save(value) {
  writeFileSync(`${out}.part`, JSON.stringify(value));
  renameSync(`${out}.part`, out);
}

if (mode === 'promises') {
  const counts = new Map();
  // Where promises are made: one in PROMISE_SITE_EVERY, at random (a call makes its promises in a fixed
  // order, so every n-th would favour some sites), is traced to the first frame of the code under test
  // (dist/ or a dependency), so `alloc.ts` can say which functions make them. Sampled, as a stack costs.
  const sites = new Map();
  createHook({
    init(_id, type) {
      if (!on) return;
      counts.set(type, (counts.get(type) ?? 0) + 1);
      if (type === 'PROMISE' && Math.random() * PROMISE_SITE_EVERY < 1) {
        const site = promiseSite();
        sites.set(site, (sites.get(site) ?? 0) + PROMISE_SITE_EVERY);
      }
    },
  }).enable();
  process.on('SIGUSR2', () => {
    if (on) save({ counts: Object.fromEntries(counts), promiseSites: Object.fromEntries(sites) });
    else {
      counts.clear();
      sites.clear();
    }
    on = !on;
  });
} else {
  const session = new inspector.Session();
  session.connect();
  const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
  process.on('SIGUSR2', () => {
    const step = on
      ? post('HeapProfiler.stopSampling').then(({ profile }) => save(profile))
      : post('HeapProfiler.enable').then(() => post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }));
    on = !on;
    step.catch((err) => process.stderr.write(`alloc-hook: ${err.message}\n`));
  });
}

const PROMISE_SITE_EVERY = 8;

/** The first frame of the code under test on the current stack: `function file:line`. */
function promiseSite() {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 16;
  const holder = {};
  Error.captureStackTrace(holder, promiseSite);
  Error.stackTraceLimit = limit;
  for (const line of String(holder.stack).split('\n').slice(1)) {
    const at = line.indexOf('/dist/') !== -1 ? line.indexOf('/dist/') + 6 : line.indexOf('node_modules/') !== -1 ? line.indexOf('node_modules/') + 13 : -1;
    if (at === -1) continue;
    const name = line.trim().replace(/^at (async )?/, '').split(' (')[0];
    return `${name} ${line.slice(at).replace(/:\d+\)?$/, '')}`;
  }
  // Made inside Node itself: the innermost frame names where.
  const first = String(holder.stack).split('\n')[1] ?? '';
  return `(node) ${first.trim().replace(/^at (async )?/, '')}`;
}
