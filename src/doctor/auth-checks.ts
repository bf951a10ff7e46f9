// The authorization server behind auth.oauth: its metadata (found the way the gateway finds it) and its
// key set, with the algorithms of the published keys that the gateway's own key cache would verify tokens
// with. A key set that can verify none of the accepted algorithms means every token is refused.

import type { OAuthConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { acceptableJwksUri, boundedAgent, fetchIssuerMetadata, isAsymmetricAlg, isRecord, JwksCache, metadataUrls, requestJson, UnknownKeyError } from '../auth/jwks-cache.js';
import { DEFAULT_ALGORITHMS } from '../auth/token-verifier.js';
import { finding, messageOf, printableUrl, withDeadline, type CheckLimits, type Finding } from './finding.js';

interface PublishedKey {
  kid?: string;
  kty?: unknown;
  alg?: unknown;
  use?: unknown;
  /** The accepted algorithms the gateway would verify tokens with using this key. */
  verifies: string[];
}

export async function checkAuthorizationServer(oauth: OAuthConfig, limits: CheckLimits, log: Logger): Promise<Finding[]> {
  const agent = boundedAgent({ timeoutMs: limits.timeoutMs, maxBytes: 1024 * 1024 });
  const out: Finding[] = [];
  try {
    await withDeadline(inspect(oauth, agent, limits, log, out), limits.timeoutMs * 3, 'checking the authorization server');
  } catch (err) {
    out.push(finding(out.length > 0 ? 'key set' : 'authorization server', 'fail', messageOf(err), 'is the authorization server up and reachable from here?'));
  } finally {
    await agent.destroy().catch(() => {});
  }
  return out;
}

async function inspect(oauth: OAuthConfig, agent: ReturnType<typeof boundedAgent>, limits: CheckLimits, log: Logger, out: Finding[]): Promise<void> {
  const issuer = oauth.issuer;
  let jwksUri = oauth.jwksUri;
  try {
    const { url, doc } = await fetchIssuerMetadata(agent, issuer, log);
    out.push(finding('authorization server', 'ok', `${printableUrl(issuer)}: metadata at ${printableUrl(url)}`, undefined, { issuer: printableUrl(issuer), metadata: printableUrl(url) }));
    if (jwksUri === undefined) {
      if (typeof doc.jwks_uri !== 'string' || !acceptableJwksUri(doc.jwks_uri, issuer)) {
        out.push(finding('key set', 'fail', `the metadata names no key set Gatehouse will fetch (jwks_uri ${JSON.stringify(doc.jwks_uri ?? null)})`,
          'the key set must be https (plain http only with a loopback issuer); or set auth.oauth.jwksUri'));
        return;
      }
      jwksUri = doc.jwks_uri;
    }
  } catch (err) {
    const tried = metadataUrls(issuer).map(printableUrl).join(', ');
    const detail = `no metadata naming the issuer ${printableUrl(issuer)} (tried ${tried}): ${messageOf(err)}`;
    if (jwksUri === undefined) {
      out.push(finding('authorization server', 'fail', detail, 'auth.oauth.issuer must be exactly the "issuer" of its metadata; or set auth.oauth.jwksUri'));
      return;
    }
    // The keys are configured; only clients of the 2025-03-26 revision, which read the metadata through Gatehouse, miss it.
    out.push(finding('authorization server', 'warn', detail, 'clients of the 2025-03-26 revision find no authorization server metadata through Gatehouse; check auth.oauth.issuer'));
  }
  out.push(...(await checkKeySet(jwksUri, oauth, agent, limits, log)));
}

async function checkKeySet(uri: string, oauth: OAuthConfig, agent: ReturnType<typeof boundedAgent>, limits: CheckLimits, log: Logger): Promise<Finding[]> {
  const accepted = (oauth.algorithms ?? DEFAULT_ALGORITHMS).filter(isAsymmetricAlg);
  let doc: unknown;
  try {
    doc = await requestJson(agent, uri, { method: 'GET' }, { timeoutMs: limits.timeoutMs, maxBytes: 1024 * 1024 });
  } catch (err) {
    return [finding('key set', 'fail', `cannot fetch it: ${messageOf(err)}`, 'every token would be refused with 503 until it can be fetched; check the URL and the network path')];
  }
  if (!isRecord(doc) || !Array.isArray(doc.keys)) return [finding('key set', 'fail', `${printableUrl(uri)} is not a JWK set (no "keys" list)`, 'check auth.oauth.jwksUri, or the metadata\'s jwks_uri')];
  // The gateway's own cache judges which key verifies which algorithm (key shape, use, key_ops, private parts).
  const cache = new JwksCache({ issuer: oauth.issuer, jwksUri: uri, algorithms: accepted, maxAgeSeconds: 3600, minRefreshSeconds: 3600 }, log);
  const keys: PublishedKey[] = [];
  try {
    for (const raw of doc.keys.filter(isRecord)) {
      const kid = typeof raw.kid === 'string' && raw.kid !== '' ? raw.kid : undefined;
      keys.push({ ...(kid !== undefined ? { kid } : {}), kty: raw.kty, alg: raw.alg, use: raw.use, verifies: kid === undefined ? [] : await verifiable(cache, kid, accepted) });
    }
    // A token without a kid is verified by the one key that fits its algorithm, if exactly one does.
    const withoutKid = keys.some((k) => k.kid === undefined) ? await verifiable(cache, undefined, accepted) : [];
    for (const k of keys) if (k.kid === undefined) k.verifies = withoutKid;
  } catch (err) {
    return [finding('key set', 'fail', `cannot load it: ${messageOf(err)}`, 'check the key set URL')];
  } finally {
    cache.close();
  }
  const algorithms = accepted.filter((alg) => keys.some((k) => k.verifies.includes(alg)));
  const data = { jwksUri: printableUrl(uri), accepted, algorithms, keys: keys.map((k) => ({ kid: k.kid ?? null, kty: k.kty ?? null, alg: k.alg ?? null, verifies: k.verifies })) };
  const listed = keys.map((k) => `${k.kid ?? '(no kid)'}: ${k.verifies.join('/') || (k.use === 'enc' ? 'encryption only' : 'none')}`).join(', ');
  if (algorithms.length === 0) {
    return [finding('key set', 'fail', `${keys.length} key${keys.length === 1 ? '' : 's'} at ${printableUrl(uri)}, none verifies ${accepted.join(', ')}${keys.length ? ` (${listed})` : ''}: every token would be refused`,
      'publish a signing key of an accepted algorithm, or name its algorithm in auth.oauth.algorithms', data)];
  }
  const out = [finding('key set', 'ok', `${keys.length} key${keys.length === 1 ? '' : 's'} at ${printableUrl(uri)}; tokens signed with ${algorithms.join(', ')} can be verified (${listed})`, undefined, data)];
  for (const k of keys) {
    if (k.verifies.length > 0 || k.use === 'enc') continue;
    out.push(finding(`key set: key ${k.kid ?? '(no kid)'}`, 'warn', `verifies none of ${accepted.join(', ')} (kty ${String(k.kty)}${k.alg !== undefined ? `, alg ${String(k.alg)}` : ''})`,
      'tokens signed with it are refused; only asymmetric signatures are accepted, those in auth.oauth.algorithms'));
  }
  return out;
}

/** The accepted algorithms for which the cache hands out a key for this kid (undefined: a token without one). */
async function verifiable(cache: JwksCache, kid: string | undefined, accepted: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const alg of accepted) {
    try {
      await cache.getKeys(kid, alg);
      found.push(alg);
    } catch (err) {
      if (!(err instanceof UnknownKeyError)) throw err;
    }
  }
  return found;
}
