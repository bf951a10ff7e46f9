// One address for an upstream that is redeployed behind it (rolled back, upgraded in place), as a Service or a
// load balancer keeps it: a plain HTTP relay in front of whichever server is there now, switched by the test.
// The old server's connections end with it (dropConnections), as a process that goes away ends them.

import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the front serves: a server's URL, relayed to (its path, whatever the request's), or a handler of its own. */
export type FrontTarget = string | ((req: IncomingMessage, res: ServerResponse) => void);

export interface RedeployFront {
  /** The upstream's URL, `/mcp` on the front. */
  url: string;
  /** Serves what `target` is from the next request on; connections already open stay as they are. */
  switchTo(target: FrontTarget): void;
  /** Ends every connection the front holds, as the old server's going away ends them. */
  dropConnections(): void;
  close(): Promise<void>;
}

export async function startRedeployFront(initial: FrontTarget): Promise<RedeployFront> {
  let target = initial;
  const front = createServer((req, res) => {
    if (typeof target !== 'string') return target(req, res);
    const to = new URL(target);
    const up = httpRequest({ host: '127.0.0.1', port: to.port, path: to.pathname, method: req.method, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      // An event stream's headers go at once, as the server sent them (a GET stream may say nothing for long).
      res.flushHeaders();
      ur.pipe(res);
    });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(front.address() as AddressInfo).port}/mcp`,
    switchTo: (next) => void (target = next),
    dropConnections: () => front.closeAllConnections(),
    close: async () => {
      front.closeAllConnections();
      await new Promise<void>((r) => front.close(() => r()));
    },
  };
}
