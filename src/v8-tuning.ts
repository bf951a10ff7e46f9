// V8 settings for a process that serves requests, applied by the entry point before anything else runs
// (main.ts imports this module first).
//
// Allocation-site pretenuring is off. V8 watches each object literal's allocation site, and when nearly
// all the objects of a site survive a young collection it allocates that site's later objects directly in
// the old generation. A gateway makes the same few literals for every request (the edge's call record, the
// answer's parts), and a burst of slow calls while the process warms up is enough for V8 to decide that
// some of them live long. From then on those objects are born old: dead at the end of their request but
// freed only by a full collection, and every young object they point to (the request, the response, the
// call's context) is kept alive by them through each young collection and promoted in turn. Measured on
// the legacy pass-through (issue 17, bench/README.md "Pretenuring"): 1.7 MB promoted per scavenge instead
// of 0.1 MB, scavenges of 2.8 ms instead of 0.8, a full collection every second or so, about a quarter of
// the CPU per call and twice the p99 latency. Whether it happened depended on the warm-up, so two
// processes of one build could differ by that much for as long as they lived.
//
// Pretenuring pays off for programs that build large long-lived structures; Gatehouse's long-lived state
// (config, catalog, sessions) is small and built once, so without it that state is merely copied once
// more before it is promoted.

import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--no-allocation-site-pretenuring');
