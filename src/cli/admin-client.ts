// The CLI's client of a running gateway's admin API: where it is (the config's admin listener, or --url),
// the token it takes, and one call with a bounded wait. Used by `approvals` and `pins`.

import { loadConfigFor } from './cli-config.js';
import type { CommandIO } from './io.js';
import { printable } from './printable.js';

export interface AdminTarget {
  url: string;
  token: string;
}

export type AdminCall = (method: 'GET' | 'POST', path: string, body?: unknown) => Promise<{ status: number; json: Record<string, unknown> }>;

export function adminCaller(target: AdminTarget): AdminCall {
  return async (method, path, body) => {
    let res: Response;
    try {
      res = await fetch(`${target.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${target.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(15_000),
      });
    } catch (err) {
      throw new Error(`the admin API at ${target.url} cannot be reached (${(err as Error).message}); is the gateway running with admin.enabled?`);
    }
    const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    return { status: res.status, json };
  };
}

export async function adminTarget(flags: { config?: string | undefined; url?: string | undefined; token?: string | undefined }, io: CommandIO, command: string): Promise<{ url: string; token: string }> {
  let url = flags.url ?? io.env.GATEHOUSE_ADMIN_URL;
  let token = flags.token ?? io.env.GATEHOUSE_ADMIN_TOKEN;
  if (url === undefined || token === undefined) {
    // Only what is not given otherwise must be readable; the upstreams' secrets never are needed here.
    const needs = ['admin.enabled', ...(url === undefined ? ['admin.host', 'admin.port'] : []), ...(token === undefined ? ['admin.token'] : [])];
    const config = await loadConfigFor(flags.config ?? io.env.GATEHOUSE_CONFIG ?? 'gatehouse.yaml', io.env, needs, command);
    if (!config.admin.enabled) throw new Error('the config does not enable the admin API (admin.enabled), so there is nothing to ask');
    const host = config.admin.host === '0.0.0.0' ? '127.0.0.1' : config.admin.host === '::' ? '::1' : config.admin.host;
    url ??= `http://${host.includes(':') ? `[${host}]` : host}:${config.admin.port}`;
    token ??= config.admin.token;
  }
  if (token === undefined) throw new Error('no admin token: give --token, set GATEHOUSE_ADMIN_TOKEN, or set admin.token in the config');
  return { url: url.replace(/\/+$/, ''), token };
}

export function failed(io: CommandIO, r: { status: number; json: Record<string, unknown> }): number {
  const error = r.json.error as { code?: string; message?: string } | undefined;
  io.err(printable(`error: ${error?.message ?? `the admin API answered HTTP ${r.status}`}${error?.code ? ` (${error.code})` : ''}`) + '\n');
  return r.status === 404 ? 3 : 1;
}

