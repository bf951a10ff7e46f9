// A cap on connections open at once from one client address, so one client cannot take every socket the
// process has (slowloris with many connections, or a runaway agent). Over the cap a connection is answered
// 429 and closed before Node reads a byte of it.

import type { Server } from 'node:http';
import type { Socket } from 'node:net';

const TOO_MANY = 'HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 0\r\n\r\n';

/** `max` 0 means no cap. `keyOf` turns a peer address into the key counted (IPv6 by /64). */
export function limitConnectionsPerAddress(server: Server, max: number, keyOf: (peer: string | undefined) => string, onRefused: () => void): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  // First among the connection listeners, so a refused socket never reaches the HTTP parser.
  server.prependListener('connection', (socket: Socket) => {
    const key = keyOf(socket.remoteAddress);
    const count = (open.get(key) ?? 0) + 1;
    if (count > max) {
      onRefused();
      socket.end(TOO_MANY);
      // Whatever the client sends meanwhile is not read; the socket is gone once the answer is out.
      socket.once('finish', () => socket.destroy());
      socket.pause();
      return;
    }
    open.set(key, count);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left <= 0) open.delete(key);
      else open.set(key, left);
    });
  });
}
