// Binding the side listeners (admin API, metrics, egress proxy) the same way: an `error` before the bind
// (EADDRINUSE, EACCES) rejects instead of escaping as an uncaught event, and the origin the listener answers
// on is named with the port the system gave (port 0 in tests) and an IPv6 host in brackets.

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on `host`:`port`; resolves the listener's origin, `http://host:port`. */
export function listenOn(server: Server, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const bound = (server.address() as AddressInfo).port;
      resolve(`http://${host.includes(':') ? `[${host}]` : host}:${bound}`);
    });
  });
}

/** Closes the listener and every connection it holds, idle or not; resolves once it is closed. */
export function closeNow(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
