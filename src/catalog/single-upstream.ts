// One upstream is served by byte pass-through when nothing about it needs rewriting, and through the
// catalog when something does: unsafe or over-long tool names (issue 4: names are safe whatever the
// upstream count), `prefix: always`, access rules that make lists differ per caller, rules that hide
// some of the upstream's items from everyone (AccessPolicy.perCaller), or `tools.pinning: enforce` (a list
// passed through would show clients definitions the pins never judged). Names are only known once the
// upstream has been listed. A client listing tools or prompts waits for that check, and the check is made
// again on each such list, with that client's capabilities (a legacy server may offer a tool only to clients
// that declared one). The client's own list is a second read, so the page that passes through is checked
// as well: one that shows a name the catalog would rewrite or hide hands the upstream to the catalog and
// reaches the client with the catalog's names (what the upstream lists between the two reads was relayed
// unchecked, until 5 December). Under access rules the first
// legacy `initialize` waits for it too, so that its session opens on the path that will serve it (a session
// opened on the pass-through is not known to the catalog). A call by name is passed
// through (the pipeline's resolve stage lists the upstream when it meets a name it does not know). Once the
// catalog is needed it stays chosen, since the upstream's sessions cannot move between the two paths.

import type { Logger } from '../log/logger.js';
import type { CallContext } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';
import { interceptFinal, type FinalVerdict } from '../pipeline/final-answer.js';
import type { JsonRpcResponse } from '../protocol/jsonrpc.js';
import type { ModernFace, SubscriptionJudge, Upstream } from '../pipeline/ports.js';
import type { Principal } from '../pipeline/principal.js';
import type { ClientEra } from '../protocol/versions.js';
import { capabilitiesKey, type Catalog } from './catalog.js';
import type { CatalogUpstream } from './catalog-upstream.js';
import { opensListenStream, type PassThroughStreams } from './pass-through-streams.js';
import { changesSubscriptions, type PassThroughSubscriptions } from './pass-through-subscriptions.js';

type Mode = 'undecided' | 'direct' | 'catalog';

/**
 * A legacy tool callable only as a 2025-11-25 task: Gatehouse's own lists never show one (the modern-client
 * bridge leaves them out), and upstream/task-offers.ts, around this path, takes out those whose name is not
 * safe (and all of them where rules govern tools); the others run as tasks on the pass-through.
 */
function taskOnly(item: unknown): boolean {
  return typeof item === 'object' && item !== null && (item as { execution?: { taskSupport?: unknown } }).execution?.taskSupport === 'required';
}

/** After a failed check of the names, do not check again for this long (see decide). */
const RECHECK_AFTER_FAILURE_MS = 30_000;

export class SingleUpstream implements Upstream {
  readonly name: string;
  readonly transport: 'http' | 'stdio' | 'sse';
  private mode: Mode;
  /**
   * Checks under way, by the capability set they list with: a caller waits for a check made with its own
   * capabilities, never another's (entries leave when settled, so there are no more than calls in flight).
   */
  private readonly deciding = new Map<string, Promise<Mode>>();
  private checkFailedAt = -Infinity;

  constructor(
    private readonly member: Upstream,
    private readonly catalog: CatalogUpstream,
    forceCatalog: boolean,
    private readonly log: Logger,
    /**
     * Access rules hide items from everyone: the upstream may well have some, so the first legacy
     * `initialize` waits for the check, and its session opens on the path that will serve it.
     */
    private readonly decideAtInitialize = false,
    /** Where the listening streams the pass-through opens are held, for the reload that retires it to end. */
    private readonly streams?: PassThroughStreams,
  ) {
    this.name = member.name;
    this.transport = member.transport;
    this.mode = forceCatalog ? 'catalog' : 'undecided';
  }

  /** True while the member is served by byte pass-through rather than through the catalog. */
  get passesThrough(): boolean {
    return this.mode !== 'catalog';
  }

  /** The catalog in front of the one member: the resolve stage reads routes from it on both paths. */
  get routes(): Catalog {
    return this.catalog.catalog;
  }

  handle(ctx: CallContext): Promise<Outcome> {
    if (this.mode === 'catalog') return this.catalog.handle(ctx);
    const method = ctx.kind === 'request' ? ctx.method : undefined;
    if (method === 'tools/list' || method === 'prompts/list' || (method === 'initialize' && this.decideAtInitialize && this.mode === 'undecided')) return this.decideThenHandle(ctx);
    // Every listening stream the member answers is held, passed through or bridged (a client of the other
    // era, whose session the member's era bridge holds): the catalog knows neither kind of session, so the
    // reload that retires this path ends both. A bridge's subscriptions are its own, judged again by each
    // reload that keeps this path (rejudgeSubscriptions). Until 5 December only a client of an era the member
    // speaks was held: a bridged legacy session's GET stream outlived the switch, the upstream's listen behind
    // it still watching its URIs and relayed to a client whose every request was answered 404. Ordinary
    // calls stop at the method test.
    if (this.streams !== undefined && opensListenStream(ctx)) return this.heldListen(ctx, this.streams);
    // A legacy session's subscriptions are held by the upstream's session: noted, for a reload to judge again.
    // Until 5 December the era test here (and for holding) was knownEra(), 'modern' for a dual-era server,
    // whose legacy clients' GET streams and subscriptions were then neither held nor noted.
    if (this.streams !== undefined && changesSubscriptions(ctx) && ctx.era === 'legacy' && this.member.speaksEra('legacy')) return this.noted(ctx, this.streams.subscriptions);
    return this.member.handle(ctx);
  }

  /**
   * A call that changes a legacy session's subscriptions, noted as it goes up; a subscribe's answer is
   * looked at once it comes, for a reload that retired the pass-through, or judged the notes under newer
   * rules, while it was on its way (PassThroughSubscriptions.answered: this configuration's pass-through
   * names the rules that let it through). Only these calls pay for it.
   */
  private noted(ctx: CallContext, subscriptions: PassThroughSubscriptions): Promise<Outcome> {
    subscriptions.note(this.member, ctx);
    const outcome = this.member.handle(ctx);
    if (ctx.method !== 'resources/subscribe') return outcome;
    return outcome.then((answered) => interceptFinal(answered, ctx, async () => subscriptions.answered(this.member, this, ctx)));
  }

  /**
   * After a reload whose access rules hide tools or prompts from everyone (they do not force the catalog: the
   * names check decides), checks the names at once when the pass-through holds open streams, rather than at
   * the next list: until a client listed, those streams went on relaying what the upstream's sessions sent
   * about items the new rules hide (until 5 December). A check that chooses the catalog ends them (toCatalog).
   */
  async checkNamesForHeldStreams(): Promise<void> {
    if (this.mode === 'catalog' || !this.decideAtInitialize || this.streams?.holds(this.member) !== true) return;
    await this.decide(this.mode === 'direct', {});
  }

  /**
   * A listening stream on the pass-through, held so that the reload that retires this path ends it; this
   * configuration's pass-through names the rules that let it through (PassThroughStreams.hold).
   */
  private async heldListen(ctx: CallContext, streams: PassThroughStreams): Promise<Outcome> {
    return streams.hold(this.member, ctx, await this.member.handle(ctx), this);
  }

  private async decideThenHandle(ctx: CallContext): Promise<Outcome> {
    // With the client's capabilities only where access rules hide items (what a capability-gated tool could
    // leak): a check with another capability set needs a legacy session (in stdio, a child) of its own, a
    // cost the names alone do not justify. Without such rules a tool offered only to clients declaring a
    // capability is judged on the page that passes through (checkedPage).
    const mode = await this.decide(this.mode === 'direct', this.decideAtInitialize ? ctx.clientCapabilities : {});
    if (mode === 'catalog') return this.catalog.handle(ctx);
    const outcome = await this.member.handle(ctx);
    const kind = ctx.method === 'tools/list' ? 'tools' : ctx.method === 'prompts/list' ? 'prompts' : undefined;
    // The client's list is a second read of the upstream, after the check: what the upstream lists in
    // between (a tool it added, or a list it shows its clients and not Gatehouse) would reach the client
    // unchecked. So the page itself is checked on its way out (lists only: a call's answer is not read).
    return kind === undefined ? outcome : interceptFinal(outcome, ctx, (answer) => this.checkedPage(kind, answer.response, ctx));
  }

  /**
   * A page passed through, as it may reach the client: unchanged when the catalog would show every item
   * under the name it has; otherwise the catalog serves the upstream from now on, and this page already
   * carries its names (catalog.ts asCatalogued).
   */
  private async checkedPage(kind: 'tools' | 'prompts', response: JsonRpcResponse, ctx: CallContext): Promise<FinalVerdict> {
    const result = response.result;
    const items = result?.[kind];
    if (result === undefined || !Array.isArray(items)) return undefined;
    const legacy = ctx.era === 'legacy';
    if (items.every((item: unknown) => (legacy && taskOnly(item)) || this.routes.showsAsWritten(kind, this.name, item))) return undefined;
    if (this.mode !== 'catalog') this.toCatalog('upstream now lists names that need rewriting; serving it through the catalog from now on');
    // Listed with the client's own capabilities: the page may hold a tool offered only to clients declaring
    // one (a list made with none would not name it), and the catalog lists with them from now on anyway.
    const named = await this.routes.asCatalogued(kind, this.name, items, ctx.clientCapabilities, ctx.principal);
    return { response: { ...response, result: { ...result, [kind]: named } } };
  }

  /**
   * Serves the member through the catalog from now on, and ends the listening streams its pass-through
   * opened, as a reload that retires the pass-through does: their sessions are unknown to the catalog (their
   * next request is answered 404), and left open they would go on relaying what the upstream sends under
   * the names the catalog now rewrites or hides (a legacy GET stream: its session's notifications and server
   * requests, whose answers meet the 404). Until 5 December they stayed open until their clients left.
   */
  private toCatalog(message: string): void {
    this.mode = 'catalog';
    this.log.info(message, { upstream: this.name });
    const ended = this.streams?.retire(this.member) ?? 0;
    if (ended > 0) this.log.info('the listening streams the pass-through opened were ended: the upstream is served through the catalog now', { upstream: this.name, ended });
  }

  /**
   * Lists the upstream as the gateway; an upstream that cannot be listed now is not listed again for a while,
   * so a failing check does not cost every request. Meanwhile its lists pass through, unless access rules
   * hide items from everyone: then they go through the catalog, since unchecked they could show one.
   */
  private decide(again: boolean, capabilities: Record<string, unknown>): Promise<Mode> {
    if (Date.now() - this.checkFailedAt < RECHECK_AFTER_FAILURE_MS) return Promise.resolve(this.unchecked());
    const key = capabilitiesKey(capabilities);
    const pending = this.deciding.get(key);
    if (pending) return pending;
    const deciding = this.catalog.namesUnchanged(capabilities).then(
      (unchanged) => {
        // The catalog once chosen stays chosen (the header comment): a check with other capabilities that
        // saw nothing to rewrite does not undo it.
        const next: Mode = unchanged && this.mode !== 'catalog' ? 'direct' : 'catalog';
        if (next === 'catalog' && this.mode !== 'catalog') this.toCatalog(again ? 'upstream now lists names that need rewriting; serving it through the catalog from now on' : 'upstream tool names need rewriting; serving it through the catalog');
        this.mode = next;
        this.deciding.delete(key);
        return next;
      },
      (err: unknown) => {
        this.log.warn('could not list the upstream to check its names; for now its lists are served unchecked (through the catalog, when access rules hide items)', { upstream: this.name, err });
        this.checkFailedAt = Date.now();
        this.deciding.delete(key);
        return this.unchecked();
      },
    );
    this.deciding.set(key, deciding);
    return deciding;
  }

  /** The path while the names cannot be checked: as decided before, else the safe one when rules hide things. */
  private unchecked(): Mode {
    return this.mode === 'catalog' || (this.mode === 'undecided' && this.decideAtInitialize) ? 'catalog' : 'direct';
  }

  refusesCoreTasks(ctx: CallContext): Promise<boolean> {
    return this.mode === 'catalog' ? this.catalog.refusesCoreTasks() : this.member.refusesCoreTasks(ctx);
  }

  knownEra(): 'modern' | 'legacy' | undefined {
    return this.member.knownEra();
  }

  /** The member's answer: on the pass-through its clients are served as it routes them. */
  speaksEra(era: ClientEra): boolean {
    return this.member.speaksEra(era);
  }

  knowsTool(name: string): boolean {
    return this.catalog.knowsTool(name);
  }

  /**
   * The sessions the member's own legacy-client bridges hold (a legacy client of a modern server), judged
   * again after a reload as the catalog's are (gateway.ts). Until 5 December they were not: a URI the new
   * rules hid stayed subscribed, and its updates went on reaching the client. Sessions on the pass-through
   * (a legacy client of a legacy server) are not judged here: see README.md "Across a reload".
   */
  async rejudgeSubscriptions(mayKeep: SubscriptionJudge): Promise<void> {
    await this.member.rejudgeSubscriptions?.(mayKeep);
  }

  ready(): Promise<boolean> {
    return this.member.ready();
  }

  modernFace(): Promise<ModernFace> {
    return this.member.modernFace();
  }

  visibleToolCount(principal: Principal): Promise<number> {
    return this.catalog.visibleToolCount(principal);
  }

  async close(): Promise<void> {
    // The catalog owns the member and closes it too (unless the gateway, which shares both across reloads,
    // lets go of them itself and never calls this).
    await this.catalog.close();
  }
}
