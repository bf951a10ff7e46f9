// Runs every check of `gatehouse doctor` against one config file: the config first (nothing else can be
// checked without it), then upstreams (and whether stdio children die with Gatehouse), authorization
// server, store and ports side by side.

import { ConfigError, loadConfigFileWithText } from '../config/load.js';
import { locateProblems } from '../config/locate-problems.js';
import { unsupportedFeatures } from '../config/semantic-checks.js';
import { configWarnings } from '../config/config-warnings.js';
import { storeTlsExpiryWarnings } from '../config/store-tls-expiry.js';
import { storeTlsWarnings } from '../config/store-tls.js';
import type { Logger } from '../log/logger.js';
import { checkAuthorizationServer } from './auth-checks.js';
import { finding, messageOf, type CheckLimits, type Finding } from './finding.js';
import { checkPorts } from './port-checks.js';
import { checkStdioDeath } from './stdio-death-check.js';
import { checkStore } from './store-checks.js';
import { checkUpstreams } from './upstream-findings.js';

export const AREAS = ['upstreams', 'auth', 'store', 'ports'] as const;
export type Area = (typeof AREAS)[number];

export interface DoctorOptions extends CheckLimits {
  skip: ReadonlySet<Area>;
  env: NodeJS.ProcessEnv;
  log: Logger;
}

export async function runChecks(file: string, opts: DoctorOptions): Promise<Finding[]> {
  let config;
  let text: string;
  try {
    ({ config, text } = await loadConfigFileWithText(file, opts.env));
  } catch (err) {
    const lines = err instanceof ConfigError ? err.message.split('\n') : [`${file}: ${messageOf(err)}`];
    const hint = `fix the file (gatehouse check-config ${file} prints the same); nothing else is checked until it loads`;
    return lines.map((line) => finding('config', 'fail', line, hint));
  }
  const problems = unsupportedFeatures(config);
  const head = problems.length === 0
    ? [finding('config', 'ok', `${file} loads and passes the semantic checks`)]
    : locateProblems(file, text, problems).map((p) => finding('config', 'fail', p, 'this build refuses to serve the file until it is fixed'));
  if (problems.length === 0) head.push(...locateProblems(file, text, configWarnings(config)).map((w) => finding('config', 'warn', w, 'the file serves; what this names does not work as written')));
  // Read from the config, not the connection: the store check may be skipped, or fail before TLS says why.
  if (problems.length === 0) head.push(...locateProblems(file, text, storeTlsExpiryWarnings(config.store)).map((w) => finding('config', 'warn', w, 'renew the certificate and point the file at it: a reload applies it to every Redis connection made from then on')));
  if (problems.length === 0) head.push(...locateProblems(file, text, storeTlsWarnings(config.store)).map((w) => finding('config', 'warn', w, 'the store connects; encrypt the key with the passphrase, or remove store.tls.passphrase')));
  const limits = { timeoutMs: opts.timeoutMs, waitMs: opts.waitMs };
  const none = async (): Promise<Finding[]> => [];
  // A check that breaks on a setup nobody foresaw is a failed row of its area, not a stack trace that hides the rest.
  const guarded = (area: Area, run: () => Promise<Finding[]>): Promise<Finding[]> =>
    (async () => run())().catch((err: unknown) => [finding(area, 'fail', `the check could not run: ${messageOf(err)}`, 'the setup is broken in a way doctor does not know; the other rows still stand')]);
  const oauth = config.auth.oauth;
  const [upstreams, auth, store, ports] = await Promise.all([
    opts.skip.has('upstreams') ? none() : guarded('upstreams', async () => (await Promise.all([checkUpstreams(config, limits, opts.log), checkStdioDeath(config)])).flat()),
    opts.skip.has('auth') || oauth === undefined ? none() : guarded('auth', () => checkAuthorizationServer(oauth, limits, opts.log)),
    opts.skip.has('store') ? none() : guarded('store', () => checkStore(config.store, limits).then((f) => [f])),
    opts.skip.has('ports') ? none() : guarded('ports', () => checkPorts(config)),
  ]);
  return [...head, ...upstreams, ...auth, ...store, ...ports];
}
