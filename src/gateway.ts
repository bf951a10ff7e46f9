// The composition root: builds a running gateway from a validated config. It is the only module that
// knows every part; everything else receives what it needs.

import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError, formatIssue, parseConfigText } from './config/load.js';
import { unsupportedFeatures } from './config/semantic-checks.js';
import { storeTlsProblems, storeTlsWarnings } from './config/store-tls.js';
import { locateProblems } from './config/locate-problems.js';
import { expiredKeys } from './config/config-warnings.js';
import { storeTlsExpiryWarnings } from './config/store-tls-expiry.js';
import { reviewerReachWarnings } from './config/reviewer-reach.js';
import { changedListenKeys, listenRestartProblem } from './config/listen-changes.js';
import { watchConfigFile, type ConfigCheck, type ConfigWatcher } from './config/watch.js';
import { isStdioUpstream, type GatehouseConfig, type ListenConfig, type UpstreamConfig } from './config/types.js';
import { createEdge, type Edge } from './edge/server.js';
import { compileHostOriginGuard } from './edge/origin-guard.js';
import type { Logger } from './log/logger.js';
import type { InterpolatedValue } from './config/interpolate.js';
import { collectSecrets } from './config/secrets.js';
import { Authenticator } from './auth/authenticator.js';
import { insufficientScope } from './auth/challenge.js';
import { buildResourceMetadata } from './auth/resource-metadata.js';
import type { Principal } from './pipeline/principal.js';
import { SessionBinding } from './auth/session-binding.js';
import { AuthFailureLimiter } from './auth/failure-limit.js';
import { isLoopback } from './net/loopback.js';
import { AccessPolicy } from './policy/access.js';
import { GatewayMetrics } from './metrics/metrics.js';
import { createMetricsListener, type MetricsListener } from './metrics/listener.js';
import { logRequests } from './log/request-log.js';
import { compileResolveStage } from './catalog/resolve-stage.js';
import { unknownItemMessage } from './catalog/catalog.js';
import { CatalogUpstream } from './catalog/catalog-upstream.js';
import { SingleUpstream } from './catalog/single-upstream.js';
import { compileAccessStage, STEP_UP_METHODS } from './policy/access-stage.js';
import { ArgumentSchemas } from './policy/argument-schemas.js';
import { compileArgumentsStage } from './policy/arguments-stage.js';
import { compileOutputStage } from './policy/output-stage.js';
import { buildPipeline, type Pipeline } from './pipeline/order.js';
import type { LegacyBridgeFactory, SubscriptionJudge, Upstream } from './pipeline/ports.js';
import { compileUpstreamStage } from './pipeline/upstream-stage.js';
import { LegacyClientBridge, type ReplacePause } from './upstream/bridge-legacy-client.js';
import { auditCalls } from './audit/audit-trail.js';
import { traceCalls } from './tracing/tracing.js';
import { compileIdempotencyStage, type IdempotencyStore, type RunLimit } from './policy/idempotency-stage.js';
import { StoreGuard } from './store/guard.js';
import { openStore } from './store/open-store.js';
import { tlsOnlyChange, useStoreTls } from './store/store-reload.js';
import { compileStateStage } from './store/state-stage.js';
import { createSseUpstream, SseUpstream } from './upstream/sse-upstream.js';
import { DetectedTransport } from './upstream/detected-transport.js';
import { taskOffersTakenOut, withoutToolTaskOffers } from './upstream/task-offers.js';
import { compileApprovalStage } from './approvals/approval-stage.js';
import { ApprovalBook, type ApprovalStore } from './approvals/book.js';
import { compileApprovalRules, policyVersion } from './approvals/rules.js';
import { PinBook, pinView, type PinStore } from './approvals/pins.js';
import { compilePinStage } from './approvals/pin-stage.js';
import { compilePinReviewers, type PinReviewers } from './approvals/pin-reviewers.js';
import { RequestStateSeal } from './auth/request-state-seal.js';
import { CallDeadlines } from './pipeline/call-deadline.js';
import { compileToolTimeouts, type ToolTimeout } from './upstream/tool-timeouts.js';
import type { CallLimit } from './pipeline/upstream-stage.js';
import { compileRequestStateStage } from './auth/request-state-stage.js';
import { PendingConfirmations } from './approvals/user-confirmation.js';
import { createAdminListener, type AdminAttempts, type AdminListener } from './admin/server.js';
import { ReviewerAuth, type Reviewer, type VerifyToken } from './admin/reviewer-auth.js';
import { compileClientAddress } from './net/client-address.js';
import { HttpUpstream } from './upstream/http.js';
import { EgressPolicy, systemResolver, type ResolveHost } from './policy/egress/egress-policy.js';
import { EgressProxy, uncredentialedOwner } from './policy/egress/proxy.js';
import { compileEgressStage, resourceUriBlocked, type ResourceUpstream } from './policy/egress-stage.js';
import { checkIpLimit, compileLimits, type TakeToken } from './policy/rate-limits.js';
import { compileRateLimitStage } from './policy/rate-limit-stage.js';
import { compileBudgets, compileBudgetStage } from './policy/budget-stage.js';
import { BreakerBoard, compileBreakers, compileBreakerStage } from './policy/breaker-stage.js';
import { StdioUpstream } from './upstream/stdio-sessions.js';
import { UpstreamLeases } from './upstream/upstream-leases.js';
import { catalogLeaseKey, frontLeaseKey, leaseKey } from './upstream/lease-key.js';
import { LegacyFront } from './catalog/legacy-front.js';
import { OpenListens } from './catalog/open-listens.js';
import { PassThroughStreams } from './catalog/pass-through-streams.js';

export interface Gateway {
  /** Starts listening; resolves with the MCP endpoint URL once the port is bound. */
  listen(): Promise<string>;
  /**
   * The first step of a shutdown: `/readyz` answers 503 while every request is still served, for the running
   * config's `shutdown.delayMs`, so load balancers (a Service's endpoints) stop sending new connections before
   * `close` refuses them. Resolves when the delay is over, or cut short by `skipDelay` or `close`.
   */
  withdraw(): Promise<void>;
  /** Cuts a running `withdraw` delay short (a second stop signal); false when none is running. */
  skipDelay(): boolean;
  /**
   * Stops accepting, drains in-flight requests for up to `shutdown.graceMs`, then stops upstreams. `quiet`:
   * no drain and stop lines (a gateway that never started serving has nothing to report).
   */
  close(options?: { quiet?: boolean }): Promise<void>;
  /**
   * Applies a new config: a new upstream is built and swapped in atomically, the old one closed once its
   * in-flight calls had `shutdown.graceMs` to finish. An upstream whose entry is unchanged is not rebuilt, nor
   * one whose entry changed only in the limits it takes in place (lease-key.ts):
   * both configurations share it, with its children (event streams), sessions and era verdict (UpstreamLeases),
   * and so is the catalog (legacy clients' sessions with several upstreams) when all it is built from is unchanged.
   * `listen` is static (read at start); changing it is refused. Returns the problems when the new config is
   * refused and the running one stays. `interpolated`: the values its file read through
   * `${env:...}`/`${file:...}` (LoadOptions.interpolated), for the log scrubber.
   * `source`: the file's name and text, to locate the problems in (`FILE:LINE:COL key.path: message`).
   */
  reload(next: GatehouseConfig, interpolated?: readonly InterpolatedValue[], source?: { file: string; text: string }): Promise<string[]>;
  /**
   * Reads the watched config file now (SIGHUP) instead of at the next poll, applying it when its content
   * changed. `none` when no file is watched (a config from flags, or not listening yet).
   */
  checkConfigFile(): Promise<ConfigCheck | 'none'>;
  /** Reloads applied and refused so far. */
  readonly reloads: { applied: number; refused: number };
  /** The metrics URL once listening, when metrics are enabled. */
  readonly metricsUrl: string | undefined;
  /** The admin API's base URL once listening, when admin.enabled. */
  readonly adminUrl: string | undefined;
  /** The egress proxy's URL once listening, when policy.egressProxy is enabled. */
  readonly egressProxyUrl: string | undefined;
  readonly edge: Edge;
}

export interface GatewayOptions {
  /** The file the config came from: watched, and reloaded when its content changes. */
  configFile?: string;
  /** The text of `configFile` the config was read from: a change made to the file while starting is applied. */
  configText?: string;
  /**
   * What each file the config read through `${file:...}` held when it was loaded (loadConfigFileWithText's
   * `files`): a secret rotated while starting is applied too.
   */
  configFiles?: ReadonlyMap<string, string>;
  /** The listener as the file named it (before command-line overrides); reloads compare with this. */
  fileListen?: ListenConfig;
  /** The store as the file named it (before `--store`); reloads compare with this. */
  fileStore?: GatehouseConfig['store'];
  env?: NodeJS.ProcessEnv;
  /** How egress checks resolve host names (A and AAAA); the system resolver unless a test stands in. */
  resolveHost?: ResolveHost;
  /** The tracing export timeout, when code (a test) sets one: not a config key (tracing.ts, exportTimeoutMs). */
  tracingExportTimeoutMs?: number;
  /** What cuts answers at their upstream's timeouts.callMs; the gateway's own unless a test stands in with a held clock. */
  callDeadlines?: CallDeadlines;
  /**
   * How the legacy-client bridges of Streamable HTTP upstreams wait out a replacement listen's pause
   * (bridge-legacy-client.ts); timers unless a test stands in to end each pause when it chooses.
   */
  replacePause?: ReplacePause;
}

/**
 * What the runtime (upstream pools and sessions, catalog, auth, policy) is built from: the config without
 * its log settings, which the running process follows on its own. A reload that leaves this unchanged keeps
 * the runtime.
 */
/**
 * What the runtime (upstreams, catalog, pipeline, auth) is built from: the config without the log settings
 * and the admin API's credentials, which a reload applies in place.
 */
function runtimeShape(config: GatehouseConfig): string {
  return JSON.stringify({ ...config, log: undefined, admin: { ...config.admin, token: undefined, groups: undefined } });
}

/** How often approvals past their deadline are looked for, to record their expiry. */
const APPROVAL_SWEEP_MS = 60_000;
/**
 * How far back each sweep indexes approvals stored without an index entry (opened by a replica still on an
 * older version): a few sweeps' worth, so one that failed is made up by the next.
 */
const RECENTLY_OPENED_MS = 5 * APPROVAL_SWEEP_MS;

export function createGateway(config: GatehouseConfig, log: Logger, options: GatewayOptions = {}): Gateway {
  const problems = unsupportedFeatures(config);
  if (problems.length > 0) throw new Error(`This configuration cannot be served:\n  ${problems.join('\n  ')}`);
  const sessionBinding = new SessionBinding(config.sessions, (id, reason) => log.debug('session binding ended', { session: id.slice(0, 8), reason }));
  // Metrics read live state through these closures; `edge` and `runtime` are assigned just below.
  const metrics = config.metrics.enabled
    ? new GatewayMetrics({
        inFlight: () => edge.inFlight,
        legacySessions: () => sessionBinding.size,
        storeUp: () => state.available,
        // Without approval rules nothing here is waiting for a decision (those a reload removed no longer govern a call).
        pendingApprovals: async () => (running.policy.approvals.length === 0 ? 0 : approvalBook.pendingCount()),
        breakers: () => breakerBoard.all(),
        upstreams: () => upstreamStates(runtime.upstream),
      })
    : undefined;
  // The store is opened once and kept across reloads (like the listener); a changed `store` needs a restart,
  // but for store.tls alone (a rotated certificate), which its next connections take up (store-reload.ts).
  const storeLog = log.child({ component: 'store' });
  const state = new StoreGuard(openStore(config.store, storeLog), storeLog, () => metrics?.storeError());
  // What reloads compare the file's store with. Given by `--store` instead, the running store is not the
  // file's, and nothing of the file's applies to it.
  let storeBaseline = options.fileStore ?? config.store;
  const storeFromFile = options.fileStore === undefined || JSON.stringify(options.fileStore) === JSON.stringify(config.store);
  // `serve --config redis.yaml --store x.db` runs on the file, as every flag beats the config; but a replica
  // meant to share the config's Redis would count, limit and audit alone, and nothing would say so.
  if (options.fileStore?.kind === 'redis' && config.store.kind === 'sqlite') {
    log.warn('--store replaces the config file\'s Redis store: this process keeps its state (audit, counters, approvals, pins) in a SQLite file of its own, shared with no other replica', { path: config.store.path });
  }
  // Approvals and tool pins live in the store, shared by replicas and kept across reloads.
  const confirmations = new PendingConfirmations();
  const pinBook = new PinBook(pinStore(state), log.child({ component: 'pinning' }), { changed: () => metrics?.pinnedToolChanged() });
  const approvalBook = new ApprovalBook(approvalStore(state), { decided: (d) => metrics?.approvalDecided(d) });
  // Approvals stored before the store indexed them (by caller, for the limit per caller; in the order they
  // were opened, for the admin API's pages), and pins before the store kept a set of them, are indexed once
  // per start, and again by the sweep until it has been done: without it they would be neither counted nor
  // shown to reviewers.
  let reindexed: Promise<void> | undefined;
  const reindex = (): void => {
    reindexed ??= Promise.all([approvalBook.reindex(), pinBook.reindex()]).then(
      () => undefined,
      (err: unknown) => {
        reindexed = undefined;
        log.debug('approvals and pins stored before their index not indexed this time', { err });
      },
    );
  };
  // Pins are listed only through the admin API; a pin is checked by its id, which needs no set.
  if (config.policy.approvals.length > 0 || config.admin.enabled) reindex();
  // An approval whose deadline passes unused is recorded expired even if its caller never calls again.
  const expirySweep = setInterval(() => {
    const since = Date.now() - RECENTLY_OPENED_MS;
    // Pins a replica still on an older version stored after this one's reindex (a rolling upgrade) are
    // added to the pins' set, so reviewers see them without a restart; only lately stored ones are read.
    if (running.admin.enabled && running.tools.pinning !== 'off') pinBook.indexRecent(since).catch((err: unknown) => log.debug('pins stored lately not indexed this time', { err }));
    if (running.policy.approvals.length === 0) return;
    reindex();
    approvalBook.recordExpiries({ indexOpenedSince: since }).catch((err: unknown) => log.debug('approval expiries not recorded this time', { err }));
  }, APPROVAL_SWEEP_MS).unref();
  const observeUpstream = (name: string, seconds: number): void => metrics?.upstreamResponse(name, seconds);
  const resolveHost = options.resolveHost ?? systemResolver;
  // The egress proxy is started once (like the listener) and reads the running rules; stdio children get
  // its address once it listens (their env objects are filled in then, see ChildEnv).
  const egressProxy = config.policy.egressProxy.enabled
    ? new EgressProxy(
        () => runtime.egress,
        () => uncredentialedOwner(running.upstreams, isLoopback(config.policy.egressProxy.host)),
        log.child({ component: 'egress-proxy' }),
        { counted: (upstream, verdict) => metrics?.egressProxy(upstream, verdict) },
        (name) => {
          const u = running.upstreams.find((one) => one.name === name);
          return u !== undefined && !isStdioUpstream(u) ? u.egressProxyToken : undefined;
        },
      )
    : undefined;
  const childEnv = new ChildEnv(egressProxy);
  // Kept across reloads: what this replica last saw of each circuit, for the gauge.
  const breakerBoard = new BreakerBoard();
  // `sessions` is read once: a reload keeps the key, so the states clients hold stay good.
  const requestStates = new RequestStateSeal(config.sessions.requestStateKey, config.sessions.requestStateTtlMs);
  // One clock for every answer that must end by its upstream's timeouts.callMs, across reloads.
  // Kept across reloads too: upstreams a reload leaves unchanged, with their children, sessions and era
  // verdicts (UpstreamLeases).
  const kept = { requestStates, deadlines: options.callDeadlines ?? new CallDeadlines(), leases: new UpstreamLeases<Upstream | LegacyFront>(), openListens: new OpenListens(), passThroughStreams: new PassThroughStreams(log), replacePause: options.replacePause };
  let runtime = buildRuntime(config, log, observeUpstream, state, resolveHost, breakerBoard, childEnv, { book: approvalBook, pins: pinBook, confirmations }, kept);
  let running = config;
  // Kept across reloads: a reload must not wipe the count of an address that is guessing keys.
  // Counted in the store (shared by replicas); in memory while the store cannot count.
  const authFailures = new AuthFailureLimiter(config.auth.failureLimit, (key, windowMs) => state.run((s) => s.addToWindow(key, 1, windowMs)));
  const takeToken: TakeToken = (key, bucket, cost = 1) => state.runNow((s) => s.takeTokens(key, bucket, cost));
  const edgeOptions = {
    loopback: isLoopback(config.listen.host),
    auth: new Authenticator(config, log),
    sessions: sessionBinding,
    sessionLimits: config.sessions,
    authFailures,
    // Read through `runtime`, so a reload's new per-address limits apply from the next request on.
    ipLimit: (address: string, principal: Principal, batch?: number) => (runtime.ipLimits.length === 0 ? undefined : checkIpLimit(runtime.ipLimits, principal, address, takeToken, batch)),
  };
  let adminListener: AdminListener | undefined;
  /** Who may use the admin API; a reload hands it the new token and groups. */
  let reviewerAuth: ReviewerAuth | undefined;
  let adminUrl: string | undefined;
  let metricsListener: MetricsListener | undefined;
  let metricsUrl: string | undefined;
  let egressProxyUrl: string | undefined;
  const reloads = { applied: 0, refused: 0 };
  /** Runtimes replaced by a reload, closed after the grace period or at shutdown, whichever is first. */
  const retired = new Set<Runtime>();
  let watcher: ConfigWatcher | undefined;
  if (config.auth.anonymous) log.warn('authentication is off: anonymous access on a loopback listener', { host: config.listen.host });
  warnExpiredKeys(config, log);
  warnStoreCertificates(config, log);
  warnUnreachableReviewers(config, log);

  const edge = createEdge(
    config.listen,
    {
      call: (ctx) => runtime.pipeline(ctx),
      readiness: async () => {
        const [upstreams, up] = await Promise.all([
          runtime.upstream instanceof CatalogUpstream ? runtime.upstream.readiness() : runtime.upstream.ready().then((ok) => ({ [runtime.upstream.name]: ok })),
          state.check(),
        ]);
        return { upstreams, store: { kind: state.store.kind, up } };
      },
      grantContext: (principal) => grantContext(principal, runtime.catalog, log),
      upstreamName: () => runtime.upstream.name,
      mayStepUp: (method) => runtime.challenges && STEP_UP_METHODS.has(method),
    },
    log,
    edgeOptions,
  );
  // Metrics and the request log hear about calls from the pipeline's events, as the audit will. The request
  // log follows `log.requests` across reloads: an operator can turn it on to look at traffic, then off.
  let stopRequestLog: (() => void) | undefined;
  const followRequestLog = (on: boolean): void => {
    stopRequestLog?.();
    stopRequestLog = on && log.enabled('info') ? logRequests(edge.token, log, config.tracing.enabled) : undefined;
  };
  followRequestLog(config.log.requests);
  const stopObserving = [
    ...(metrics ? [metrics.observe(edge.token, (name) => (runtime.catalog.knowsTool(name) ? name : undefined))] : []),
    () => followRequestLog(false),
    // The audit hears every governed call's answer, and the answer waits for its record.
    ...(config.audit.enabled ? [auditCalls(edge.token, state, config.audit, log.child({ component: 'audit' }))] : []),
  ];
  if (!config.audit.enabled) log.warn('the audit is off (audit.enabled: false): tools/call is answered without a record');
  // Spans hear the same events; the OpenTelemetry packages load only when tracing is on.
  const tracing = config.tracing.enabled ? traceCalls(edge.token, options.tracingExportTimeoutMs === undefined ? config.tracing : { ...config.tracing, exportTimeoutMs: options.tracingExportTimeoutMs }, log.child({ component: 'tracing' }), options.env ?? process.env, metrics?.traceExports()) : undefined;

  /** The runtime and authenticator of a reload's config; nothing half-built is left running when either throws. */
  function buildNext(next: GatehouseConfig, previousAuth: Authenticator): { runtime: Runtime; auth: Authenticator } {
    const nextRuntime = buildRuntime(next, log, observeUpstream, state, resolveHost, breakerBoard, childEnv, { book: approvalBook, pins: pinBook, confirmations }, kept);
    try {
      return { runtime: nextRuntime, auth: new Authenticator(next, log, previousAuth) };
    } catch (err) {
      nextRuntime.close().catch(() => {});
      throw err;
    }
  }

  let closing: Promise<void> | undefined;
  let withdrawing: Promise<void> | undefined;
  /** Ends the running withdraw delay; undefined when none runs. */
  let endDelay: (() => void) | undefined;
  async function reloadFromText(file: string, text: string): Promise<void> {
    let next: GatehouseConfig;
    const interpolated: InterpolatedValue[] = [];
    try {
      next = parseConfigText(text, { fileName: basename(file), baseDir: dirname(resolve(file)), env: options.env ?? process.env, interpolated });
    } catch (err) {
      reloads.refused++;
      metrics?.reload('refused');
      const issues = err instanceof ConfigError ? err.issues.map(formatIssue) : [String((err as Error).message)];
      log.error('config reload refused; the running config stays', { problems: issues });
      return;
    }
    // The watcher does not wait for this: whatever goes wrong is logged here, never left to take the process down.
    await gateway.reload(next, interpolated, { file: basename(file), text }).catch((err: unknown) => {
      reloads.refused++;
      metrics?.reload('refused');
      log.error('config reload refused; the running config stays', { problems: [String((err as Error).message)] });
    });
  }
  const gateway: Gateway = {
    edge,
    reloads,
    get metricsUrl() {
      return metricsUrl;
    },
    get egressProxyUrl() {
      return egressProxyUrl;
    },
    get adminUrl() {
      return adminUrl;
    },
    async reload(next, interpolated = [], source) {
      // The listener is static: a reload keeps the running one (with any command-line overrides).
      const baseline = options.fileListen ?? running.listen;
      const listenChange = listenRestartProblem(baseline, next.listen);
      if (listenChange !== undefined) log.warn('config reload: listen changes take effect only after a restart', { keys: changedListenKeys(baseline, next.listen).map((k) => `listen.${k}`) });
      next = { ...next, listen: running.listen };
      const adminListen = (a: GatehouseConfig['admin']): string => JSON.stringify([a.enabled, a.host, a.port]);
      // A rotated store.tls (and nothing else of the store) applies to the store's next connections; it is
      // checked as at start, so a broken pair is refused here, not met at the next connection.
      const tlsRotation = storeFromFile && tlsOnlyChange(storeBaseline, next.store);
      // Judged as it will run, with what is read only at start kept: a file that turns the admin API on and
      // asks for reviewers in one edit would otherwise get reviewers and no admin API to decide with.
      const semantic = unsupportedFeatures({ ...next, store: running.store, admin: { ...running.admin, token: next.admin.token, groups: next.admin.groups } });
      if (tlsRotation) semantic.push(...storeTlsProblems(next.store));
      // Located in the file like the schema's findings of a reload, when the text is at hand.
      const problems = source === undefined ? semantic : locateProblems(source.file, source.text, semantic);
      if (problems.length > 0 && adminListen(next.admin) !== adminListen(running.admin)) {
        problems.push('admin.enabled, admin.host and admin.port are read at start: the running admin API is the one judged; restart to apply the new ones');
      }
      // Judged with the running listen, a problem quotes its values against a file that says otherwise: say why.
      if (problems.length > 0 && listenChange !== undefined) problems.push(listenChange);
      if (closing) problems.push('shutting down');
      if (problems.length > 0) {
        reloads.refused++;
        metrics?.reload('refused');
        log.error('config reload refused; the running config stays', { problems });
        return problems;
      }
      if (!tlsRotation && JSON.stringify(next.store) !== JSON.stringify(storeBaseline)) log.warn('config reload: store changes take effect only after a restart');
      for (const section of ['tracing', 'audit', 'metrics', 'sessions'] as const) {
        if (JSON.stringify(next[section]) !== JSON.stringify(running[section])) log.warn(`config reload: ${section} changes take effect only after a restart`);
      }
      if (JSON.stringify(next.policy.egressProxy) !== JSON.stringify(running.policy.egressProxy)) log.warn('config reload: policy.egressProxy changes take effect only after a restart');
      // The admin API's listener is static; its credentials follow the reload (a rotated token is the usual reason for one).
      if (adminListen(next.admin) !== adminListen(running.admin)) log.warn('config reload: admin.enabled, admin.host and admin.port take effect only after a restart');
      // Those keep the running values, as does the listener.
      next = {
        ...next,
        store: tlsRotation ? next.store : running.store,
        tracing: running.tracing,
        audit: running.audit,
        metrics: running.metrics,
        sessions: running.sessions,
        policy: { ...next.policy, egressProxy: running.policy.egressProxy },
        admin: { ...running.admin, token: next.admin.token, groups: next.admin.groups },
      };
      // A change to the log settings alone (an operator turning the request log on to look at traffic) or to
      // the admin API's credentials (a rotated token) keeps the upstream connections, sessions and catalog:
      // rebuilding them would cost every upstream a new handshake and a fresh tools/list for nothing.
      const logOnly = runtimeShape(next) === runtimeShape(running);
      // New secret values are scrubbed from logs from now on (none are forgotten), a rotated admin token too.
      log.addSecrets(collectSecrets(next, interpolated));
      if (!logOnly) {
        // Everything new is built before anything is swapped: a config the build refuses (a URL the schema's
        // pattern let through but no parser takes, say) leaves the running one whole, and the process up.
        let built: { runtime: Runtime; auth: Authenticator };
        try {
          built = buildNext(next, edgeOptions.auth);
        } catch (err) {
          reloads.refused++;
          metrics?.reload('refused');
          const problem = `the new config could not be built: ${(err as Error).message}`;
          log.error('config reload refused; the running config stays', { problems: [problem] });
          return [problem];
        }
        const previous = runtime;
        runtime = built.runtime;
        runtime.adopt();
        // Keys, tokens and rules apply from the next request on.
        const previousAuth = edgeOptions.auth;
        edgeOptions.auth = built.auth;
        authFailures.configure(next.auth.failureLimit);
        previousAuth.close();
        // Calls already on the old upstream keep their references; give them the grace period, then close it.
        retired.add(previous);
        setTimeout(() => {
          if (retired.delete(previous)) void previous.close();
        }, next.shutdown.graceMs).unref();
      }
      if (next.log.requests !== running.log.requests) followRequestLog(next.log.requests);
      reviewerAuth?.configure(next.admin.token, next.admin.groups);
      // Start-up says so too: a reload that serves callers without credentials must not pass as a plain reload.
      if (next.auth.anonymous && !running.auth.anonymous) log.warn('authentication is off: anonymous access on a loopback listener', { host: next.listen.host });
      warnExpiredKeys(next, log);
      warnStoreCertificates(next, log);
      warnUnreachableReviewers(next, log);
      if (tlsRotation) {
        useStoreTls(state.store, next.store);
        storeBaseline = next.store;
        log.info('config reload: the new store.tls applies to the store\'s connections from now on');
      }
      running = next;
      breakerBoard.keepOnly(next.policy.breakers.map((b) => b.id));
      reloads.applied++;
      metrics?.reload('applied');
      log.info('config reloaded', { upstreams: next.upstreams.map((u) => u.name), ...(logOnly ? { kept: 'upstreams, catalog, auth' } : { ...(runtime.keptUpstreams.length > 0 ? { keptUpstreams: runtime.keptUpstreams } : {}), ...(runtime.keptCatalog ? { keptCatalog: true } : runtime.keptCatalogSessions ? { keptCatalogSessions: true } : {}) }) });
      return [];
    },
    withdraw() {
      withdrawing ??= new Promise<void>((resolve) => {
        edge.withdraw();
        const delayMs = running.shutdown.delayMs;
        if (delayMs === 0 || closing) return resolve();
        log.info('shutting down: /readyz answers 503 and requests are still served until shutdown.delayMs is over, so load balancers stop sending new ones', { delayMs });
        // Logged when the delay runs out (not when a second signal cuts it short): what began the drain.
        const timer = setTimeout(() => {
          log.info('shutdown.delayMs is over; draining', { delayMs });
          endDelay?.();
        }, delayMs);
        endDelay = () => {
          endDelay = undefined;
          clearTimeout(timer);
          resolve();
        };
      });
      return withdrawing;
    },
    skipDelay() {
      if (endDelay === undefined) return false;
      endDelay();
      return true;
    },
    async checkConfigFile() {
      return watcher === undefined ? 'none' : watcher.checkNow();
    },
    async listen() {
      await tracing?.ready;
      if (egressProxy) {
        egressProxyUrl = await bound('the egress proxy', 'policy.egressProxy.port', config.policy.egressProxy.host, config.policy.egressProxy.port, () => egressProxy.listen(config.policy.egressProxy.host, config.policy.egressProxy.port));
        childEnv.proxyReady();
      }
      if (config.admin.enabled) {
        const verify: VerifyToken = async (headers) => {
          // The credential alone: auth.requiredScopes are the MCP endpoint's; reviewers are judged by group.
          const verdict = await edgeOptions.auth.verifyCredential(headers);
          return verdict.ok ? verdict : { ok: false, unavailable: verdict.refusal.status === 503 };
        };
        // The MCP endpoint's failed-auth count, per client address found the same way: guesses on either
        // port add up, so the admin port is no second budget.
        const addressOf = compileClientAddress(config.listen.trustedProxies);
        const adminAddress = (req: IncomingMessage): string => addressOf(req.socket.remoteAddress, req.headers['x-forwarded-for']);
        const attempts: AdminAttempts = {
          retryAfter: (req) => (authFailures.anyBlocked ? authFailures.retryAfter(adminAddress(req)) : 0),
          fail: (req) => authFailures.fail(adminAddress(req)),
        };
        // tools.pinningReviewers of the running config, compiled again only when a reload changed it.
        let reviewersOf: { entries: GatehouseConfig['tools']['pinningReviewers']; compiled: PinReviewers } | undefined;
        const pinReviewers = (): PinReviewers => {
          const entries = running.tools.pinningReviewers;
          if (reviewersOf?.entries !== entries) reviewersOf = { entries, compiled: compilePinReviewers(entries) };
          return reviewersOf.compiled;
        };
        const pinDesk = {
          page: async (after: string | undefined, limit: number) => {
            const page = await pinBook.page(after, limit);
            return { pins: page.pins.map(pinView), next: page.next };
          },
          accept: (ref: string, by: string, digest: string) => pinBook.accept(ref, by, digest),
          mayReview: (ref: string, reviewer: Reviewer) => pinReviewers().mayReview(ref, reviewer),
          refused: (ref: string, by: string, digest: string | undefined) => pinBook.refused(ref, by, digest),
        };
        adminListener = createAdminListener({
          book: approvalBook,
          policyVersion: () => runtime.policyVersion,
          // Follows tools.pinning across reloads: pinning turned on must be reviewable, turned off must not be.
          get pins() {
            return running.tools.pinning === 'off' ? undefined : pinDesk;
          },
          auth: (reviewerAuth = new ReviewerAuth(running.admin.token, running.admin.groups, verify)),
          attempts,
          log: log.child({ component: 'admin' }),
        });
        const admin = adminListener;
        adminUrl = await bound('the admin API', 'admin.port', config.admin.host, config.admin.port, () => admin.listen(config.admin.host, config.admin.port));
        log.info('admin API listening', { url: adminUrl });
      }
      if (metrics) {
        metricsListener = createMetricsListener(metrics, config.metrics.path, log, compileHostOriginGuard({ allowedHosts: [], allowedOrigins: [] }, isLoopback(config.metrics.host)));
        const listener = metricsListener;
        metricsUrl = await bound('metrics', 'metrics.port', config.metrics.host, config.metrics.port, () => listener.listen(config.metrics.host, config.metrics.port));
        log.info('metrics listening', { url: metricsUrl });
      }
      // The store is asked once before the MCP endpoint takes calls. The guard starts out taking it as up, so
      // a store out of reach from the start (a Redis refusing the client certificate, or down) was first met
      // by a call's audit record, after that call had run upstream. Unanswered, the store is marked down and
      // governed calls are refused 503 until its probe gets an answer. Bounded by the store's own waits
      // (Redis: the first connection's few seconds, then commandTimeoutMs).
      await state.check();
      return new Promise((resolve, reject) => {
        const failed = (err: Error): void => reject(new ListenError('the MCP endpoint', 'listen.port', config.listen.host, config.listen.port, err));
        edge.server.once('error', failed);
        edge.server.listen(config.listen.port, config.listen.host, () => {
          edge.server.off('error', failed);
          const { port } = edge.server.address() as AddressInfo;
          if (options.configFile !== undefined) {
            const configFile = options.configFile;
            watcher = watchConfigFile(configFile, (text, changed) => {
              // A rotated secret leaves the config's text as it was: say which file brought the reload.
              const reads = changed.filter((f) => f !== configFile);
              if (reads.length > 0) log.info('config reload: a file the config reads changed', { files: reads });
              void reloadFromText(configFile, text);
            }, { ...(options.configText !== undefined ? { loadedText: options.configText } : {}), ...(options.configFiles !== undefined ? { loadedFiles: options.configFiles } : {}) });
          }
          const host = config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host;
          resolve(`http://${host}:${port}${config.listen.path}`);
        });
      });
    },
    close(closeOptions = {}) {
      closing ??= (async () => {
        // A close while the withdraw delay runs ends it: the drain starts now.
        endDelay?.();
        // The running config's grace: shutdown.graceMs follows a reload, as it does for a retired runtime.
        const graceMs = running.shutdown.graceMs;
        if (!closeOptions.quiet) log.info('shutting down: draining in-flight requests', { inFlight: edge.inFlight, graceMs });
        edge.startDraining();
        const serverClosed = new Promise<void>((r) => edge.server.close(() => r()));
        const drained = await edge.drained(graceMs);
        if (!drained) log.warn('grace period over; closing the requests still in flight', { inFlight: edge.inFlight });
        edge.server.closeAllConnections();
        await serverClosed;
        watcher?.stop();
        clearInterval(expirySweep);
        await metricsListener?.close();
        await adminListener?.close();
        await egressProxy?.close();
        edgeOptions.auth.close();
        sessionBinding.close();
        edge.close();
        for (const stop of stopObserving) stop();
        await tracing?.stop();
        await Promise.all([runtime.close(), ...[...retired].map((r) => r.close())]);
        await state.close();
        retired.clear();
        if (!closeOptions.quiet) log.info('stopped');
      })();
      return closing;
    },
  };
  return gateway;
}

/** A listener that could not bind: which one, the config key that sets its port, and why. */
export class ListenError extends Error {
  readonly code: string | undefined;
  constructor(
    readonly listener: string,
    readonly portKey: string,
    readonly host: string,
    readonly port: number,
    cause: Error,
  ) {
    super(`cannot listen on ${host}:${port} for ${listener}: ${cause.message}`, { cause });
    this.name = 'ListenError';
    this.code = (cause as NodeJS.ErrnoException).code;
  }
}

async function bound<T>(listener: string, portKey: string, host: string, port: number, listen: () => Promise<T>): Promise<T> {
  try {
    return await listen();
  } catch (err) {
    throw new ListenError(listener, portKey, host, port, err as Error);
  }
}

/** What one configuration runs: the upstream adapter, the catalog in front of it, and the pipeline. */
interface Runtime {
  upstream: Upstream;
  catalog: CatalogUpstream;
  pipeline: Pipeline;
  /** The egress rules of this configuration (the egress stage and the egress proxy read them). */
  egress: EgressPolicy;
  /** Whether an access rule may answer a call with a step-up (`onMissingScopes: challenge`). */
  challenges: boolean;
  /** The version of this configuration's policy, which approvals are bound to. */
  policyVersion: string;
  /** policy.rateLimits with per: ip, applied at the door. */
  ipLimits: ReturnType<typeof compileLimits>['ip'];
  /** The upstreams this runtime took over, running, from the one before (those a reload left unchanged). */
  keptUpstreams: readonly string[];
  /** Whether the catalog (and the legacy clients' sessions it holds) was taken over too. */
  keptCatalog: boolean;
  /** Whether a new catalog took over the legacy clients' sessions of the one before (legacy-front.ts). */
  keptCatalogSessions: boolean;
  /** Called once this runtime is the running one: kept upstreams take its settings they take in place. */
  adopt(): void;
  close(): Promise<void>;
}

/**
 * Several upstreams go through the catalog. One upstream keeps the byte pass-through unless something
 * must be rewritten or judged: `prefix: always`, `tools.pinning: enforce`, lists that differ per caller, or names that are not safe or items
 * the access rules hide from everyone (found out by SingleUpstream on first use, and on each list). The pipeline is compiled here, once per configuration.
 */
function buildRuntime(config: GatehouseConfig, log: Logger, observeUpstream: (upstream: string, seconds: number) => void, state: StoreGuard, resolveHost: ResolveHost, breakerBoard: BreakerBoard, childEnv: ChildEnv, approvals: { book: ApprovalBook; pins: PinBook; confirmations: PendingConfirmations }, kept: { requestStates: RequestStateSeal; deadlines: CallDeadlines; leases: UpstreamLeases<Upstream | LegacyFront>; openListens: OpenListens; passThroughStreams: PassThroughStreams; replacePause: ReplacePause | undefined }): Runtime {
  // Building an upstream starts its sweepers (intervals) at once: one built before another throws, or before
  // anything after them does, is closed again (or released), or each refused reload would leave its timers running.
  const members: Upstream[] = [];
  const keptUpstreams: string[] = [];
  const retunes: Array<() => void> = [];
  /** What each member was acquired under: the catalog's key names its members by them. */
  const memberKeys: string[] = [];
  let catalog: CatalogUpstream | undefined;
  let front: LegacyFront | undefined;
  try {
    for (const u of config.upstreams) {
      // Every upstream holds what a rebuild would lose: a stdio upstream's children (an HTTP+SSE one's event
      // streams) with its clients' sessions, what the server keeps for them and the calls in flight; a
      // Streamable HTTP one its era verdict, the sessions Gatehouse holds for legacy clients of a modern
      // server and those it pooled on a legacy one. A reload that leaves its config as it was keeps it
      // running, rather than ending all that after shutdown.graceMs. The key is all it is built from
      // (`sessions` is kept by reloads anyway).
      const key = leaseKey(u, config.sessions);
      const lease = kept.leases.acquire(key, () => createUpstream(isStdioUpstream(u) ? { ...u, env: childEnv.for(u.name, u.env) } : u, config.sessions, log, observeUpstream, kept.replacePause));
      members.push(lease.upstream);
      memberKeys.push(key);
      if (!lease.reused) continue;
      keptUpstreams.push(u.name);
      // A kept upstream takes the limits its key leaves out (lease-key.ts) once this config is the running
      // one: a reload refused after this point must leave the running config's values.
      const running = lease.upstream;
      if (isStdioUpstream(u) && running instanceof StdioUpstream) retunes.push(() => running.retune(u));
      else if (!isStdioUpstream(u) && running instanceof SseUpstream) retunes.push(() => running.retuneHttp(u));
      else if (!isStdioUpstream(u) && (running instanceof HttpUpstream || running instanceof DetectedTransport)) retunes.push(() => running.retune(u));
    }
    const egress = new EgressPolicy(config.policy.egress, resolveHost);
    const uriPrefixes = new Map(members.map((m, i) => [m, config.upstreams[i]!.uriPrefixes] as const));
    const access = new AccessPolicy(config.policy.rules);
    // The challenge of a step-up names the protected-resource metadata, as a 401 does.
    const metadataUrl = buildResourceMetadata(config)?.url;
    const bridgeLegacyClients: LegacyBridgeFactory = (messages, profile, staleVerdict) => new LegacyClientBridge(messages, profile, config.sessions, staleVerdict, false, log);
    // The catalog holds legacy clients' sessions (with several upstreams, all of them), the subscriptions it
    // keeps for them, and its lists and capabilities: a reload that leaves all it is built from as it was (the
    // same running members, read the same way) keeps it too. Its members are this runtime's to release, not
    // the catalog's: each runtime that shares the catalog holds them as well.
    // A new catalog over the same upstreams by name takes over the old one's legacy sessions once it runs.
    const frontLease = kept.leases.acquire(frontLeaseKey(config), () => new LegacyFront(bridgeLegacyClients));
    const legacySessions = frontLease.upstream;
    front = legacySessions;
    const catalogLease = kept.leases.acquire(catalogLeaseKey(memberKeys, config), () => new CatalogUpstream(members, uriPrefixes, config.tools.naming.prefix, bridgeLegacyClients, log, access, () => Promise.resolve(), legacySessions, kept.openListens));
    catalog = catalogLease.upstream;
    const perCaller = access.perCaller(config.auth.apiKeys.some((k) => k.tools !== undefined));
    // Under `pinning: enforce` one upstream is served through the catalog too: on the pass-through a client's
    // tools/list went up and came back as it was, so the client's model could read a definition the pin
    // stage never judged (changed since Gatehouse's own read, or shown to clients only) and its calls ran.
    const forceCatalog = config.tools.naming.prefix === 'always' || perCaller || config.tools.pinning === 'enforce';
    const upstream: Upstream = members.length > 1 ? catalog : new SingleUpstream(members[0]!, catalog, forceCatalog, log, access.governs('tools') || access.governs('prompts'), kept.passThroughStreams);
    const schemas = new ArgumentSchemas(log);
    const routes = catalog.catalog;
    const shared = catalog;
    // Policy state lives in the store, keyed by entry id: a reload keeps every counter, bucket and circuit.
    const limits = compileLimits(config.policy.rateLimits);
    const policyLog = log.child({ component: 'policy' });
    const version = policyVersion(config.policy);
    const offers = taskOffersTakenOut({ auditing: config.audit.enabled, outputValidation: config.tools.outputValidation, accessGovernsTools: access.governs('tools') });
    // A resource is judged under the rule of the upstream that reads it: one upstream reads every URI;
    // in a catalog, the member the read will go to, after the list again a URI nobody listed makes (as
    // the catalog itself does next), so a URI just listed is not judged by the defaults instead.
    const resourceUpstream: ResourceUpstream = async (uri, capabilities, orTemplate, principal) => {
      if (members.length === 1) return config.upstreams[0]!.name;
      const owner = routes.resourceOwner(uri, orTemplate, principal);
      if (owner !== undefined) return owner;
      // A URI template has braces (RFC 6570), a URI never does: it is looked for where it can be.
      await routes.relistAsUnknown(orTemplate && uri.includes('{') ? 'resources/templates' : 'resources', capabilities);
      return routes.resourceOwner(uri, orTemplate, principal);
    };
    // What a legacy session's resource subscription must still pass once this config runs: a subscribe of it
    // now (the access stage's verdict, then the egress stage's).
    const mayKeepSubscription: SubscriptionJudge = async (principal, uri, capabilities) => routes.mayHearResource(principal, uri) && !(await resourceUriBlocked(egress, resourceUpstream, principal, capabilities, uri));
    const pipeline = buildPipeline({
      state: compileStateStage(state),
      // A name the upstream does not list may pass on unchecked only where nothing needs its definition: not
      // under access rules for its kind, and for tools not under `pinning: enforce` (a tool never listed was
      // never pinned, and would run unreviewed while the upstream's list fails).
      resolve: compileResolveStage({ catalog: routes, log, passThrough: (kind) => (upstream instanceof SingleUpstream && upstream.passesThrough && !access.governs(kind) && !(kind === 'tools' && config.tools.pinning === 'enforce') ? upstream.name : undefined) }),
      access: compileAccessStage({
        policy: access,
        relist: (kind, capabilities) => routes.relistAsUnknown(kind, capabilities),
        unknownItemMessage,
        insufficientScope: (scopes, message) => insufficientScope(scopes, message, metadataUrl),
      }),
      requestState: compileRequestStateStage(kept.requestStates),
      pin: compilePinStage(config.tools.pinning, approvals.pins, policyLog),
      arguments: compileArgumentsStage({ schemas, uncheckable: config.tools.uncheckableSchemas, pinning: config.tools.pinning, outputValidation: config.tools.outputValidation, refusesCoreTasks: (ctx) => upstream.refusesCoreTasks(ctx), auditing: config.audit.enabled, refreshRoute: (route, capabilities) => routes.resolve(route.kind, route.publicName, capabilities, true) }),
      egress: compileEgressStage(egress, resourceUpstream),
      rateLimit: compileRateLimitStage(limits.call, (key, bucket) => state.runNow((s) => s.takeTokens(key, bucket, 1))),
      budget: compileBudgetStage(
        compileBudgets(config.policy.budgets),
        (key, amount, limit, window) => state.runNow((s) => s.spendBudget(key, amount, limit, window)),
        (key, amount, window, resetsAt) => state.run((s) => s.refundBudget(key, amount, window, resetsAt)),
        policyLog,
      ),
      breaker: compileBreakerStage(
        compileBreakers(config.policy.breakers),
        { admit: (key, settings) => state.runNow((s) => s.breakerAdmit(key, settings)), record: (key, ok, settings, probe) => state.run((s) => s.breakerRecord(key, ok, settings, probe)), release: (key, settings, probe) => state.run((s) => s.breakerRelease(key, settings, probe)) },
        breakerBoard,
        policyLog,
      ),
      approval: compileApprovalStage(compileApprovalRules(config.policy.approvals), approvals.book, version, { maxPending: config.approvals.maxPendingPerCaller }, approvals.confirmations, policyLog),
      idempotency: compileIdempotencyStage(config.idempotency, idempotencyStore(state), runLimits(config)),
      output: compileOutputStage(config.tools.outputValidation, schemas, log),
      // Under the audit no tool is called as a task, under `enforce` (arguments stage) and access rules on
      // tools (resolve stage) no task-only tool: no legacy client is told it could be. Nor is one shown a
      // task-only tool under a name Gatehouse would not give (task-offers.ts).
      upstream: compileUpstreamStage(withoutToolTaskOffers(upstream, offers), log, { limitOf: callLimits(config), deadlines: kept.deadlines }),
    });
    return { upstream, catalog, pipeline, egress, challenges: access.challenges, policyVersion: version, ipLimits: limits.ip, keptUpstreams, keptCatalog: catalogLease.reused, keptCatalogSessions: frontLease.reused && members.length > 1, adopt: () => {
      for (const retune of retunes) retune();
      legacySessions.serve(shared);
      // The sessions' subscriptions were judged under the rules of the config they were made in.
      void legacySessions.rejudgeSubscriptions(mayKeepSubscription).catch((err: unknown) => log.error('the legacy sessions\' subscriptions could not be judged under the reloaded rules', { err }));
      // So are those a single upstream's own bridges hold for legacy clients of a modern server.
      if (upstream instanceof SingleUpstream) void upstream.rejudgeSubscriptions(mayKeepSubscription).catch((err: unknown) => log.error('the upstream\'s legacy sessions\' subscriptions could not be judged under the reloaded rules', { err, upstream: upstream.name }));
      // The streams an upstream's pass-through opened end unless this config passes the same member through:
      // their sessions are unknown to the catalog, and unjudged they would go on relaying what the new rules
      // may hide (pass-through-streams.ts).
      const passedThrough = upstream instanceof SingleUpstream && upstream.passesThrough ? members[0] : undefined;
      const ended = kept.passThroughStreams.serve(passedThrough);
      if (ended > 0) log.info('a reload ended the listening streams opened on the pass-through it no longer serves', { ended });
      // Those it goes on passing through are judged as the catalog's listens are: one holding a URI the new
      // egress rules block ends (one the old rules let through and still on its way, once held: `upstream`
      // names these rules' pass-through).
      if (passedThrough !== undefined) {
        void kept.passThroughStreams.rejudge(passedThrough, mayKeepSubscription, upstream).then(
          (rejudged) => (rejudged > 0 ? log.info('a reload ended listens on the pass-through holding resource subscriptions its rules no longer allow', { ended: rejudged }) : undefined),
          (err: unknown) => log.error('the pass-through listens\' subscriptions could not be judged under the reloaded rules', { err, upstream: passedThrough.name }),
        );
        // Rules that hide items from everyone leave the choice of path to the names check: made now, not at
        // the next list, while streams are open (a check that chooses the catalog ends them).
        if (upstream instanceof SingleUpstream) void upstream.checkNamesForHeldStreams();
        // And the subscriptions legacy sessions made through it, which the upstream's sessions hold; a
        // subscribe the old rules let through and still on its way is judged when answered (`upstream` names
        // these rules' pass-through).
        void kept.passThroughStreams.subscriptions.rejudge(passedThrough, mayKeepSubscription, upstream).then(
          (dropped) => (dropped > 0 ? log.info('a reload had the upstream drop resource subscriptions legacy sessions made through the pass-through that its rules no longer allow', { dropped, upstream: passedThrough.name }) : undefined),
          (err: unknown) => log.error('the pass-through legacy sessions\' subscriptions could not be judged under the reloaded rules', { err, upstream: passedThrough.name }),
        );
      }
      // So are modern clients' listens on any catalog: one holding a URI no longer allowed ends (open-listens.ts).
      // The others then move to the catalog served (moving-listen.ts): judged first, none is opened on it with
      // a URI egress now blocks.
      kept.openListens.serve(shared.catalog);
      void kept.openListens
        .rejudge(mayKeepSubscription)
        .then(
          (ended) => (ended > 0 ? log.info('a reload ended modern listens holding resource subscriptions its rules no longer allow', { ended }) : undefined),
          (err: unknown) => log.error('the modern listens\' subscriptions could not be judged under the reloaded rules', { err }),
        )
        .finally(() => {
          const moved = kept.openListens.moveAll();
          if (moved > 0) log.info('a reload moved modern listens to the catalog it built', { moved });
        });
    }, close: () => closeRuntime(shared, legacySessions, members, kept.leases) };
  } catch (err) {
    void closeRuntime(catalog, front, members, kept.leases).catch(() => {});
    throw err;
  }
}

/**
 * Lets go of what a runtime held: its catalog first (closed when no other runtime shares it), then its legacy
 * clients' sessions (ended when no catalog is left to serve them, through the members), then each member
 * (closed when no other runtime holds it).
 * The SingleUpstream or catalog in front holds nothing else.
 */
async function closeRuntime(catalog: CatalogUpstream | undefined, front: LegacyFront | undefined, members: readonly Upstream[], leases: UpstreamLeases<Upstream | LegacyFront>): Promise<void> {
  if (catalog !== undefined) await leases.release(catalog);
  if (front !== undefined) await leases.release(front);
  await Promise.all(members.map((m) => leases.release(m)));
}

/**
 * Which HTTP upstream's `timeouts.callMs` bounds an answer: the one that relayed it, else the one its route
 * names, else (a resource of several upstreams, say) the longest of them; stdio upstreams bound their own.
 * A call to a tool of that upstream with a limit of its own (`timeouts.tools`) is bounded by that instead.
 */
function callLimits(config: GatehouseConfig): CallLimit {
  const limits = new Map<string, number>();
  const toolLimits = new Map<string, ToolTimeout>();
  for (const u of config.upstreams) {
    if (isStdioUpstream(u)) continue;
    limits.set(u.name, u.timeouts.callMs);
    const perTool = compileToolTimeouts(u.timeouts.tools);
    if (perTool !== undefined) toolLimits.set(u.name, perTool);
  }
  const only = config.upstreams.length === 1 ? config.upstreams[0]!.name : undefined;
  let longest: { upstream: string; ms: number } | undefined;
  for (const [upstream, ms] of limits) if (longest === undefined || ms > longest.ms) longest = { upstream, ms };
  return (ctx, outcome) => {
    const name = outcome.kind === 'relay' ? outcome.upstream : (ctx.route?.upstream ?? only);
    if (name === undefined) return longest;
    const ms = limits.get(name);
    if (ms === undefined) return undefined;
    const route = ctx.route;
    const toolMs = route !== undefined && route.kind === 'tools' && route.upstream === name && ctx.method === 'tools/call' ? toolLimits.get(name)?.(route.original) : undefined;
    return toolMs === undefined ? { upstream: name, ms } : { upstream: name, ms: toolMs, setting: 'timeouts.tools' };
  };
}

/** `/health`: the caller's resolved grant, for operators debugging access. Never the credential itself. */
async function grantContext(principal: Principal, catalog: CatalogUpstream, log: Logger): Promise<Record<string, unknown>> {
  let visibleTools: number | null = null;
  try {
    visibleTools = await catalog.visibleToolCount(principal);
  } catch (err) {
    log.warn('/health could not count the visible tools', { err });
  }
  return {
    subject: principal.subject,
    tenant: principal.tenant ?? null,
    scopes: principal.scopes,
    groups: principal.groups,
    via: principal.via,
    ...(principal.keyId !== undefined ? { keyId: principal.keyId } : {}),
    ...(principal.tokenId !== undefined ? { tokenId: principal.tokenId } : {}),
    ...(principal.toolGlobs !== undefined ? { toolGlobs: principal.toolGlobs } : {}),
    expiresAt: principal.expiresAt !== undefined ? new Date(principal.expiresAt).toISOString() : null,
    visibleTools,
  };
}

/** The idempotency stage's view of the store: every operation through the guard, so a failure fails closed. */
function idempotencyStore(state: StoreGuard): IdempotencyStore {
  return {
    kind: state.store.kind,
    claim: (key, digest, owner, leaseMs, ttlMs) => state.run((s) => s.claimIdempotency(key, digest, owner, leaseMs, ttlMs)),
    renew: (key, owner, leaseMs) => state.run((s) => s.renewIdempotency(key, owner, leaseMs)),
    complete: (key, owner, response, ttlMs) => state.run((s) => s.completeIdempotency(key, owner, response, ttlMs)),
    release: (key, owner) => state.run((s) => s.releaseIdempotency(key, owner)),
    read: (key) => state.run((s) => s.readIdempotency(key)),
  };
}

/** The approvals' view of the store: every operation through the guard, so a failure fails closed. */
function approvalStore(state: StoreGuard): ApprovalStore {
  return {
    put: (id, doc, ttlMs, index) => state.run((s) => s.putApproval(id, doc, ttlMs, index)),
    get: (id) => state.run((s) => s.getApproval(id)),
    list: () => state.run((s) => s.listApprovals()),
    scan: (cursor, count) => state.run((s) => s.scanApprovals(cursor, count)),
    index: (id, entry, ttlMs, doc) => state.run((s) => s.indexApproval(id, entry, ttlMs, doc)),
    expired: (now) => state.run((s) => s.expiredApprovals(now)),
    unindexedSince: (since) => state.run((s) => s.unindexedApprovals(since)),
    pendingOf: (caller) => state.run((s) => s.pendingApprovalsOf(caller)),
    page: (after, limit, pendingOnly) => state.run((s) => s.listApprovalPage(after, limit, pendingOnly)),
    countPending: () => state.run((s) => s.countPendingApprovals()),
    claim: (key, digest, owner, leaseMs, ttlMs) => state.run((s) => s.claimIdempotency(key, digest, owner, leaseMs, ttlMs)),
    read: (key) => state.run((s) => s.readIdempotency(key)),
    release: (key, owner) => state.run((s) => s.releaseIdempotency(key, owner)),
    complete: (key, owner, response, ttlMs) => state.run((s) => s.completeIdempotency(key, owner, response, ttlMs)),
    renew: (key, owner, leaseMs) => state.run((s) => s.renewIdempotency(key, owner, leaseMs)),
    audit: (entry) => state.run((s) => s.appendAudit(entry)),
  };
}

/** The pins' view of the store: approvals' documents, but pins kept in a set of their own; through the guard. */
function pinStore(state: StoreGuard): PinStore {
  return {
    put: (id, doc, ttlMs) => state.run((s) => s.putPin(id, doc, ttlMs)),
    get: (id) => state.run((s) => s.getApproval(id)),
    page: (after, limit) => state.run((s) => s.listPinPage(after, limit)),
    scan: (cursor, count) => state.run((s) => s.scanApprovals(cursor, count)),
    index: (id) => state.run((s) => s.indexPin(id)),
    unindexedSince: (since) => state.run((s) => s.unindexedPins(since)),
    claim: (key, digest, owner, leaseMs, ttlMs) => state.run((s) => s.claimIdempotency(key, digest, owner, leaseMs, ttlMs)),
    read: (key) => state.run((s) => s.readIdempotency(key)),
    release: (key, owner) => state.run((s) => s.releaseIdempotency(key, owner)),
    complete: (key, owner, response, ttlMs) => state.run((s) => s.completeIdempotency(key, owner, response, ttlMs)),
    audit: (entry) => state.run((s) => s.appendAudit(entry)),
  };
}

/**
 * How long a call on a route may run, so a duplicate write waits for the first with its key that long: the
 * tool's own limit (`timeouts.tools`), else its upstream's `callMs` (HTTP) or `requestMs` (stdio).
 */
function runLimits(config: GatehouseConfig): RunLimit {
  const limits = new Map(
    config.upstreams.map((u) => {
      const general = isStdioUpstream(u) ? u.timeouts.requestMs : u.timeouts.callMs;
      const perTool = compileToolTimeouts(u.timeouts.tools);
      return [u.name, (tool: string) => perTool?.(tool) ?? general] as const;
    }),
  );
  const longest = Math.max(...config.upstreams.map((u) => (isStdioUpstream(u) ? u.timeouts.requestMs : u.timeouts.callMs)));
  return (route) => limits.get(route.upstream)?.(route.original) ?? longest;
}

function createUpstream(config: UpstreamConfig, sessions: GatehouseConfig['sessions'], log: Logger, observe: (upstream: string, seconds: number) => void, replacePause: ReplacePause | undefined): Upstream {
  if (isStdioUpstream(config)) return new StdioUpstream(config, sessions, log, (seconds) => observe(config.name, seconds));
  if (config.transport === 'sse') return createSseUpstream(config, sessions, log, (seconds) => observe(config.name, seconds));
  if (config.transport === 'auto') return new DetectedTransport(config, sessions, log, (seconds) => observe(config.name, seconds), replacePause);
  return new HttpUpstream(config, sessions, log, (seconds) => observe(config.name, seconds), replacePause);
}

/**
 * The environment of stdio children: their configured `env`, plus, with the egress proxy on, HTTP_PROXY and
 * HTTPS_PROXY with their upstream's credentials. Children read their env object when they are spawned, so
 * the objects handed out before the proxy listens are filled in when it does.
 */
class ChildEnv {
  private readonly waiting: Array<{ upstream: string; env: Record<string, string> }> = [];
  private ready = false;

  constructor(private readonly proxy: EgressProxy | undefined) {}

  for(upstream: string, configured: Record<string, string>): Record<string, string> {
    const env = { ...configured };
    if (this.proxy === undefined) return env;
    if (this.ready) Object.assign(env, this.proxy.envFor(upstream));
    else this.waiting.push({ upstream, env });
    return env;
  }

  proxyReady(): void {
    this.ready = true;
    for (const { upstream, env } of this.waiting.splice(0)) Object.assign(env, this.proxy!.envFor(upstream));
  }
}

/** Reachability and era of every upstream, for the metrics scrape. */
async function upstreamStates(upstream: Upstream): Promise<Array<{ name: string; up: boolean; era?: string | undefined }>> {
  const members = upstream instanceof CatalogUpstream ? upstream.upstreams : [upstream];
  return Promise.all(members.map(async (m) => ({ name: m.name, up: await m.ready().catch(() => false), era: m.knownEra() })));
}

/** A reviewer named who may never reach the admin API (reviewer-reach.ts) may be a typo: say so once per config applied. */
function warnUnreachableReviewers(config: GatehouseConfig, log: Logger): void {
  for (const g of reviewerReachWarnings(config)) log.warn('a reviewer named may never reach the admin API', { setting: g.key, reviewer: g.group, adminGroups: config.admin.groups, detail: g.message });
}

/**
 * A Redis certificate expired, or ending within two weeks, when the config is applied, or a passphrase given
 * for a key that is not encrypted: say so once (store-tls-expiry.ts, store-tls.ts storeTlsWarnings).
 */
function warnStoreCertificates(config: GatehouseConfig, log: Logger): void {
  for (const w of storeTlsExpiryWarnings(config.store)) log.warn('a Redis store certificate has expired or expires soon', { detail: w });
  for (const w of storeTlsWarnings(config.store)) log.warn('store.tls.passphrase is given for a key that is not encrypted', { detail: w });
}

/** A key already past its expires when the config is applied is refused to every request: say so once. */
function warnExpiredKeys(config: GatehouseConfig, log: Logger): void {
  for (const k of expiredKeys(config)) log.warn('an API key has expired; every request with it is refused 401', { keyId: k.id, expires: k.expires });
}
