// The listeners a deployment opens (MCP, metrics, admin, egress proxy): each address is bound and released,
// all held at once so that two listeners configured on one port are found too.

import { createServer, type Server } from 'node:net';
import type { GatehouseConfig } from '../config/types.js';
import { finding, type Finding } from './finding.js';

interface Listener {
  what: string;
  /** The config key of its port, for the hint. */
  key: string;
  host: string;
  port: number;
}

const WILDCARDS = new Set(['0.0.0.0', '::', '']);

function configuredListeners(config: GatehouseConfig): Listener[] {
  const out: Listener[] = [{ what: 'listen', key: 'listen.port', host: config.listen.host, port: config.listen.port }];
  if (config.metrics.enabled) out.push({ what: 'metrics', key: 'metrics.port', host: config.metrics.host, port: config.metrics.port });
  if (config.admin.enabled) out.push({ what: 'admin', key: 'admin.port', host: config.admin.host, port: config.admin.port });
  const proxy = config.policy.egressProxy;
  if (proxy.enabled) out.push({ what: 'egress proxy', key: 'policy.egressProxy.port', host: proxy.host, port: proxy.port });
  return out;
}

export async function checkPorts(config: GatehouseConfig): Promise<Finding[]> {
  const listeners = configuredListeners(config);
  const held: Server[] = [];
  try {
    return await Promise.all(listeners.map(async (l, i) => {
      const check = `${l.what} ${l.host.includes(':') ? `[${l.host}]` : l.host}:${l.port}`;
      const data = { host: l.host, port: l.port };
      const twin = listeners.slice(0, i).find((o) => o.port === l.port && l.port !== 0 && (o.host === l.host || WILDCARDS.has(o.host) || WILDCARDS.has(l.host)));
      if (twin) return finding(check, 'fail', `the same port as ${twin.key}`, `each listener needs its own port: change ${l.key}`, data);
      const outcome = await bind(l.host, l.port);
      if (outcome.server) {
        held.push(outcome.server);
        return finding(check, 'ok', l.port === 0 ? 'a free port is picked at start' : 'free', undefined, data);
      }
      return refusal(check, l, outcome.code ?? 'error', outcome.message, data);
    }));
  } finally {
    await Promise.all(held.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}

function refusal(check: string, l: Listener, code: string, message: string, data: Record<string, unknown>): Finding {
  switch (code) {
    case 'EADDRINUSE':
      return finding(check, 'fail', `port ${l.port} is in use`, `choose another ${l.key} (0 picks a free one), or stop what holds the port (a Gatehouse already running?)`, data);
    case 'EADDRNOTAVAIL':
      return finding(check, 'fail', `${l.host} is not an address of this machine`, `bind an address of this host (127.0.0.1, or 0.0.0.0 for every interface)`, data);
    case 'EACCES':
    case 'EPERM':
      return finding(check, 'fail', `not allowed to listen on port ${l.port}`, `ports below 1024 need privileges: choose ${l.key} above 1023`, data);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return finding(check, 'fail', `cannot resolve the host "${l.host}"`, 'use an IP address, or a name this host resolves', data);
    default:
      return finding(check, 'fail', `cannot listen: ${message}`, `check the host and ${l.key}`, data);
  }
}

function bind(host: string, port: number): Promise<{ server?: Server; code?: string; message: string }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve({ message: err.message, ...(err.code !== undefined ? { code: err.code } : {}) }));
    server.listen({ host, port, exclusive: true }, () => resolve({ server, message: 'listening' }));
  });
}
