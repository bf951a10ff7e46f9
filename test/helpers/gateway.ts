// Starts a gateway in-process on an ephemeral port for integration tests, and captures its log lines.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfigFileWithText, validateConfigObject } from '../../src/config/load.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import { createLogger, type LogLevel } from '../../src/log/logger.js';

export interface TestGateway {
  /** The MCP endpoint URL, e.g. http://127.0.0.1:41234/mcp */
  url: string;
  /** http://127.0.0.1:PORT, for /healthz and /readyz */
  origin: string;
  gateway: Gateway;
  /** Parsed JSON log lines written so far. */
  logs: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/** `config` is a partial raw config; listen defaults to 127.0.0.1:0 and auth to anonymous. */
export async function startGateway(config: Record<string, unknown>, options: GatewayOptions = {}): Promise<TestGateway> {
  // Each gateway its own SQLite file: one file serves one process, and tests run side by side.
  const store = config.store ?? { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-test-')), 'gatehouse.db') };
  // Real clients send no idempotency keys; tests of idempotency itself require them in their config.
  const idempotency = config.idempotency ?? { requireKeys: false };
  const raw = { auth: { anonymous: true }, ...config, store, idempotency, listen: { host: '127.0.0.1', port: 0, ...(config.listen as object | undefined) } };
  const validated = validateConfigObject(raw, 'test');
  const { logs, log } = capturedLog(validated.log.level);
  const gateway = createGateway(validated, log, options);
  const url = await gateway.listen();
  return { url, origin: new URL(url).origin, gateway, logs, close: () => gateway.close() };
}

/**
 * Starts a gateway from a config file as `serve` does: the file loaded (with the files it reads through
 * `${file:...}`), then the gateway built with them to watch, so `checkConfigFile()` reloads it. Pass
 * `loaded` to build from a load done earlier (a test that changes a file between the load and the start).
 */
export async function startGatewayFromConfigFile(file: string, loaded?: Awaited<ReturnType<typeof loadConfigFileWithText>>): Promise<TestGateway> {
  const { config, text, files } = loaded ?? (await loadConfigFileWithText(file));
  const { logs, log } = capturedLog(config.log.level);
  const gateway = createGateway(config, log, { configFile: file, configText: text, configFiles: files });
  const url = await gateway.listen();
  return { url, origin: new URL(url).origin, gateway, logs, close: () => gateway.close() };
}

/**
 * A logger whose lines are kept parsed in `logs`, and echoed to stderr when GATEHOUSE_TEST_LOG is set. It
 * writes from the config's log.level (info unless a test asks, as `serve` does), so a test can wait for a
 * cause only a debug line shows; GATEHOUSE_TEST_LOG=debug lowers it to debug for any test.
 */
function capturedLog(level: LogLevel) {
  const logs: Array<Record<string, unknown>> = [];
  const log = createLogger(process.env.GATEHOUSE_TEST_LOG === 'debug' ? 'debug' : level, (line) => {
    logs.push(JSON.parse(line) as Record<string, unknown>);
    if (process.env.GATEHOUSE_TEST_LOG) process.stderr.write(line);
  });
  return { logs, log };
}
