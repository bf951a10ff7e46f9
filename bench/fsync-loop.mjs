// What making a write durable costs on this machine's disk: a loop of 40 KB overwrites at rotating offsets
// of a 4 MB file (a WAL's steady state: the same file, written over again after each checkpoint), each
// followed by `fsync` or by `fdatasync`, in turns. Prints the process's CPU (user and system) and the wall
// time per write and sync. The SQLite store's writer syncs its WAL this way once per commit; SQLite as
// better-sqlite3 builds it always calls `fsync` (no HAVE_FDATASYNC), which is only worth changing if
// `fdatasync` costs less here.
//
//   node bench/fsync-loop.mjs [N=500] [ROUNDS=3] [DIR=os.tmpdir()]

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const N = Number(process.argv[2] ?? 500);
const ROUNDS = Number(process.argv[3] ?? 3);
const dir = fs.mkdtempSync(path.join(process.argv[4] ?? os.tmpdir(), 'gatehouse-fsync-loop-'));
const file = path.join(dir, 'wal');
const SLOTS = 100;
const chunk = Buffer.alloc(40 * 1024, 7);

const fd = fs.openSync(file, 'w+');
try {
  for (let i = 0; i < SLOTS; i++) fs.writeSync(fd, chunk, 0, chunk.length, i * chunk.length);
  fs.fsyncSync(fd);
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of ['fsync', 'fdatasync']) {
      const sync = kind === 'fsync' ? fs.fsyncSync : fs.fdatasyncSync;
      const cpu0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < N; i++) {
        fs.writeSync(fd, chunk, 0, chunk.length, (i % SLOTS) * chunk.length);
        sync(fd);
      }
      const cpu = process.cpuUsage(cpu0);
      const wallUs = Number(process.hrtime.bigint() - t0) / 1e3;
      console.log(`${kind.padEnd(9)}  CPU ${((cpu.user + cpu.system) / N).toFixed(1)} µs per write and sync (system ${(cpu.system / N).toFixed(1)}), wall ${(wallUs / N).toFixed(0)} µs`);
    }
  }
} finally {
  fs.closeSync(fd);
  fs.rmSync(dir, { recursive: true, force: true });
}
