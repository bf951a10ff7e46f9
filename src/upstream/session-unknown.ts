// Whether an upstream's refusal of a request that named a legacy session says the session is unknown there.
// The spec's answer is 404 (2025-11-25/basic/transports.mdx §Session Management 3), but servers built on the
// v1 SDK's examples before 2026 (typescript-sdk#389) and the Python SDK's session manager before
// python-sdk#1808 (issue #1727) answer 400 "Bad Request: No valid session ID provided", as JSON-RPC or as plain text.
// Taken for the server's answer to the call, that 400 failed every call on the pooled session for good.
// Only a 400 that speaks of the session counts, and never one that answers the request itself (an error
// carrying its id): any other 400 is the server's verdict on the call, which a retry would not change.

import type { UpstreamReply } from '../pipeline/ports.js';

/** "session", "Session ID", "Mcp-Session-Id": the word that tells a refusal about the session from others. */
const ABOUT_THE_SESSION = /\bsession/i;

export function sessionUnknown(reply: Pick<UpstreamReply, 'status' | 'errorText'>): boolean {
  if (reply.status === 404) return true;
  if (reply.status !== 400 || reply.errorText === undefined) return false;
  let body: unknown;
  try {
    body = JSON.parse(reply.errorText);
  } catch {
    // Plain text (the Python SDK's): the whole of it is the reason.
    return ABOUT_THE_SESSION.test(reply.errorText);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false;
  const { id, error } = body as { id?: unknown; error?: { message?: unknown } };
  // An answer to the request (its id) is the server's verdict on it, whatever it says.
  if (id !== null && id !== undefined) return false;
  return typeof error?.message === 'string' && ABOUT_THE_SESSION.test(error.message);
}
