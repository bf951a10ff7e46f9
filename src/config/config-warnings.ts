// What a config that serves may still hold by mistake, said as warnings rather than refusals: an API key
// already past its `expires` is refused 401 to every request, yet keys end while a gateway runs, and a
// restart must not fail for it; a reviewers' group that is none of admin.groups may be a typo, or a team
// group its reviewers hold beside an admin group (reviewer-reach.ts). check-config and doctor print these
// located; serve logs them.

import { expiryOf } from './expiry.js';
import { reviewerReachWarnings } from './reviewer-reach.js';
import type { GatehouseConfig } from './types.js';

export interface ExpiredKey {
  index: number;
  id: string;
  expires: string;
}

/** The API keys whose `expires` is past at `now` (a value that names no real date is a refusal, elsewhere). */
export function expiredKeys(config: GatehouseConfig, now = Date.now()): ExpiredKey[] {
  const out: ExpiredKey[] = [];
  config.auth.apiKeys.forEach((k, index) => {
    if (k.expires === undefined || k.disabled === true) return;
    const end = expiryOf(k.expires);
    if (end !== -Infinity && end <= now) out.push({ index, id: k.id, expires: k.expires });
  });
  return out;
}

/** Each warning as `key.path: message`, for locateProblems. */
export function configWarnings(config: GatehouseConfig, now = Date.now()): string[] {
  const keys = expiredKeys(config, now).map((k) => {
    const when = /^\d{4}-\d{2}-\d{2}$/.test(k.expires) ? `${k.expires} (the end of that day, UTC)` : k.expires;
    return `auth.apiKeys[${k.index}].expires: key "${k.id}" expired at ${when}: every request with it is refused 401; move expires or remove the key`;
  });
  return [...keys, ...reviewerReachWarnings(config).map((g) => `${g.key}: ${g.message}`)];
}
