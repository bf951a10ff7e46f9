// A real Redis for a test file: Debian's redis-server on a free loopback port, its data in a temp dir
// (append-only, fsync always, so a restart keeps what was written), stopped by its PID.

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { Redis } from 'ioredis';
import { freePort } from './auth-server.js';
import { holdsListeningPort } from './listening-socket.js';

export interface TestRedis {
  port: number;
  url: string;
  /** Stops the server (SIGTERM, then SIGKILL) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data dir. */
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: a server that accepts nothing and answers nothing (a partition). */
  pause(): void;
  resume(): void;
  readonly pid: number | undefined;
}

/**
 * `mode`: a plain server; `cluster`, a one-node Redis Cluster holding every slot; `sentinel`, a Sentinel
 * (redis-server --sentinel) watching the primary on `primaryPort` under the name `primary`. `config`: more
 * lines for redis.conf (`rename-command X ""` makes a server that lacks a command, as an older one does).
 */
export async function startRedis(opts: { mode?: 'plain' | 'cluster' | 'sentinel'; primaryPort?: number; password?: string; tls?: { cert: string; key: string }; config?: string[] } = {}): Promise<TestRedis> {
  let port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-redis-'));
  const conf = join(dir, 'redis.conf');
  const mode = opts.mode ?? 'plain';
  const writeConf = (): void => {
    const lines =
      mode === 'sentinel'
        ? [`port ${port}`, 'bind 127.0.0.1', `dir ${dir}`, 'daemonize no', 'logfile ""', `sentinel monitor primary 127.0.0.1 ${opts.primaryPort} 1`, 'sentinel down-after-milliseconds primary 5000']
        : [`port ${port}`, 'bind 127.0.0.1', `dir ${dir}`, 'save ""', 'appendonly yes', 'appendfsync always', 'daemonize no', 'logfile ""', 'loglevel warning', ...(mode === 'cluster' ? ['cluster-enabled yes', 'cluster-announce-ip 127.0.0.1', `cluster-config-file ${join(dir, 'nodes.conf')}`] : [])];
    if (opts.password !== undefined) lines.push(`requirepass "${opts.password}"`);
    if (opts.tls) {
      // TLS only: the plain port is closed.
      writeFileSync(join(dir, 'tls.crt'), opts.tls.cert);
      writeFileSync(join(dir, 'tls.key'), opts.tls.key);
      lines[0] = 'port 0';
      lines.push(`tls-port ${port}`, `tls-cert-file ${join(dir, 'tls.crt')}`, `tls-key-file ${join(dir, 'tls.key')}`, 'tls-auth-clients no');
    }
    // Last, so a test's lines win (tls-auth-clients yes).
    lines.push(...(opts.config ?? []));
    writeFileSync(conf, lines.join('\n') + '\n');
  };
  writeConf();
  const args = mode === 'sentinel' ? ['--sentinel'] : [];
  let child: ChildProcess | undefined;
  // What redis-server wrote (its log goes to stdout with `logfile ""`), the last few KiB only.
  let output = '';
  const keep = (d: Buffer): void => {
    output = (output + String(d)).slice(-8192);
  };

  const start = async (): Promise<void> => {
    // A second server on the port fails to bind while the wait below sees the first one's port open, and
    // stop() then knows only the failed one: the running server would be left behind.
    if (child && child.exitCode === null && child.signalCode === null) throw new Error(`redis-server on port ${port} is already running`);
    const c = spawn('redis-server', [conf, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    c.stdout!.on('data', keep);
    c.stderr!.on('data', keep);
    // Until this server holds the port itself: another test's server may hold it (the port was free when
    // picked), and then something answering on it proves nothing.
    const deadline = Date.now() + 10_000;
    while (!(c.pid !== undefined && holdsListeningPort(c.pid, port))) {
      if (c.exitCode !== null || c.signalCode !== null) throw new Error(`redis-server exited (${c.exitCode ?? c.signalCode}): ${output}`);
      if (Date.now() > deadline) throw new Error(`redis-server did not listen on 127.0.0.1:${port} within 10 s: ${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const stop = async (): Promise<void> => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGCONT');
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };

  // The port picked may be taken before the server binds it (or, for a cluster node, its bus port +10000):
  // then pick another. A restart (start() again) keeps its port, which a test relies on.
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (err) {
      if (attempt === 5 || !/Address already in use/i.test(output)) throw err;
      port = await freePort();
      writeConf();
    }
  }
  if (mode === 'cluster') await claimAllSlots(port);
  const redis: TestRedis = {
    port,
    url: `${opts.tls ? 'rediss' : 'redis'}://${opts.password !== undefined ? `:${encodeURIComponent(opts.password)}@` : ''}127.0.0.1:${port}`,
    stop,
    start,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    get pid() {
      return child?.pid;
    },
  };
  // A test that fails half way still stops its server.
  process.once('exit', () => child?.kill('SIGKILL'));
  return redis;
}

/** A one-node cluster: the node takes every slot, then the test waits (bounded) for `cluster_state:ok`. */
async function claimAllSlots(port: number): Promise<void> {
  const { Redis } = await import('ioredis');
  // No ready check: it sends INFO, which a test's server may lack (rename-command).
  const node = new Redis({ host: '127.0.0.1', port, lazyConnect: true, enableReadyCheck: false });
  try {
    await node.connect();
    await node.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    for (let i = 0; i < 100; i++) {
      if (String(await node.call('CLUSTER', 'INFO')).includes('cluster_state:ok')) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the one-node cluster did not reach cluster_state:ok');
  } finally {
    node.disconnect();
  }
}

/** A throwaway CA and a certificate it signed for 127.0.0.1, made with openssl. */
export function testCertificates(): { ca: string; cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-tls-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=Gatehouse test CA', '-keyout', 'ca.key', '-out', 'ca.crt']);
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'server.key', '-out', 'server.csr']);
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  run(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'san.ext', '-out', 'server.crt']);
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  return { ca: read('ca.crt'), cert: read('server.crt'), key: read('server.key') };
}

/**
 * What a Redis with mutual TLS needs, made with openssl into `dir` (files named as below): a CA, a server
 * certificate it signed for 127.0.0.1 (server.crt, server.key), a client certificate it signed (client.crt,
 * client.key), and a client certificate a CA the server does not know signed (stranger.crt, stranger.key).
 */
export function mtlsCertificates(): { dir: string; ca: string; server: { cert: string; key: string }; client: { cert: string; key: string }; stranger: { cert: string; key: string } } {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-mtls-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const signed = (name: string, subject: string, ca: string, ext: string) => {
    run(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', subject, '-keyout', `${name}.key`, '-out', `${name}.csr`]);
    writeFileSync(join(dir, `${name}.ext`), ext);
    run(['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
  };
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=Gatehouse test CA', '-keyout', 'ca.key', '-out', 'ca.crt']);
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=Another CA', '-keyout', 'other-ca.key', '-out', 'other-ca.crt']);
  signed('server', '/CN=127.0.0.1', 'ca', 'subjectAltName=IP:127.0.0.1,DNS:redis.test\nextendedKeyUsage=serverAuth,clientAuth\n');
  signed('client', '/CN=gatehouse', 'ca', 'extendedKeyUsage=clientAuth\n');
  signed('stranger', '/CN=gatehouse', 'other-ca', 'extendedKeyUsage=clientAuth\n');
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  const pair = (name: string) => ({ cert: read(`${name}.crt`), key: read(`${name}.key`) });
  return { dir, ca: read('ca.crt'), server: pair('server'), client: pair('client'), stranger: pair('stranger') };
}

/**
 * A Redis for the enclosing suite: started before its tests with a raw ioredis client (to flush it, or to
 * edit keys behind a store's back), both ended after them. Call it inside describe(); read the fields in tests.
 */
export function redisForSuite(): { readonly redis: TestRedis; readonly raw: Redis } {
  let redis: TestRedis;
  let raw: Redis;
  before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
  });
  after(async () => {
    raw.disconnect();
    await redis.stop();
  });
  return {
    get redis() {
      return redis;
    },
    get raw() {
      return raw;
    },
  };
}
