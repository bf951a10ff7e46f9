// When an API key's `expires` value ends its life. Parsed here, next to the config it comes from, so the
// config checks and the key store agree on what a date means.

/** A date alone (YYYY-MM-DD) means the key is good through that whole day, UTC. */
export function expiryOf(expires: string): number {
  let t: number;
  if (/^\d{4}-\d{2}-\d{2}$/.test(expires)) t = Date.parse(`${expires}T00:00:00Z`) + 86_400_000;
  else t = Date.parse((/([Zz]|[+-]\d{2}:\d{2})$/.test(expires) ? expires : `${expires}Z`).replace(' ', 'T'));
  // A date that does not parse refuses the key rather than letting it live forever.
  return Number.isNaN(t) ? -Infinity : t;
}
