// Loaded into a Gatehouse under test with `node --import bench/profile-hook.mjs` (bench/profile.ts
// --warmup): the first SIGUSR2 starts V8's CPU profiler on the main thread through an in-process inspector
// session, the second stops it and writes the profile to $GATEHOUSE_PROFILE_OUT. So a profile can cover only
// the measured phase of a process that has been warmed up, where `--cpu-prof` covers its whole life.
// Plain JavaScript: the process under test runs the built dist/, without tsx.

import inspector from 'node:inspector';
import { renameSync, writeFileSync } from 'node:fs';

const out = process.env.GATEHOUSE_PROFILE_OUT;
const session = new inspector.Session();
session.connect();
let profiling = false;

/** Inspector calls, one after the other; a failure goes to stderr, where the bench shows a child's last lines. */
function post(method, params) {
  return new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
}

process.on('SIGUSR2', () => {
  const step = profiling
    ? post('Profiler.stop').then(({ profile }) => {
        // Whole or not at all: the bench waits for the file to appear.
        writeFileSync(`${out}.part`, JSON.stringify(profile));
        renameSync(`${out}.part`, out);
      })
    : post('Profiler.enable').then(() => post('Profiler.start'));
  profiling = !profiling;
  step.catch((err) => process.stderr.write(`profile-hook: ${err.message}\n`));
});
