// The metrics endpoint on its own listener (DESIGN.md §5: never on the public port), so the MCP port can
// face clients while Prometheus scrapes from inside the cluster.

import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { closeNow, listenOn } from '../net/listen.js';
import type { Logger } from '../log/logger.js';
import type { GatewayMetrics } from './metrics.js';

export interface MetricsListener {
  /** Resolves with the metrics URL once bound. */
  listen(host: string, port: number): Promise<string>;
  close(): Promise<void>;
}

/**
 * Whether a request's Host (and Origin) may be served (edge/origin-guard.ts): on a loopback interface,
 * loopback names only, so a web page that rebound its name to 127.0.0.1 cannot read the series (they name
 * the upstreams, tools and policy entries).
 */
export type MetricsHostGuard = (headers: IncomingHttpHeaders) => { ok: true } | { ok: false; message: string };

export function createMetricsListener(metrics: GatewayMetrics, path: string, log: Logger, hostGuard: MetricsHostGuard): MetricsListener {
  const server: Server = createServer((req, res) => {
    const host = hostGuard(req.headers);
    if (!host.ok) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end(`Forbidden: ${host.message}\n`);
      return;
    }
    const q = req.url?.indexOf('?') ?? -1;
    const p = q === -1 ? req.url : req.url!.slice(0, q);
    if (p !== path) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`Metrics are at ${path}\n`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('Metrics are read with GET\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: unknown) => {
        log.error('metrics collection failed', { err });
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics collection failed\n');
      },
    );
  });
  return {
    listen: async (host, port) => `${await listenOn(server, host, port)}${path}`,
    close: () => closeNow(server),
  };
}
