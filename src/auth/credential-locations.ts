// Credentials belong in the Authorization header only (2026-07-28 authorization §Token Requirements: "MUST
// NOT be included in the URI query string"). A credential anywhere else would be logged by proxies or
// forwarded to an upstream, so the request is refused with a message that says where it belongs.

/** Names that look like credentials, compared lower-case with `-` and `_` removed. */
const CREDENTIAL_NAMES = new Set(['accesstoken', 'apikey', 'authorization', 'bearer', 'token', 'idtoken', 'refreshtoken', 'xapikey', 'clientsecret']);

/**
 * Names refused in the query string besides those: what API gateways, cloud signing schemes and vendors
 * put there (Google's `key`, Azure's `sig` and `subscription-key`, S3's `X-Amz-Signature`, GitLab's
 * `private_token`, ...). The MCP endpoint takes no query parameter of its own, so a wide list costs no
 * client anything. Not applied to message members: `_meta` keys such as `io.example/signature` are an
 * extension's business, and `params.key` may well be one.
 */
const QUERY_CREDENTIAL_NAMES = [
  'key', 'secret', 'password', 'passwd', 'pwd', 'auth', 'authtoken', 'apitoken', 'jwt', 'sessiontoken', 'accesskey', 'secretkey',
  'privatetoken', 'sig', 'signature', 'xamzsignature', 'xamzsecuritytoken', 'xgoogsignature', 'subscriptionkey', 'ocpapimsubscriptionkey', 'clientassertion',
];

/** How names are compared: `Access-Token`, `access_token` and `accessToken` are one name. */
function credentialNameKey(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, '');
}

/** Longer names are judged each time (in time of their length, as the judgement itself takes). */
const REMEMBERED_NAME_MAX = 64;
const REMEMBERED_NAMES = 10_000;

/**
 * The same few member names arrive on every request; each is judged once. Until 3 December any name was
 * kept, so 10,000 requests, unauthenticated ones too, could leave 10,000 names of a megabyte each here.
 */
function memoised(names: ReadonlySet<string>): (name: string) => boolean {
  const verdicts = new Map<string, boolean>();
  return (name) => {
    let verdict = verdicts.get(name);
    if (verdict === undefined) {
      verdict = names.has(credentialNameKey(name));
      // Bounded in count and in length: names are client-chosen, and a name may be most of a 1 MB body.
      if (verdicts.size < REMEMBERED_NAMES && name.length <= REMEMBERED_NAME_MAX) verdicts.set(name, verdict);
    }
    return verdict;
  };
}

const looksLikeCredential = memoised(CREDENTIAL_NAMES);

/** Finds the query parameter carrying a credential, if any. */
export type QueryCredentialCheck = (url: string | undefined) => string | undefined;

/**
 * The query-string check for one config: the built-in names plus `auth.queryCredentialNames`, which can
 * only add to them.
 */
export function compileQueryCredentialCheck(extraNames: readonly string[]): QueryCredentialCheck {
  const names = new Set([...CREDENTIAL_NAMES, ...QUERY_CREDENTIAL_NAMES, ...extraNames.map(credentialNameKey)]);
  const inQuery = memoised(names);
  return (url) => {
    const q = url?.indexOf('?') ?? -1;
    if (q === -1) return undefined;
    for (const name of new URLSearchParams(url!.slice(q + 1)).keys()) if (inQuery(name)) return name;
    return undefined;
  };
}

/** The query parameter carrying a credential, if any, by the built-in names. */
export const credentialInQuery: QueryCredentialCheck = compileQueryCredentialCheck([]);

/**
 * Where a JSON-RPC message carries a credential: a top-level member, a `params` member, or a `_meta` key.
 * Tool arguments are not looked at: a tool may well take a parameter called `token`.
 */
export function credentialInMessage(message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const msg = message as Record<string, unknown>;
  for (const k in msg) if (looksLikeCredential(k)) return k;
  const params = msg.params;
  if (typeof params !== 'object' || params === null) return undefined;
  for (const k in params) if (looksLikeCredential(k)) return `params.${k}`;
  const meta = (params as Record<string, unknown>)._meta;
  if (typeof meta !== 'object' || meta === null) return undefined;
  for (const k in meta) {
    // Namespaced keys (`io.example/token`) are judged by their last segment.
    const last = k.slice(k.lastIndexOf('/') + 1);
    if (looksLikeCredential(last)) return `params._meta.${k}`;
  }
  return undefined;
}
