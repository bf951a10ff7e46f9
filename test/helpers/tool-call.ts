// A tools/call through a test gateway as the policy tests make it: one stateless 2026-07-28 request, whose
// answer must be HTTP 200 (approvals, limits and refusals are tool results, not HTTP errors), read as the
// result fields those tests look at.

import assert from 'node:assert/strict';
import { modernRequest, post } from './http.js';

export interface ToolResult {
  isError?: boolean;
  content: Array<{ text: string }>;
  /** A policy outcome: its code (approval_pending, approval_limit, …) and what else it names. */
  structuredContent?: { error?: { code: string; message: string; approvalId?: string; reason?: string; [field: string]: unknown } };
  _meta?: Record<string, unknown>;
}

let n = 0;
/** Calls `name` on the gateway at `url`, with `bearer` (an API key or access token) when given. */
export async function callTool(url: string, bearer: string | undefined, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const req = modernRequest(++n, 'tools/call', { name, arguments: args });
  const res = await post(url, req.body, bearer === undefined ? req.headers : { ...req.headers, authorization: `Bearer ${bearer}` });
  assert.equal(res.status, 200, res.text);
  return res.json().result as ToolResult;
}

/** The approval a held call waits for (its `dev.gatehouse/approval_id`). */
export const approvalIdOf = (r: ToolResult): string => r._meta?.['dev.gatehouse/approval_id'] as string;

/**
 * What became of a call: its policy outcome's code, `error` for a tool error, else `ran`. The code is in
 * `structuredContent.error`, or in `_meta["dev.gatehouse/error"]` for a tool that declares an outputSchema.
 */
export const codeOf = (r: ToolResult): string => r.structuredContent?.error?.code ?? (r._meta?.['dev.gatehouse/error'] as { code?: string } | undefined)?.code ?? (r.isError ? 'error' : 'ran');

/**
 * What became of an SDK client's request: its result, or its JSON-RPC error code and message (NaN where the
 * error carries no numeric code), so a test can assert a refusal and a success alike without try/catch.
 */
export async function attempt(run: () => Promise<unknown>): Promise<{ result: unknown } | { code: number; message: string }> {
  try {
    return { result: await run() };
  } catch (err) {
    const e = err as { code?: unknown; message?: string };
    return { code: typeof e.code === 'number' ? e.code : NaN, message: String(e.message) };
  }
}
