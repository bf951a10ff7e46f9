// Header values mirrored from the body (2026-07-28/basic/transports/streamable-http.mdx §Value Encoding):
// plain visible ASCII, or the `=?base64?…?=` sentinel for anything else. Decoding comes before comparing.

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';
/** RFC 9110 field-value characters: visible ASCII, space and tab. */
const FIELD_VALUE = /^[\x20-\x7e\t]*$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export type DecodedHeader = { ok: true; value: string } | { ok: false; reason: string };

/** Decodes a mirrored header value; refuses invalid characters and malformed sentinels. */
export function decodeHeaderValue(raw: string): DecodedHeader {
  if (!FIELD_VALUE.test(raw)) return { ok: false, reason: 'contains characters not allowed in a header value' };
  if (!raw.startsWith(SENTINEL_PREFIX) || !raw.endsWith(SENTINEL_SUFFIX) || raw.length < SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length) {
    return { ok: true, value: raw };
  }
  const b64 = raw.slice(SENTINEL_PREFIX.length, raw.length - SENTINEL_SUFFIX.length);
  if (!BASE64.test(b64) || b64.length % 4 !== 0) return { ok: false, reason: 'is not valid base64 inside =?base64?…?=' };
  const bytes = Buffer.from(b64, 'base64');
  const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  try {
    return { ok: true, value: text.decode(bytes) };
  } catch {
    return { ok: false, reason: 'does not decode to UTF-8' };
  }
}

/** Encodes a value for a mirrored header, using the sentinel whenever plain text would be unsafe or ambiguous. */
export function encodeHeaderValue(value: string): string {
  const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) || value === '';
  const looksEncoded = value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX);
  return plain && !looksEncoded ? value : `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}
