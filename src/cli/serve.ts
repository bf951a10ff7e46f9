// `gatehouse serve`: builds the config (from a file or from flags), starts the gateway, prints how to
// connect, and shuts down cleanly on SIGTERM/SIGINT (shutdown.delayMs with /readyz failing, then the
// drain); SIGHUP reads the config file again at once.

import { parseArgs } from 'node:util';
import { ConfigError, loadConfigFileWithText, validateConfigObject } from '../config/load.js';
import { locateProblems } from '../config/locate-problems.js';
import { unsupportedFeatures } from '../config/semantic-checks.js';
import { isStdioUpstream, type GatehouseConfig, type ListenConfig, type LogLevel } from '../config/types.js';
import { createGateway, ListenError, type Gateway } from '../gateway.js';
import { createLogger, resolveLogFormat, type Logger } from '../log/logger.js';
import { exitOnFault } from '../log/fault-exit.js';
import { isLoopback } from '../net/loopback.js';
import type { InterpolatedValue } from '../config/interpolate.js';
import { collectSecrets } from '../config/secrets.js';
import { enableDeathWithGatehouse, warnIfNoDeathSignal } from '../upstream/die-with-gatehouse.js';
import { enableGroupWatchdog } from '../upstream/group-watchdog.js';
import { SERVE_HELP } from './help.js';
import type { CommandIO } from './io.js';
import { checkFlags, UsageError } from './serve-usage.js';
import { splitCommand } from './split-command.js';
import { storeFlag } from './store-flag.js';

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  upstream: { type: 'string' },
  stdio: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  path: { type: 'string' },
  'log-level': { type: 'string' },
  store: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type ServeFlags = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true }>>['values'];

export async function serveCommand(args: string[], io: CommandIO): Promise<number> {
  let flags: ServeFlags;
  try {
    flags = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${SERVE_HELP}`);
    return 2;
  }
  if (flags.help) {
    io.out(SERVE_HELP);
    return 0;
  }
  let config: GatehouseConfig;
  let fileListen: ListenConfig | undefined;
  let fileStore: GatehouseConfig['store'] | undefined;
  let fileText: string | undefined;
  let fileReads: ReadonlyMap<string, string> | undefined;
  let interpolated: InterpolatedValue[] = [];
  // Only a config from a file is watched for reloads; flags cannot change while running.
  const fromFlags = flags.upstream !== undefined || flags.stdio !== undefined;
  const configFile = fromFlags ? undefined : (flags.config ?? io.env.GATEHOUSE_CONFIG ?? 'gatehouse.yaml');
  try {
    ({ config, fileListen, fileStore, fileText, fileReads, interpolated = [] } = await buildConfig(flags, io));
  } catch (err) {
    // A flag's value is a usage error (exit 2, with the usage), as in every other command; the file's, not.
    if (err instanceof UsageError) {
      io.err(`${err.message}\n\n${SERVE_HELP}`);
      return 2;
    }
    io.err((err instanceof ConfigError ? err.message : `error: ${(err as Error).message}`) + '\n');
    // No file where none was named: serve also runs without one.
    if (err instanceof ConfigError && flags.config === undefined && io.env.GATEHOUSE_CONFIG === undefined && err.issues.some((i) => i.line === 0 && i.message.startsWith('no such file'))) {
      io.err('or run one server without a file: gatehouse serve --upstream URL, or --stdio "COMMAND ARGS"\n');
    }
    return 1;
  }
  // Configured secret values (upstream credentials, client secrets) are scrubbed from every log line.
  const log = createLogger(config.log.level, undefined, {}, { secrets: collectSecrets(config, interpolated), format: resolveLogFormat(config.log.format) });
  // From here on a fault nothing caught is one scrubbed error line, then exit 1 (not Node's raw stack).
  exitOnFault(log);
  // A file's problems are located in it, as check-config does; createGateway below refuses the same ones.
  const problems = fileText !== undefined && configFile !== undefined ? unsupportedFeatures(config) : [];
  if (problems.length > 0) {
    io.err(`${locateProblems(configFile!, fileText!, problems).join('\n')}\n`);
    return 1;
  }
  // Before any child starts: stdio children are started to die with this process where setpriv can do it,
  // and what they start is ended by the watchdog if this process is killed hard.
  await enableDeathWithGatehouse();
  const stdioConfigured = config.upstreams.some(isStdioUpstream);
  if (stdioConfigured) warnIfNoDeathSignal(log);
  enableGroupWatchdog(log, stdioConfigured);
  let gateway;
  try {
    gateway = createGateway(config, log, { configFile, ...(fileText !== undefined ? { configText: fileText } : {}), ...(fileReads !== undefined ? { configFiles: fileReads } : {}), fileListen, fileStore, env: io.env });
  } catch (err) {
    io.err(`${(err as Error).message}\n`);
    return 1;
  }
  // Signal handlers go in before listening, so a SIGTERM that races start-up still drains and exits 0.
  const stopped = new Promise<number>((resolve) => {
    let stopping: Promise<void> | undefined;
    const stop = (signal: NodeJS.Signals): void => {
      log.info('signal received', { signal });
      stopping ??= stopGateway(gateway, log);
      void stopping.then(() => resolve(0));
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  // SIGHUP reads the config file at once rather than at the next poll (a config from flags has no file,
  // and keeps the default: a hangup ends it).
  if (configFile !== undefined) {
    process.on('SIGHUP', () => {
      log.info('signal received', { signal: 'SIGHUP' });
      void gateway.checkConfigFile().then((found) => {
        if (found === 'unchanged') log.info('config file unchanged; nothing to reload', { file: configFile });
        else if (found === 'unreadable') log.warn('config file unreadable; the running config stays', { file: configFile });
      });
    });
  }
  let url: string;
  try {
    url = await gateway.listen();
  } catch (err) {
    // Lines logged so far (an auth warning) come first; then the reason, and no shutdown story for a
    // gateway that never served.
    log.flush();
    io.err(`${listenHint(err, io.env)}\n`);
    await gateway.close({ quiet: true });
    log.flush();
    return 1;
  }
  log.info('gatehouse listening', { url, upstreams: config.upstreams.map((u) => u.name) });
  io.out(connectBanner(url));
  return stopped;
}

/**
 * shutdown.delayMs with /readyz failing (gateway.withdraw), then the drain (gateway.close). While the delay
 * runs, a second SIGTERM or SIGINT (Ctrl-C pressed twice) cuts it short instead of ending the process; past
 * it, a repeated signal does what it did before (the default action of a signal already handled once).
 */
async function stopGateway(gateway: Gateway, log: Logger): Promise<void> {
  const skip = (signal: NodeJS.Signals): void => {
    if (gateway.skipDelay()) log.info('signal received again: skipping the rest of shutdown.delayMs', { signal });
  };
  process.on('SIGTERM', skip);
  process.on('SIGINT', skip);
  try {
    await gateway.withdraw();
  } finally {
    process.off('SIGTERM', skip);
    process.off('SIGINT', skip);
  }
  await gateway.close();
}

/** What to do about a port that cannot be bound, in the words of the command the user ran. */
function listenHint(err: unknown, env: NodeJS.ProcessEnv): string {
  if (!(err instanceof ListenError)) return `cannot listen: ${(err as Error).message}`;
  const viaNpm = env.npm_lifecycle_event === 'start';
  const flag = (port: number): string => (viaNpm ? `npm start -- --port ${port}` : `gatehouse serve … --port ${port}`);
  const choose = err.portKey === 'listen.port' ? `choose another with \`${flag(err.port + 1)}\`, or \`--port 0\` for a free one` : `set ${err.portKey} in the config to another port, or 0 for a free one`;
  switch (err.code) {
    case 'EADDRINUSE':
      return `port ${err.port} on ${err.host} is in use (${err.listener}); ${choose}`;
    case 'EACCES':
      return `port ${err.port} on ${err.host} needs privileges this process lacks (${err.listener}); use a port above 1023: ${choose}`;
    case 'EADDRNOTAVAIL':
      return `no network interface here has the address ${err.host} (${err.listener}); use 127.0.0.1, 0.0.0.0 or an address of this machine`;
    default:
      return err.message;
  }
}

/** The config to run, and for a file the listener it named (flags may override it; reloads compare with it). */
async function buildConfig(flags: ServeFlags, io: CommandIO): Promise<{ config: GatehouseConfig; fileListen?: ListenConfig; fileStore?: GatehouseConfig['store']; fileText?: string; fileReads?: ReadonlyMap<string, string>; interpolated?: InterpolatedValue[] }> {
  if (flags.upstream !== undefined && flags.stdio !== undefined) throw new UsageError('use either --upstream or --stdio, not both');
  if (flags.config !== undefined && (flags.upstream !== undefined || flags.stdio !== undefined)) {
    throw new UsageError('use either --config or --upstream/--stdio, not both');
  }
  const listenOverrides: Record<string, unknown> = {};
  if (flags.host !== undefined) listenOverrides.host = flags.host;
  if (flags.port !== undefined) {
    if (!/^\d+$/.test(flags.port)) throw new UsageError(`--port must be a number, got "${flags.port}"`);
    listenOverrides.port = Number(flags.port);
  }
  if (flags.path !== undefined) listenOverrides.path = flags.path;
  const logOverride = flags['log-level'] !== undefined ? { level: flags['log-level'] as LogLevel } : undefined;
  const storeOverride = flags.store !== undefined ? asUsage(() => storeFlag(flags.store!)) : undefined;

  if (flags.upstream !== undefined || flags.stdio !== undefined) {
    const upstream = flags.upstream !== undefined ? { name: 'upstream', url: flags.upstream } : { name: 'upstream', command: asUsage(() => splitCommand(flags.stdio!), '--stdio: ') };
    const config = checkFlags(() => validateConfigObject(
      // Trying a server out: anonymous on loopback, and writes run without idempotency keys (clients rarely send one).
      { listen: listenOverrides, upstreams: [upstream], auth: { anonymous: true }, idempotency: { requireKeys: false }, ...(logOverride ? { log: logOverride } : {}), ...(storeOverride ? { store: storeOverride } : {}) },
      'command line',
    ));
    // Said of the flag: the user wrote --host, never the auth.anonymous the refusal at start would name.
    if (!isLoopback(config.listen.host)) {
      throw new UsageError(`--host: a server tried out with --upstream or --stdio is served without authentication, so only on a loopback address (127.0.0.1, ::1, localhost), not on "${config.listen.host}"; to serve it on another, write a config file with auth.apiKeys or auth.oauth`);
    }
    return { config };
  }
  // The flags' own values are judged before the file is read: a missing file must not hide a usage error
  // (`serve --log-level loud` where no gatehouse.yaml is yet), only for it to appear once the file exists.
  if (Object.keys(listenOverrides).length > 0 || logOverride || storeOverride) {
    checkFlags(() => validateConfigObject(
      { listen: listenOverrides, upstreams: [{ name: 'flags', url: 'http://127.0.0.1:1/mcp' }], auth: { anonymous: true }, ...(logOverride ? { log: logOverride } : {}), ...(storeOverride ? { store: storeOverride } : {}) },
      'command line',
    ));
  }
  const file = flags.config ?? io.env.GATEHOUSE_CONFIG ?? 'gatehouse.yaml';
  const interpolated: InterpolatedValue[] = [];
  const { config, text: fileText, files: fileReads } = await loadConfigFileWithText(file, io.env, { interpolated });
  if (Object.keys(listenOverrides).length === 0 && !logOverride && !storeOverride) return { config, fileListen: config.listen, fileStore: config.store, fileText, fileReads, interpolated };
  // Flags override the file; the result is validated again so a bad flag is reported like a bad key.
  const merged = checkFlags(() => validateConfigObject({ ...config, listen: { ...config.listen, ...listenOverrides }, log: { ...config.log, ...logOverride }, store: storeOverride ?? config.store }, 'command line'));
  return { config: merged, fileListen: config.listen, fileStore: config.store, fileText, fileReads, interpolated };
}

/** What `read` makes of a flag's value; its refusal is a usage error (`prefix` names the flag when the message does not). */
function asUsage<T>(read: () => T, prefix = ''): T {
  try {
    return read();
  } catch (err) {
    throw new UsageError(`${prefix}${(err as Error).message}`);
  }
}

function connectBanner(url: string): string {
  const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'curl', version: '0' } } });
  return [
    '',
    `Gatehouse is serving MCP at ${url}`,
    '',
    'Try it:',
    `  curl -s ${url} -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \\`,
    `    -d '${init}'`,
    'Connect Claude Code:',
    `  claude mcp add --transport http gatehouse ${url}`,
    '',
  ].join('\n');
}
