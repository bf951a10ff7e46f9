// The composition root: builds a running gateway from a validated config. It is the only module that
// knows every part; everything else receives what it needs.

import type { AddressInfo } from 'node:net';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError, formatIssue, parseConfigText } from './config/load.js';
import { watchConfigFile, type ConfigWatcher } from './config/watch.js';
import { isStdioUpstream, type GatehouseConfig, type ListenConfig, type UpstreamConfig } from './config/types.js';
import { createEdge, type Edge } from './edge/server.js';
import type { Logger } from './log/logger.js';
import { HttpUpstream } from './upstream/http.js';
import { StdioUpstream } from './upstream/stdio-sessions.js';
import { CatalogUpstream } from './upstream/catalog-upstream.js';
import type { Upstream } from './upstream/upstream.js';

export interface Gateway {
  /** Starts listening; resolves with the MCP endpoint URL once the port is bound. */
  listen(): Promise<string>;
  /** Stops accepting, drains in-flight requests for up to `shutdown.graceMs`, then stops upstreams. */
  close(): Promise<void>;
  /**
   * Applies a new config: a new upstream is built and swapped in atomically, the old one closed once its
   * in-flight calls had `shutdown.graceMs` to finish. `listen` is static (read at start); changing it is
   * refused. Returns the problems when the new config is refused and the running one stays.
   */
  reload(next: GatehouseConfig): Promise<string[]>;
  /** Reloads applied and refused so far. */
  readonly reloads: { applied: number; refused: number };
  readonly edge: Edge;
}

/** Problems that make a config unusable by this build, reported before anything starts. */
export function unsupportedFeatures(config: GatehouseConfig): string[] {
  const problems: string[] = [];
  if (config.auth.apiKeys.length > 0) problems.push('auth.apiKeys: API keys are not supported yet');
  if (config.auth.oauth !== undefined) problems.push('auth.oauth: OAuth is not supported yet');
  if (!config.auth.anonymous) problems.push('auth: no authentication method is available in this build; set auth.anonymous: true (loopback only)');
  if (config.auth.anonymous && !isLoopback(config.listen.host)) {
    problems.push(`auth.anonymous: anonymous access is allowed only on a loopback listener, not on "${config.listen.host}"`);
  }
  if (config.policy.rules.length > 0) problems.push('policy.rules: the policy engine is not supported yet');
  if (config.metrics.enabled) problems.push('metrics.enabled: metrics are not supported yet');
  if (config.admin.enabled) problems.push('admin.enabled: the admin API is not supported yet');
  return problems;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

export interface GatewayOptions {
  /** The file the config came from: watched, and reloaded when its content changes. */
  configFile?: string;
  /** The listener as the file named it (before command-line overrides); reloads compare with this. */
  fileListen?: ListenConfig;
  env?: NodeJS.ProcessEnv;
}

export function createGateway(config: GatehouseConfig, log: Logger, options: GatewayOptions = {}): Gateway {
  const problems = unsupportedFeatures(config);
  if (problems.length > 0) throw new Error(`This configuration cannot be served:\n  ${problems.join('\n  ')}`);
  // The edge is built after the upstream; refusals an adapter makes reach its counter through this hook.
  let countRefusal: (reason: string) => void = () => {};
  let upstream = buildUpstream(config, log, (reason) => countRefusal(reason));
  let running = config;
  const reloads = { applied: 0, refused: 0 };
  /** Upstreams replaced by a reload, closed after the grace period or at shutdown, whichever is first. */
  const retired = new Set<Upstream>();
  let watcher: ConfigWatcher | undefined;
  if (config.auth.anonymous) log.warn('authentication is off: anonymous access on a loopback listener', { host: config.listen.host });

  const edge = createEdge(
    config.listen,
    {
      mcp: (ex) => upstream.handle(ex),
      readiness: async () => (upstream instanceof CatalogUpstream ? upstream.readiness() : { [upstream.name]: await upstream.ready() }),
    },
    log,
    { loopback: isLoopback(config.listen.host) },
  );

  countRefusal = (reason) => edge.countRefusal(reason);

  let closing: Promise<void> | undefined;
  async function reloadFromText(file: string, text: string): Promise<void> {
    let next: GatehouseConfig;
    try {
      next = parseConfigText(text, { fileName: basename(file), baseDir: dirname(resolve(file)), env: options.env ?? process.env });
    } catch (err) {
      reloads.refused++;
      const issues = err instanceof ConfigError ? err.issues.map(formatIssue) : [String((err as Error).message)];
      log.error('config reload refused; the running config stays', { problems: issues });
      return;
    }
    await gateway.reload(next);
  }
  const gateway: Gateway = {
    edge,
    reloads,
    async reload(next) {
      // The listener is static: a reload keeps the running one (with any command-line overrides).
      const baseline = options.fileListen ?? running.listen;
      if (JSON.stringify(next.listen) !== JSON.stringify(baseline)) log.warn('config reload: listen changes take effect only after a restart');
      next = { ...next, listen: running.listen };
      const problems = [...unsupportedFeatures(next)];
      if (closing) problems.push('shutting down');
      if (problems.length > 0) {
        reloads.refused++;
        log.error('config reload refused; the running config stays', { problems });
        return problems;
      }
      const previous = upstream;
      upstream = buildUpstream(next, log, (reason) => countRefusal(reason));
      running = next;
      reloads.applied++;
      log.info('config reloaded', { upstreams: next.upstreams.map((u) => u.name) });
      // Calls already on the old upstream keep their references; give them the grace period, then close it.
      retired.add(previous);
      setTimeout(() => {
        if (retired.delete(previous)) void previous.close();
      }, next.shutdown.graceMs).unref();
      return [];
    },
    listen() {
      return new Promise((resolve, reject) => {
        edge.server.once('error', reject);
        edge.server.listen(config.listen.port, config.listen.host, () => {
          edge.server.off('error', reject);
          const { port } = edge.server.address() as AddressInfo;
          if (options.configFile !== undefined) watcher = watchConfigFile(options.configFile, (text) => void reloadFromText(options.configFile!, text));
          const host = config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host;
          resolve(`http://${host}:${port}${config.listen.path}`);
        });
      });
    },
    close() {
      closing ??= (async () => {
        log.info('shutting down: draining in-flight requests', { inFlight: edge.inFlight, graceMs: config.shutdown.graceMs });
        edge.startDraining();
        const serverClosed = new Promise<void>((r) => edge.server.close(() => r()));
        const drained = await edge.drained(config.shutdown.graceMs);
        if (!drained) log.warn('grace period over; closing the requests still in flight', { inFlight: edge.inFlight });
        edge.server.closeAllConnections();
        await serverClosed;
        watcher?.stop();
        await Promise.all([upstream.close(), ...[...retired].map((u) => u.close())]);
        retired.clear();
        log.info('stopped');
      })();
      return closing;
    },
  };
  return gateway;
}

/** One upstream is served directly (pass-through fast path); several, or `prefix: always`, through the catalog. */
function buildUpstream(config: GatehouseConfig, log: Logger, onRefusal: (reason: string) => void): Upstream {
  const members = config.upstreams.map((u) => createUpstream(u, config.sessions, log, onRefusal));
  const uriPrefixes = new Map(members.map((m, i) => [m, config.upstreams[i]!.uriPrefixes] as const));
  // One upstream keeps the byte pass-through unless names must be rewritten (`prefix: always`).
  const direct = members.length === 1 && config.tools.naming.prefix !== 'always';
  return direct ? members[0]! : new CatalogUpstream(members, uriPrefixes, { prefix: config.tools.naming.prefix, outputValidation: config.tools.outputValidation }, config.sessions, log);
}

function createUpstream(config: UpstreamConfig, sessions: GatehouseConfig['sessions'], log: Logger, onRefusal: (reason: string) => void): Upstream {
  return isStdioUpstream(config) ? new StdioUpstream(config, sessions, log) : new HttpUpstream(config, sessions, log, onRefusal);
}
