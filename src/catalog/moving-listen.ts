// A modern client's subscriptions/listen through the catalog, kept on the catalog of the running
// configuration. A reload that builds a new catalog (its rules, its members) takes the listen there
// (OpenListens.serve): the same request is posted to the new one, and once that is acknowledged the old
// catalog's fan-out is stopped, so the client's stream goes on under the same subscription id. (Opened
// first, the new listen joins a kept member's upstream stream before the old one leaves it: stopped first,
// a legacy member's session lost its GET stream, and a v1 SDK server refused the one opened again at once.) Left on the old catalog, a listen kept
// relaying what members the reload retired said, judged under rules no longer in force, and never heard a
// rebuilt member. The client's filter was settled by its acknowledgment, sent once (2026-07-28
// basic/patterns/subscriptions.mdx §Acknowledgment): when the new catalog honours less of it, the listen
// ends with its completion result instead (§Graceful Closure), and the client's next listen is acknowledged
// anew. When it honours all of it, the client is told that each list it asked about changed: the new rules
// and members may show other items (tools.mdx §List Changed Notification).

import { Cancellation } from '../pipeline/cancellation.js';
import type { Principal } from '../pipeline/principal.js';
import type { JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../protocol/jsonrpc.js';
import type { UpstreamReply } from '../pipeline/ports.js';
import { META_SUBSCRIPTION_ID } from '../protocol/methods.js';
import { acknowledgedUris } from '../protocol/answer-stream-rule.js';
import type { Catalog } from './catalog.js';
import type { OpenListen, OpenListens } from './open-listens.js';

type Filter = Record<string, unknown>;

const LIST_KINDS = [
  ['toolsListChanged', 'tools'],
  ['promptsListChanged', 'prompts'],
  ['resourcesListChanged', 'resources'],
] as const;

/** One catalog's fan-out of the listen. */
interface Leg {
  catalog: Catalog;
  messages: UpstreamReply['messages'];
  /** Ends this fan-out alone (the client's own end ends every leg through `stop`). */
  handover: Cancellation;
  dispose(): void;
}

const MOVED = Symbol('moved');

export class MovingListen implements OpenListen {
  uris: readonly string[] = [];
  /** The catalog whose fan-out feeds the client now (or next). */
  private on: Catalog;
  /** Wakes the read waiting on the current leg when the listen is to move (one per read, see messages). */
  private interrupt: (() => void) | undefined;

  constructor(
    readonly principal: Principal,
    readonly capabilities: Record<string, unknown>,
    readonly receivedAt: number,
    on: Catalog,
    private readonly request: JsonRpcRequest,
    private readonly headers: Record<string, string>,
    /** The client's own end (it left, or its deadline): the whole listen stops. */
    private readonly stop: Cancellation,
    /** Where it is held: told of its first acknowledgment, to judge it if a reload's judgement missed it. */
    private readonly heldBy: OpenListens,
  ) {
    this.on = on;
  }

  end(): void {
    this.stop.cancel();
  }

  moveTo(catalog: Catalog): boolean {
    if (catalog === this.on || this.stop.aborted) return false;
    this.on = catalog;
    this.interrupt?.();
    return true;
  }

  /** The client's messages: the acknowledgment once, then each catalog's notifications in turn, then the end. */
  async *messages(): AsyncGenerator<JsonRpcMessage, void, void> {
    /** The first acknowledgment's filter: what every later catalog must honour for the listen to go on. */
    let promised: Filter | undefined;
    // Nothing acknowledged yet: a listen the first catalog fails fails as any call does.
    let leg = await this.open(this.on);
    try {
      for (;;) {
        if (leg.catalog === this.on) {
          // A promise of its own for each read: raced every time against one that lives as long as the leg,
          // each read would leave a reaction on it, and a listen heard for days would pile them up.
          const step = await Promise.race([leg.messages.next(), new Promise<typeof MOVED>((resolve) => (this.interrupt = () => resolve(MOVED)))]);
          this.interrupt = undefined;
          if (step !== MOVED) {
            if (step.done) return;
            if (promised === undefined && isAcknowledgment(step.value)) {
              promised = filterOf(step.value);
              this.uris = acknowledgedUris(promised);
              this.heldBy.acknowledged(this);
            }
            yield step.value;
            continue;
          }
        }
        // Taken to another catalog (now, or while the last one was reached).
        const next = await this.openAcknowledged(this.on);
        close(leg);
        if (next === undefined || (promised !== undefined && !honoursAll(next.honoured, promised))) {
          // No member of the new catalog answers, or it honours less than the client was promised.
          if (next !== undefined) close(next.leg);
          yield this.completion();
          return;
        }
        leg = next.leg;
        if (promised === undefined) {
          // The old catalog had not acknowledged yet: the new one's is the client's first.
          promised = next.honoured;
          this.uris = acknowledgedUris(promised);
          this.heldBy.acknowledged(this);
          yield next.acknowledgment;
          continue;
        }
        for (const [flag, kind] of LIST_KINDS) if (promised[flag] === true) yield this.listChanged(kind);
      }
    } finally {
      close(leg);
    }
  }

  private async open(catalog: Catalog): Promise<Leg> {
    const handover = new Cancellation();
    const link = this.stop.linkedWith(handover);
    try {
      const reply = await catalog.post(this.request, this.headers, link.cancel, this.principal);
      return { catalog, messages: reply.messages, handover, dispose: link.dispose };
    } catch (err) {
      link.dispose();
      throw err;
    }
  }

  /** A leg on `catalog` and its acknowledgment; undefined when it failed or ended without one. */
  private async openAcknowledged(catalog: Catalog): Promise<{ leg: Leg; honoured: Filter; acknowledgment: JsonRpcMessage } | undefined> {
    let leg: Leg;
    try {
      leg = await this.open(catalog);
    } catch {
      return undefined;
    }
    const first = await leg.messages.next().catch(() => undefined);
    if (first === undefined || first.done || !isAcknowledgment(first.value)) {
      close(leg);
      return undefined;
    }
    return { leg, honoured: filterOf(first.value), acknowledgment: first.value };
  }

  private listChanged(kind: string): JsonRpcMessage {
    return { jsonrpc: '2.0', method: `notifications/${kind}/list_changed`, params: { _meta: { [META_SUBSCRIPTION_ID]: this.request.id } } };
  }

  /** subscriptions.mdx §Graceful Closure: the listen's own result, as a fan-out that ends sends it. */
  private completion(): JsonRpcResponse {
    return { jsonrpc: '2.0', id: this.request.id, result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: this.request.id } } };
  }
}

/** Stops a leg's fan-out and lets go of its messages (a read still pending ends with the fan-out). */
function close(leg: Leg): void {
  leg.handover.cancel();
  leg.dispose();
  void leg.messages.return(undefined).catch(() => {});
}

function isAcknowledgment(msg: JsonRpcMessage): boolean {
  return 'method' in msg && msg.method === 'notifications/subscriptions/acknowledged' && !('id' in msg);
}

function filterOf(msg: JsonRpcMessage): Filter {
  const notifications = 'params' in msg ? (msg.params as { notifications?: unknown } | undefined)?.notifications : undefined;
  return typeof notifications === 'object' && notifications !== null ? (notifications as Filter) : {};
}

/** Whether `honoured` keeps every list flag and resource URI `promised` named. */
function honoursAll(honoured: Filter, promised: Filter): boolean {
  for (const [flag] of LIST_KINDS) if (promised[flag] === true && honoured[flag] !== true) return false;
  const uris = new Set(acknowledgedUris(honoured));
  return acknowledgedUris(promised).every((uri) => uris.has(uri));
}
