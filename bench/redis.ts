// A Redis for the bench's `gatehouse-redis` target and the store bench: Debian's redis-server on a free
// loopback port, its append-only file fsynced every second (Redis' own default once AOF is on), data in a
// temp dir, stopped by its PID when the bench ends.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface BenchRedis {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

export async function startBenchRedis(appendfsync: 'everysec' | 'always' = 'everysec'): Promise<BenchRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-redis-'));
  const conf = join(dir, 'redis.conf');
  writeFileSync(conf, [`port ${port}`, 'bind 127.0.0.1', `dir ${dir}`, 'save ""', 'appendonly yes', `appendfsync ${appendfsync}`, 'daemonize no', 'logfile ""', 'loglevel warning'].join('\n') + '\n');
  const child: ChildProcess = spawn('redis-server', [conf], { stdio: ['ignore', 'ignore', 'inherit'] });
  const spawned = await new Promise<boolean>((resolve) => {
    child.once('spawn', () => resolve(true));
    child.once('error', () => resolve(false));
  });
  if (!spawned || child.pid === undefined) throw new Error('redis-server could not be started (apt-get install redis-server)');
  process.once('exit', () => child.kill('SIGKILL'));
  const deadline = Date.now() + 10_000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (open) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`redis-server did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
