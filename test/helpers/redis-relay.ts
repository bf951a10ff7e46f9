// A TCP relay between a store and a real redis-server that can lose one reply on purpose: armed with a
// text, it drops the connection that sent a command holding it once Redis has answered that command (Redis
// ran it; the store never learns the answer), as a failover, a proxy or a TCP reset does. Otherwise it
// passes bytes through both ways. Retargeted, it sends new connections to another server and leaves the
// open ones where they are, as a DNS name or a Service does after a failover.

import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface RedisRelay {
  url: string;
  /** Drops the next connection that sends `text`, after Redis's answer to it. */
  dropAfter(text: string): void;
  /** New connections go to the server on `port` from now on; open ones stay. */
  retarget(port: number): void;
  /**
   * The connections open now pass nothing more either way and are never closed (a NAT or load balancer
   * that forgot them, silently); new ones work.
   */
  silence(): void;
  /** How many connections were dropped so far. */
  readonly dropped: number;
  close(): Promise<void>;
}

export async function startRedisRelay(redisPort: number): Promise<RedisRelay> {
  let armed: string | undefined;
  let dropped = 0;
  let target = redisPort;
  const sockets = new Set<Socket>();
  /** Each open connection's switch: once off, its bytes go nowhere. */
  const open = new Set<{ silent: boolean }>();
  const relay: Server = createServer((client) => {
    const server = createConnection({ host: '127.0.0.1', port: target });
    sockets.add(client).add(server);
    const state = { silent: false };
    open.add(state);
    let watching = false;
    const close = () => {
      client.destroy();
      server.destroy();
      sockets.delete(client);
      sockets.delete(server);
      open.delete(state);
    };
    client.on('data', (d) => {
      if (state.silent) return;
      if (armed !== undefined && d.includes(armed)) {
        watching = true;
        armed = undefined;
      }
      server.write(d);
    });
    server.on('data', (d) => {
      if (state.silent) return;
      if (watching) {
        // Redis has run it and answered: the answer is lost with the connection.
        watching = false;
        dropped++;
        close();
        return;
      }
      client.write(d);
    });
    client.on('error', close).on('close', close);
    server.on('error', close).on('close', close);
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  const port = (relay.address() as AddressInfo).port;
  return {
    url: `redis://127.0.0.1:${port}`,
    dropAfter: (text) => void (armed = text),
    retarget: (port) => void (target = port),
    silence: () => {
      for (const state of open) state.silent = true;
      open.clear();
    },
    get dropped() {
      return dropped;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => relay.close(() => r()));
    },
  };
}
