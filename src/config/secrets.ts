// The secret values a validated config holds, gathered so the logger can scrub them from every line
// (`createLogger(level, write, base, { secrets: collectSecrets(config) })`, or `log.addSecrets(...)` after a
// reload). Field-name and pattern redaction cannot know that an upstream's `X-Acme-Key` header or a
// client secret is one; the config can.

import { isStdioUpstream, type GatehouseConfig } from './types.js';
import type { InterpolatedValue } from './interpolate.js';
import { percentDecoded } from '../protocol/percent-decode.js';

/** Env names that hold credentials by convention: a `_`-separated segment such as TOKEN, SECRET or KEY. */
const SECRET_ENV_SEGMENT = /^(token|secret|secrets|password|passwd|pass|pwd|key|apikey|credential|credentials|auth|authorization|cookie|private|dsn)$/;

/**
 * `interpolated`: the values the config read through `${env:...}`/`${file:...}` (LoadOptions.interpolated);
 * those that went into a stdio upstream's env are secrets whatever their names.
 */
export function collectSecrets(config: GatehouseConfig, interpolated: readonly InterpolatedValue[] = []): string[] {
  const found = new Set<string>();
  const add = (v: string | string[] | undefined): void => {
    for (const one of Array.isArray(v) ? v : [v]) if (one !== undefined && one !== '') found.add(one);
  };
  for (const u of config.upstreams) {
    if (isStdioUpstream(u)) {
      for (const [name, value] of Object.entries(u.env)) {
        if (looksLikeSecretEnv(name)) add(value);
        add(urlPassword(value));
      }
      add(commandSecrets(u.command));
      continue;
    }
    // Static upstream headers are where operators put credentials, under any name; all are kept out of logs.
    for (const value of Object.values(u.headers)) {
      add(value);
      add(schemeCredentials(value));
    }
    add(urlPassword(u.url));
    add(u.clientCredentials?.clientSecret);
    if (u.egressProxyToken !== undefined) {
      // And the header a proxy client makes of it (Basic NAME:TOKEN), as for a stdio child's (proxy.ts envFor).
      add(u.egressProxyToken);
      add(Buffer.from(`${u.name}:${u.egressProxyToken}`).toString('base64'));
      add(Buffer.from(`${encodeURIComponent(u.name)}:${u.egressProxyToken}`).toString('base64'));
    }
  }
  // A stdio server takes its credentials from its env under any name (SERVICE_CRED, GITHUB_PAT), and its
  // stderr is logged: a value the config reads from outside the file into that env is one. (A literal value
  // under an ordinary name, NODE_ENV: production, is not: scrubbing it would blank ordinary words in logs.)
  for (const { path, value } of interpolated) {
    const [top, index, key] = path;
    const u = top === 'upstreams' && typeof index === 'number' && key === 'env' && path.length === 4 ? config.upstreams[index] : undefined;
    if (u !== undefined && isStdioUpstream(u)) add(value);
  }
  // The trace backend's API key goes in tracing.headers (the schema says so), or in the endpoint's userinfo.
  for (const value of Object.values(config.tracing.headers ?? {})) {
    add(value);
    add(schemeCredentials(value));
  }
  if (config.tracing.endpoint !== undefined) add(urlPassword(config.tracing.endpoint));
  add(config.auth.oauth?.introspection?.clientSecret);
  add(config.admin.token);
  add(config.sessions.requestStateKey);
  if (config.store.kind === 'redis') {
    add(urlPassword(config.store.url));
    add(config.store.sentinel?.password);
    add(pemSecret(config.store.tls?.key));
    add(config.store.tls?.passphrase);
  }
  return [...found];
}

/**
 * A private key's PEM, whole and each line of its body: an error or a library may quote a part of it, and
 * any line of a key is as good as secret.
 */
function pemSecret(pem: string | undefined): string[] {
  if (pem === undefined) return [];
  return [pem, ...pem.split(/\r?\n/).filter((line) => line !== '' && !line.startsWith('-----'))];
}

/** A name (an env variable, a command-line option) whose value is a credential by convention: API_KEY, --access-token. */
export function looksLikeSecretEnv(name: string): boolean {
  return name
    .toLowerCase()
    .split(/[_-]+/)
    .some((segment) => SECRET_ENV_SEGMENT.test(segment));
}

/**
 * The credentials on a stdio command line, by the rule doctor prints it with (printableCommand): the value of
 * an option named like one (`--api-key V`, `--token=V`) and a URL's password anywhere in an argument. Other
 * arguments, read through `${env:...}` or not, are paths, hosts and flags far more often than credentials
 * (which a process list shows to every local user: they belong in env).
 */
function commandSecrets(command: readonly string[]): string[] {
  const found: string[] = [];
  command.forEach((arg, i) => {
    if (i === 0) return;
    const option = /^(--?[A-Za-z][\w.-]*)(?:=(.*))?$/s.exec(arg);
    if (option !== null && looksLikeSecretEnv(option[1]!.replace(/^-+/, ''))) {
      const value = option[2] ?? command[i + 1];
      if (value !== undefined && (option[2] !== undefined || !value.startsWith('-'))) found.push(value);
    }
    for (const m of arg.matchAll(/[a-z][a-z0-9+.-]*:\/\/[^\s:/?#@]*:([^\s/?#@]+)@/gi)) found.push(...withDecoded(m[1]!));
  });
  return found;
}

/** `Bearer abc` → `abc`: the credential may be logged on its own, without its scheme. */
function schemeCredentials(headerValue: string): string | undefined {
  const m = /^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*\s+(\S.*)$/.exec(headerValue.trim());
  return m?.[1];
}

/** The password in `scheme://user:password@host`, percent-encoded and decoded, since either may be logged. */
function urlPassword(value: string): string[] {
  if (!value.includes('@') || !/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return [];
  let password: string;
  try {
    password = new URL(value).password;
  } catch {
    return [];
  }
  if (password === '') return [];
  return withDecoded(password);
}

/** A password as written in a URL and percent-decoded, since either may be logged. */
function withDecoded(password: string): string[] {
  const decoded = percentDecoded(password);
  return decoded === undefined ? [password] : [password, decoded];
}
