// Confirmation by the user (`by: user`): Gatehouse asks the person at the client, through elicitation, with
// a form that shows the exact call. A modern client gets an InputRequiredResult (2026-07-28 mrtr.mdx) whose
// requestState names the approval; its retry carries the answer. A legacy client gets `elicitation/create`
// on the call's own SSE stream (2025-11-25 transports.mdx §Sending Messages 6) and POSTs its answer back,
// which the approval stage hands here. Only the session's owner can answer.

import { isObject } from '../protocol/era-shapes.js';
import type { JsonRpcId, JsonRpcResponse } from '../protocol/jsonrpc.js';
import type { CallContext } from '../pipeline/context.js';
import { principalKey } from '../pipeline/principal.js';
import type { Approval } from './approval.js';

/** The inputRequests key of Gatehouse's own question. */
export const CONFIRM_KEY = 'dev.gatehouse/confirm';
/** Marks a requestState as Gatehouse's (an approval id follows), not the upstream's. */
export const CONFIRM_STATE_PREFIX = 'gatehouse-approval:';
/** Ids of Gatehouse's own server-to-client requests on a legacy stream. */
export const CONFIRM_ID_PREFIX = 'gatehouse-confirm-';

export type ConfirmationChannel = 'modern' | 'legacy';

export interface UserAnswer {
  accepted: boolean;
  /** Why not, in words a reviewer or the model can read. */
  reason?: string;
}

/** How this client can be asked, if at all: it declared form elicitation, and (legacy) it reads SSE in a session. */
export function confirmationChannel(ctx: CallContext): ConfirmationChannel | undefined {
  const caps = ctx.clientCapabilities.elicitation;
  if (!isObject(caps)) return undefined;
  // elicitation.mdx §Capabilities: {} means form mode only; otherwise form must be listed.
  if (Object.keys(caps).length > 0 && !isObject(caps.form)) return undefined;
  if (ctx.era === 'modern') return 'modern';
  return ctx.acceptsSse && ctx.sessionId !== undefined ? 'legacy' : undefined;
}

/** The elicitation/create params: the exact call, and one checkbox. */
export function confirmationRequest(a: Approval): Record<string, unknown> {
  return {
    message: [
      'Gatehouse needs your confirmation before this tool call runs.',
      '',
      `Tool: ${a.tool} (${a.toolRef})`,
      `Arguments: ${JSON.stringify(a.preview, null, 2)}`,
      '',
      `Approval ${a.id} (rule "${a.rule}"). Nothing runs unless you accept.`,
    ].join('\n'),
    requestedSchema: {
      type: 'object',
      properties: { confirm: { type: 'boolean', title: 'Run this call', description: 'Let exactly this call run once', default: false } },
      required: ['confirm'],
    },
  };
}

/** The user's answer (an ElicitResult): accepted only with the box checked. */
export function readAnswer(result: unknown): UserAnswer {
  if (!isObject(result)) return { accepted: false, reason: 'the client gave no answer' };
  if (result.action === 'accept') {
    const content = isObject(result.content) ? result.content : {};
    return content.confirm === true ? { accepted: true } : { accepted: false, reason: 'the user did not confirm the call' };
  }
  return { accepted: false, reason: result.action === 'decline' ? 'the user declined the call' : 'the user cancelled the confirmation' };
}

interface Waiter {
  owner: string;
  resolve(response: JsonRpcResponse | undefined): void;
}

/** Gatehouse's questions waiting for a legacy client's answer, by session and request id. */
export class PendingConfirmations {
  private readonly waiting = new Map<string, Waiter>();
  private counter = 0;

  /** A new request id, and the promise of the client's response (undefined when the wait ends without one). */
  ask(ctx: CallContext, timeoutMs: number): { id: string; answer: Promise<JsonRpcResponse | undefined> } {
    const id = `${CONFIRM_ID_PREFIX}${Date.now().toString(36)}-${++this.counter}`;
    const key = `${ctx.sessionId}\u0000${id}`;
    const answer = new Promise<JsonRpcResponse | undefined>((resolve) => {
      const done = (response: JsonRpcResponse | undefined): void => {
        if (!this.waiting.delete(key)) return;
        clearTimeout(timer);
        ctx.cancel.offCancel(gone);
        resolve(response);
      };
      const gone = (): void => done(undefined);
      const timer = setTimeout(gone, timeoutMs);
      timer.unref();
      ctx.cancel.onCancel(gone);
      this.waiting.set(key, { owner: principalKey(ctx.principal), resolve: done });
    });
    return { id, answer };
  }

  /** Whether a client's response answers one of Gatehouse's questions (then it goes no further). */
  static isOurs(ctx: CallContext): boolean {
    if (ctx.kind !== 'response') return false;
    const id = (ctx.message as { id?: JsonRpcId }).id;
    return typeof id === 'string' && id.startsWith(CONFIRM_ID_PREFIX);
  }

  /** Hands a client's response to the question it answers, if the same caller asked it in this session. */
  settle(ctx: CallContext): boolean {
    const response = ctx.message as JsonRpcResponse;
    const waiter = this.waiting.get(`${ctx.sessionId}\u0000${String(response.id)}`);
    if (waiter === undefined || waiter.owner !== principalKey(ctx.principal)) return false;
    waiter.resolve(response);
    return true;
  }
}
