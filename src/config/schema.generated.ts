// Generated from config/gatehouse.schema.json by scripts/gen-config-types.mjs (npm run config:types).
// Do not edit: change the schema and run the script. Keys with a default are required here, because
// these are the types of a config after validation has filled the defaults in.

/**
 * One YAML file configures the whole gateway. Unknown keys are errors. Any string value may contain ${env:NAME} or ${file:PATH} (relative to the config file) to pull in secrets; write $${ for a literal ${. The files read through ${file:PATH} are watched with the config: replacing one (a rotated secret) reloads it as a change of the config would.
 */
export interface GatehouseConfiguration {
  /**
   * The client-facing MCP endpoint (Streamable HTTP). Listen address and port are read once at start; a reload does not move them.
   */
  listen: {
    /**
     * Interface to bind. Keep the loopback default unless a proxy or container network needs another address.
     */
    host: string;
    /**
     * TCP port to listen on; 0 picks a free port (tests use this).
     */
    port: number;
    /**
     * Path of the MCP endpoint.
     */
    path: string;
    /**
     * Path of an endpoint for clients that speak only the deprecated HTTP+SSE transport of 2024-11-05 (absent: off). A GET there opens an event stream whose first event, endpoint, names the URL (ssePath + /messages?session=ID) to POST messages to; every answer comes back on the stream. The same Host/Origin checks, authentication (in headers only), access rules and policy apply as on listen.path, and a session belongs to the caller that opened it. Sessions count against sessions.max, one caller's against sessions.maxSsePerCaller, and end after sessions.idleTimeoutMs without a message.
     */
    ssePath?: string;
    /**
     * The URL clients use to reach this endpoint, as seen from outside (the OAuth protected resource). Needed once OAuth is configured.
     */
    publicUrl?: string;
    /**
     * Host header values accepted (DNS-rebinding guard; * for any), plus listen.publicUrl's host: a name alone (any port) or name:port (that port only; a Host without a port matches :80 and :443). Empty on a loopback listen.host means the loopback names; empty on any other interface means any Host, leaving the choice to the proxy in front: list the names clients use to have Gatehouse check them. An Origin naming a listed host is accepted on that entry's port, or for a name alone on the port the request came to (the same listener under another of its names).
     *
     * @maxItems 256
     */
    allowedHosts: string[];
    /**
     * Origin header values accepted when a browser sends one, as exact origins (scheme://host[:port]; * for any; null for sandboxed pages); listen.publicUrl's origin is added. Besides these, an Origin is accepted when it is the request's own origin: the Host header's name and port, over http or https (the scheme is not known behind a TLS-terminating proxy). A page on another port of the same host is another origin: list it here (the MCP Inspector's http://localhost:6274, for one).
     *
     * @maxItems 256
     */
    allowedOrigins: string[];
    /**
     * Largest request body accepted, in bytes; larger requests are refused before parsing.
     */
    maxBodyBytes: number;
    /**
     * Deepest nesting of objects and arrays accepted in a request body; deeper bodies are refused as malformed before they reach any upstream.
     */
    maxJsonDepth: number;
    /**
     * Time allowed for a client to send a whole request body once its headers are in, in milliseconds; slower bodies get 408.
     */
    requestTimeoutMs: number;
    /**
     * Time allowed for a client to send its request headers, in milliseconds, counted from its first byte; a slower client (slowloris) gets 408 and its connection is closed.
     */
    headersTimeoutMs: number;
    /**
     * How long an idle kept-alive connection stays open between requests, in milliseconds. The default outlasts the 60 s idle timeout of common load balancers, so they never reuse a connection Gatehouse is closing.
     */
    keepAliveTimeoutMs: number;
    /**
     * Most connections open at once from one client address; further ones are answered 429 and closed. 0 means no limit. Behind a proxy every connection comes from the proxy's address, so size this for the proxy.
     */
    maxConnectionsPerIp: number;
    /**
     * Addresses or CIDR ranges of proxies in front of Gatehouse. For a connection from one of them, the client address used by per-address limits is the last X-Forwarded-For entry that is not itself a trusted proxy (an entry may carry a port: 203.0.113.5:4711, [2001:db8::1]:443; an entry that is no address stops the walk at the proxy that wrote it). Empty: the connection's own address is the client's, and X-Forwarded-For is ignored.
     *
     * @maxItems 256
     */
    trustedProxies: string[];
  };
  /**
   * The MCP servers behind the gateway. Each one is either a Streamable HTTP server (has url) or a stdio server the gateway starts itself (has command).
   *
   * @minItems 1
   * @maxItems 500
   */
  upstreams: [StdioUpstream | HttpUpstream, ...(StdioUpstream | HttpUpstream)[]];
  /**
   * Legacy client sessions that Gatehouse itself holds (for stdio upstreams, and when it bridges protocol eras), and the sealing of modern clients' requestState. Read once at start; a reload does not change it.
   */
  sessions: {
    /**
     * A session unused this long, with nothing in flight and no open stream, is ended; its id then answers 404 with reason idle_timeout.
     */
    idleTimeoutMs: number;
    /**
     * Most sessions held at once; past this the least recently used one with no call in flight is ended (reason session_cap), and when every one has a call in flight a new one is refused with 503 session_cap. It also bounds the legacy sessions one caller holds through Gatehouse, whoever issued them (with max(4 × sessions.max, 1024) for all callers together), by the same rule: a new initialize ends the caller's least recently used idle session, else one with only a listening stream open, never one with a call in flight; when each has one, the initialize is refused with 503 session_cap and Retry-After before it reaches the upstream.
     */
    max: number;
    /**
     * Most connections one caller may hold at once on the HTTP+SSE endpoint (listen.ssePath; at most sessions.max, which bounds them all). Past it the caller's own least recently used connection with nothing in flight ends to make room; if all of them are busy the caller is refused with 503 session_cap, and other callers are not affected.
     */
    maxSsePerCaller: number;
    /**
     * How long a call that waits for client input (elicitation, sampling, roots) is held open while Gatehouse bridges eras; past this it is cancelled upstream and the client's late answer is refused.
     */
    inputTimeoutMs: number;
    /**
     * Secret (at least 32 characters) that seals every requestState a modern client gets from an upstream to that client, call and arguments (2026-07-28 mrtr.mdx: the upstream sees only Gatehouse, so Gatehouse binds the state to the caller). Replicas behind one address must share it, or a retry that reaches another replica is refused; use ${file:...} or ${env:...}. Unset: a random key of the process.
     */
    requestStateKey?: string;
    /**
     * How long a sealed requestState stays good for the client's retry; an older one is refused with -32602 (reason expired), and the client starts the call again.
     */
    requestStateTtlMs: number;
  };
  /**
   * Who may call the gateway: API keys, OAuth bearer tokens, or (on loopback only) anyone.
   */
  auth: {
    /**
     * Serve callers without credentials. Only accepted on a loopback listener; meant for local demos and development.
     */
    anonymous: boolean;
    /**
     * Static API keys, stored as hashes (see gatehouse hash-key). Clients send the key as a bearer token. A presented credential that is no configured key is refused 401 invalid_token when it has the shape of one of our keys: it starts with gh_ (as every key gatehouse hash-key generates does) or with one of apiKeyPrefixes. Otherwise, with oauth on, it is taken for an access token: tried as a JWT, and with oauth.introspection set, sent to the introspection endpoint (RFC 7662), so a mistyped key of another shape reaches the authorization server. As only hashes are stored, Gatehouse cannot tell a key of a custom shape from a token by itself: declare such keys' prefix in apiKeyPrefixes.
     *
     * @maxItems 10000
     */
    apiKeys: ApiKey[];
    /**
     * What API keys of a custom shape (keys not made by gatehouse hash-key, e.g. acme_live_) start with, besides gh_. A credential starting with one of these that is no configured key (mistyped, revoked, deleted) is refused 401 invalid_token as a wrong key, and is never sent to oauth.introspection nor tried as a JWT: it is a secret meant for Gatehouse, not for the authorization server. Access tokens that start so are refused too, so choose a prefix the issuer's tokens never have; one that every JWT starts with (e, ey, eyJ...) is refused.
     *
     * @maxItems 64
     */
    apiKeyPrefixes: string[];
    /**
     * Query parameter names refused as credentials on the MCP endpoint (400 invalid_request, naming the parameter and where a credential belongs), besides the built-in ones: access_token, api_key, x-api-key, token, id_token, refresh_token, client_secret, authorization, bearer, key, secret, password, passwd, pwd, auth, auth_token, api_token, jwt, session_token, access_key, secret_key, private_token, sig, signature, X-Amz-Signature, X-Amz-Security-Token, X-Goog-Signature, subscription-key, Ocp-Apim-Subscription-Key, client_assertion. Names are compared ignoring case, - and _ (api-key, API_KEY and apiKey are one name). This list only adds: the built-in names are always refused.
     *
     * @maxItems 64
     */
    queryCredentialNames: string[];
    oauth?: Oauth;
    /**
     * Scopes every caller needs to use the MCP endpoint at all (API keys and tokens alike); a caller without them gets 403 insufficient_scope. With `anonymous` on next to keys or OAuth, a request without any credential gets 401 and the challenge (authenticate), as anonymous callers hold no scopes.
     *
     * @maxItems 64
     */
    requiredScopes: string[];
    /**
     * Failed authentication attempts (an unknown key, a bad or expired token, a malformed Authorization header) allowed per client address in a window, on the MCP endpoint and the admin API together (a refused admin token or login counts). Past the limit, every request from that address gets 429 with Retry-After until the window ends, on both, before any key is hashed or token verified. Counted in the store (replicas sharing a Redis count together) and in each replica's memory at once.
     */
    failureLimit: {
      /**
       * Failures allowed per address in one window; 0 turns the limit off.
       */
      attempts: number;
      /**
       * Length of the window, in seconds. Windows are fixed, aligned to the epoch on the store's clock (not counted from an address's first failure), so up to twice attempts failures can fall within a few seconds across a window's end, and a block lasts until the current window ends.
       */
      windowSeconds: number;
    };
  };
  /**
   * How the tools of all upstreams are presented as one catalogue.
   */
  tools: {
    /**
     * Tool names as clients see them.
     */
    naming: {
      /**
       * Prefix tool names with their upstream's name: auto does so only when there are several upstreams, always and never mean what they say.
       */
      prefix: "auto" | "always" | "never";
    };
    /**
     * What a call gets when its tool's inputSchema cannot be checked: a dialect other than 2020-12, 2019-09, draft-07 and draft-06, a $ref outside the schema (never fetched), or no valid schema. refuse answers it with a schema_unsupported tool error that says why (basic/index.mdx §Schema Dialect, §$ref Resolution: reject rather than treat as permissive); allow forwards its arguments unchecked, with a warning, for servers whose schemas are known to be sound.
     */
    uncheckableSchemas: "refuse" | "allow";
    /**
     * What to do when a tool result does not match the tool's declared outputSchema: enforce turns it into an error, warn logs it and passes it on, off skips the check.
     */
    outputValidation: "enforce" | "warn" | "off";
    /**
     * Tool-contract pinning: the first definition of each tool seen (name, description, schemas, annotations) is pinned in the store; when the upstream changes it, warn logs and counts it, enforce refuses its calls with tool_changed until a reviewer accepts the new definition (admin API, CLI or inbox page), off does neither.
     */
    pinning: "off" | "warn" | "enforce";
    /**
     * Who may review a changed tool definition (tools.pinning), by tool ref: the first entry whose tools globs match the ref decides, and only its reviewers are shown that pin (GET /pins, gatehouse pins, the inbox page) and may accept its change (403 forbidden for anyone else, audited as a refused acceptance). A ref no entry matches may be reviewed by anyone the admin API admits. The admin token, the break-glass operator with no subject, is shown every pin and may accept every change.
     *
     * @maxItems 1000
     */
    pinningReviewers: PinningReviewer[];
  };
  /**
   * The rules applied to every call: access (rules), egress checks on arguments and an egress proxy for the upstream's own connections, rate limits, budgets, circuit breakers and approvals. In each list the first entry that matches a call applies, and every refusal names it.
   */
  policy: {
    /**
     * Policy rules, evaluated in order. The first rule that matches the caller and the item decides.
     *
     * @maxItems 10000
     */
    rules: PolicyRule[];
    /**
     * Egress rules on the URLs, hosts and addresses in tool arguments; the first rule that selects the call applies. With none selecting it, public destinations pass and loopback, link-local, metadata and private ones are blocked.
     *
     * @maxItems 10000
     */
    egress: EgressRule[];
    /**
     * A forward proxy on loopback (HTTP and CONNECT) for the upstreams' own outbound connections, applying the egress rules; stdio children get HTTP_PROXY and HTTPS_PROXY pointing at it, with credentials naming their upstream; an HTTP upstream may send credentials too (its egressProxyToken); a request without credentials belongs to the only upstream; else, while no upstream is a stdio one, to the only HTTP upstream without an egressProxyToken that can reach the proxy (on a loopback proxy, one with a loopback URL); else to none (judged by a rule that selects every upstream, or the defaults): beside a stdio upstream, whose child could leave its own credentials out, an HTTP upstream keeps its egress rule only by sending its egressProxyToken (the chart gives its sidecar one). A CONNECT tunnel carries what the proxy cannot read: under an allow listing schemes it passes only to a port that is one of those schemes' default (443 for https and wss, 80 for http and ws, 22 for ssh...) or that the allow's ports list. Started once: a reload applies new egress rules to it, but not a change of this section.
     */
    egressProxy: {
      enabled: boolean;
      /**
       * Interface to listen on; loopback unless a sidecar container must reach it.
       */
      host: string;
      /**
       * Port; 0 picks a free one.
       */
      port: number;
    };
    /**
     * Rate limits: the first per: ip entry that selects a request applies at the door; the first other entry that selects a tool call applies after authentication.
     *
     * @maxItems 1000
     */
    rateLimits: RateLimit[];
    /**
     * Budgets; the first entry that selects a tool call applies. A budget counts the calls that run: a call a later stage holds back (an open breaker, a pending or refused approval, the question of a user confirmation, an idempotency refusal) or answers with a stored result gives its spend back.
     *
     * @maxItems 1000
     */
    budgets: Budget[];
    /**
     * Circuit breakers; the first entry that selects a tool call applies.
     *
     * @maxItems 1000
     */
    breakers: Breaker[];
    /**
     * Approval rules; the first rule that selects a tools/call decides whether (and by whom) it must be approved before it runs.
     *
     * @maxItems 1000
     */
    approvals: ApprovalRule[];
  };
  /**
   * Where the state lives that must survive a restart or be shared by replicas (the audit log, idempotency records, approvals, rate-limit counters and budgets): a local SQLite file, or Redis when several gateway replicas share it. While it does not answer, every tool call is refused (503 GW_ERR_STATE_UNAVAILABLE).
   */
  store: RedisStore | SqliteStore;
  /**
   * The audit log: one record per tools/call, written to the store before the answer leaves, chained by SHA-256 so an edited, inserted or removed record is found (gatehouse audit verify).
   */
  audit: {
    /**
     * Whether tools/call is audited. On by default, and the seeds ask for it: every call recorded before its answer leaves. On, no tool is called as a 2025-11-25 task (a tools/call with params.task is refused -32601 task_unaudited): a task's result comes through tasks/result, which is no tool call and is not recorded; nor is a legacy client offered one (initialize shows no tasks.requests.tools, tools/list no tool whose taskSupport is required). Off, calls are answered without a record and Gatehouse warns at start; for a pure pass-through where another system keeps the record.
     */
    enabled: boolean;
    /**
     * Records older than this many days are removed (checked hourly); the chain stays verifiable from the last record removed.
     */
    retainDays: number;
  };
  /**
   * Write tools need a unique key in params._meta.idempotencyKey: the first call with a key runs and its answer is stored; a retry with the same key and request gets that answer again without running twice. Writes are tools annotated readOnlyHint: false or destructiveHint: true, plus those listed here.
   */
  idempotency: {
    /**
     * Refuse a write that carries no key (idempotency_key_required). False honours a key when one is sent but lets writes without one run: for clients that cannot send params._meta.idempotencyKey, which most general-purpose clients today cannot.
     */
    requireKeys: boolean;
    /**
     * How long a key and its stored answer are kept.
     */
    ttlSeconds: number;
    /**
     * Tool refs (upstream/name, * matches anything) that are writes even without annotations saying so.
     *
     * @maxItems 4096
     */
    tools: string[];
    /**
     * Tool refs never treated as writes, whatever their annotations say.
     *
     * @maxItems 4096
     */
    exempt: string[];
  };
  /**
   * How approvals are held, whatever rule asked for them (the rules themselves are policy.approvals). A reload applies it from the next call on.
   */
  approvals: {
    /**
     * The most approvals one caller (an API key, or a token's subject within its tenant) may have waiting for a decision at once, counted in the store across replicas. A call that would open one more is not run and is answered approval_limit_reached until a pending approval is decided or expires; calling again with the arguments of a pending approval still finds that approval. Approvals a policy change left undecidable do not count. Replicas opening approvals for one caller at the same instant can each let one through, so a caller may go over by at most the number of replicas less one.
     */
    maxPendingPerCaller: number;
  };
  /**
   * Prometheus metrics endpoint, on its own listener so it is never exposed with the MCP endpoint by accident. Read once at start; a reload does not change it.
   */
  metrics: {
    /**
     * Serve metrics.
     */
    enabled: boolean;
    /**
     * Interface to bind the metrics listener to. On a loopback interface only requests naming a loopback Host (localhost, 127.0.0.1, [::1]) are served, others get 403, so a web page that rebinds its name to this machine cannot read the series; on another interface any Host is served.
     */
    host: string;
    /**
     * TCP port of the metrics listener; 0 picks a free port.
     */
    port: number;
    /**
     * Path of the metrics endpoint.
     */
    path: string;
  };
  /**
   * OpenTelemetry traces: one SERVER span per MCP request (named after the method and target, e.g. `tools/call search`, or the method alone when the client called a name no list gave), a child of the client's W3C trace context when one came, with each stage's refusal as a span event; a CLIENT span for the upstream request, whose context the upstream receives (headers and `_meta`); a child span for each wait of a stage on the store or the network; exported in batches over OTLP/HTTP (JSON). The OpenTelemetry packages are loaded only when this is enabled. Read once at start; a reload does not change it.
   */
  tracing: {
    /**
     * Record and export spans.
     */
    enabled: boolean;
    /**
     * OTLP/HTTP traces URL, e.g. `http://otel-collector:4318/v1/traces`. When left out: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`, else `http://localhost:4318/v1/traces`.
     */
    endpoint?: string;
    /**
     * Share of traces recorded for requests that come without a sampled trace context (TraceIdRatioBased); a client's sampling decision is followed (ParentBased), except on a request refused before it was authenticated, recorded only when the ratio picks its trace.
     */
    sampleRatio: number;
    /**
     * Headers sent with every export (e.g. an API key of the trace backend: use ${env:NAME}). Headers from `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_EXPORTER_OTLP_TRACES_HEADERS` are sent too; these win on a clash.
     */
    headers?: {
      [k: string]: string;
    };
    /**
     * Resource attributes of every span (e.g. `deployment.environment.name`). `service.name` defaults to `OTEL_SERVICE_NAME`, else `gatehouse`.
     */
    resourceAttributes?: {
      [k: string]: string;
    };
  };
  /**
   * The admin API (approvals and pinned tools, with an inbox page for reviewers), on its own listener, never on the MCP port.
   */
  admin: {
    /**
     * Serve the admin API; it then needs a token or groups.
     */
    enabled: boolean;
    /**
     * Interface to bind the admin listener to.
     */
    host: string;
    /**
     * TCP port of the admin listener; 0 picks a free port.
     */
    port: number;
    /**
     * Bearer token the admin API requires. Use ${env:...} or ${file:...}; at least 16 characters. A reload applies a new token (and new groups) from the next request on, and ends the inbox page's browser sessions; enabled, host and port are read once at start.
     */
    token?: string;
    /**
     * OAuth groups (from the access token, verified as on the MCP endpoint) whose members may use the admin API, as an alternative to the token. A member is shown and may decide only the approvals of rules whose reviewers name them, or name no one. A token whose subject is admin-token or user is refused (403): decisions name the admin token and an elicitation answer so. Only these groups admit reviewers: with none, a group or subject named by policy.approvals[].reviewers or tools.pinningReviewers is refused at load (no access token could be it); a group named there that is none of these is warned of (only reviewers also in one of these can act by it).
     *
     * @maxItems 256
     */
    groups: string[];
  };
  /**
   * The process log.
   */
  log: {
    /**
     * Lowest level written.
     */
    level: "debug" | "info" | "warn" | "error";
    /**
     * How lines are written: json (one JSON object per line, for Kubernetes and files), pretty (readable, coloured lines for a terminal), or auto: pretty when stderr is a terminal, json otherwise.
     */
    format: "auto" | "json" | "pretty";
    /**
     * Write one info line per answered request (caller, method, tool, upstream, outcome, duration, trace id). Costs a few microseconds per request (about 3% of a pass-through call, the least Gatehouse does); metrics count the same things. A reload turns it on or off (SIGHUP applies it at once); level and format are read once at start.
     */
    requests: boolean;
  };
  /**
   * Behaviour on SIGTERM/SIGINT.
   */
  shutdown: {
    /**
     * How long Gatehouse keeps serving after a stop signal, with `/readyz` answering 503, before it stops accepting connections, in milliseconds: time for a load balancer (Kubernetes: the Service's endpoints) to stop sending it new ones. 0 stops accepting at once (a process outside a load balancer); a second SIGTERM or SIGINT cuts the delay short.
     */
    delayMs: number;
    /**
     * How long in-flight calls may finish after a stop signal before they are cut, in milliseconds (after `delayMs`).
     */
    graceMs: number;
  };
}
/**
 * An MCP server the gateway starts as a child process and talks to over stdin/stdout.
 */
export interface StdioUpstream {
  /**
   * Unique name, 1-32 letters, digits, _ or -. It becomes part of every tool's reference: name/tool. unknown and catalog are reserved: Gatehouse's metrics and logs use them as upstream labels of their own.
   */
  name: string;
  /**
   * The program and its arguments, e.g. [npx, -y, some-server]. No shell is involved. A program given as a relative path (./server.sh) is found from cwd when it is set, else from the gateway's working directory; relative paths among the arguments are the program's to read, from the same directory. The value of an option named like a credential (--api-key V, --token=V) and a URL's password are scrubbed from logs; other arguments are not, and a process list shows them all: pass credentials in env.
   *
   * @minItems 1
   * @maxItems 1024
   */
  command: [string, ...string[]];
  /**
   * Environment variables set for the child process; the place for its credentials. Of Gatehouse's own environment only PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG, TMPDIR and NODE_OPTIONS (without its inspector flags, --inspect and the like, which are for debugging Gatehouse) reach the child (its secrets, such as GATEHOUSE_ADMIN_TOKEN, do not); anything else the child needs (PYTHONPATH, SSL_CERT_FILE) is set here, e.g. { PYTHONPATH: "${env:PYTHONPATH}" }. Values read through ${env:...} or ${file:...}, and those under names like a credential (..._TOKEN, ..._KEY, ..._SECRET), are scrubbed from every log line, the child's stderr included.
   */
  env: {
    [k: string]: string;
  };
  /**
   * Working directory of the child process; defaults to the gateway's own. A relative one resolves against the gateway's working directory. Not checked until the child starts: gatehouse doctor says whether it exists.
   */
  cwd?: string;
  /**
   * Protocol generation to speak: auto detects it; modern and legacy pin it.
   */
  era: "auto" | "modern" | "legacy";
  /**
   * Time limits for calls to this upstream, in milliseconds.
   */
  timeouts: {
    /**
     * Time allowed for one request to be answered.
     */
    requestMs: number;
    /**
     * requestMs for calls to some of this upstream's tools, in place of the one above: tool names as the server lists them (not as Gatehouse renames them), or globs (* any run of characters, ? one), each to its own limit. An exact name wins over a glob; among globs the first written that matches. For example { build: 3600000, "search_*": 30000 }.
     */
    tools: {
      [k: string]: number;
    };
  };
  /**
   * Most client sessions (each one a child process) this stdio upstream serves at once, counting those whose child is still starting; past this a new session ends the least recently used one with nothing in flight (else one whose only activity is a listening stream). A session with a call in flight is never ended for another: while sessions still starting or with a call in flight fill it, a new initialize is refused with 503 session_cap and Retry-After.
   */
  maxSessions: number;
  /**
   * The most of one message from this upstream that Gatehouse holds: an answer it reads whole (a governed call's JSON answer, read for its audit record and output check; an answer the catalog or a bridge writes again), one SSE event (counted in characters), one stdio line. Past it the call is the upstream's failure, GW_ERR_UPSTREAM_BAD_RESPONSE (a stdio line is dropped unread; the call it answers fails at once), and the rest is not read. Raise it for a server whose answers are legitimately larger (big resources); answers Gatehouse only relays chunk by chunk are not bounded by it. It also bounds what waits for a stdio child that is not reading its stdin: past it, requests to that child are refused with GW_ERR_UPSTREAM_OVERLOADED (503) until it reads again.
   */
  maxMessageBytes: number;
  /**
   * Resource URIs starting with one of these are routed to this upstream even when no resources/list showed them (several upstreams only).
   *
   * @maxItems 256
   */
  uriPrefixes: string[];
  /**
   * How clients map to child processes. shared (default): a caller's clients are multiplexed onto shared children, one per caller and declared capability set, with ids and progress tokens remapped; a server request that cannot be tied to one call is refused. perSession: each legacy client session gets its own child, started with the client's own initialize (full isolation, for servers that keep per-session state or elicit often). single: one child for every caller, ids and progress tokens remapped, server requests refused as in shared (for servers that keep state in files and must not run twice; the child declares elicitation and sampling). In every mode the era probe's child becomes the first session's, Gatehouse lists tools on a child already running, and a child no session has used for sessions.idleTimeoutMs is stopped.
   */
  processes: "perSession" | "shared" | "single";
  /**
   * Restarting a child that exits on its own: up to `attempts` tries, the first after `firstDelayMs`, each delay doubling. When every try fails, the sessions on that child end.
   */
  restart: {
    /**
     * Tries before giving up.
     */
    attempts: number;
    /**
     * Delay before the first try, in milliseconds; each later try waits twice as long.
     */
    firstDelayMs: number;
  };
}
/**
 * An MCP server reached over the network through the Streamable HTTP transport.
 */
export interface HttpUpstream {
  /**
   * Unique name, 1-32 letters, digits, _ or -. It becomes part of every tool's reference: name/tool. unknown and catalog are reserved: Gatehouse's metrics and logs use them as upstream labels of their own.
   */
  name: string;
  /**
   * The upstream's MCP endpoint, http:// or https://.
   */
  url: string;
  /**
   * How the server is reached over HTTP: streamableHttp (a POST per message, the transport of 2025-03-26 and later); sse, the HTTP+SSE transport of 2024-11-05, where url is the event stream (GET) whose first event names the URL to POST messages to (Gatehouse holds one stream per upstream session and posts only to an endpoint on the stream's own origin); or auto: Streamable HTTP, and when neither era's handshake works and the POST of initialize failed with 400, 404 or 405, a GET that expects the endpoint event, as the spec's backwards compatibility says.
   */
  transport: "auto" | "streamableHttp" | "sse";
  /**
   * For transport sse (or auto, once it found an HTTP+SSE server): most upstream sessions (each one event stream held open on the server) this upstream serves at once, counting those still opening, and at most sessions.max. Past it a new session ends the least recently used one with nothing in flight (else one whose only activity is a listening stream); a session with a call in flight is never ended for another, and when every session has one, the new initialize is refused with 503 session_cap and Retry-After.
   */
  maxSessions: number;
  /**
   * The protocol era the server speaks, both over Streamable HTTP: modern is the stateless 2026-07-28 revision (server/discover, no sessions); legacy is the session-based revisions (initialize and Mcp-Session-Id: 2025-11-25, 2025-06-18, 2025-03-26). auto detects it, and follows a server that changes; pin it only when detection cannot work, since a wrong pin fails every call (gatehouse doctor says which the server speaks).
   */
  era: "auto" | "modern" | "legacy";
  /**
   * Headers sent with every request to this upstream (e.g. its credentials). Client headers are never forwarded.
   */
  headers: {
    [k: string]: string;
  };
  /**
   * Time limits for calls to this upstream, in milliseconds.
   */
  timeouts: {
    /**
     * Time allowed to open a TCP/TLS connection.
     */
    connectMs: number;
    /**
     * Time allowed until the upstream's response headers arrive (for transport sse, also the opening of each event stream: the GET's headers, then its endpoint event). The HTTP client checks this wait on a clock that ticks about every half second, so it may end up to half a second either side of the value; keep it well above what a healthy upstream needs.
     */
    headersMs: number;
    /**
     * Longest silence allowed between two chunks of a response body (SSE streams stay alive with comments). For transport sse, also how long the event stream may carry nothing while a request is in flight and a ping (timeouts.pingMs) is unanswered, before it is taken for dead: a server that answers one message at a time answers the ping only after the call.
     */
    bodyMs: number;
    /**
     * For transport sse (or auto, once it found an HTTP+SSE server): when the event stream has carried no message for this long, Gatehouse pings the upstream over it, and when the stream then carries nothing for as long again, it is taken for dead (a stalled server, or a network that drops packets without a reset) and closed: the calls waiting on it fail at once with a retryable error naming the unanswered ping, and a new stream is opened for the session. A dead stream is so noticed within two to three times this. A server may answer one message at a time, so a ping sent while an earlier request is still unanswered may wait behind it: the stream is then taken for dead only once it has carried nothing for timeouts.bodyMs (or, sooner, once no earlier request waits and the ping is still unanswered; or once a server that keeps its stream alive with comments has stopped sending them while its message endpoint still takes a ping, which shows the server running and the stream dead: noticed within a few times this, more when its comments come further apart). 0: no pings (a dead stream is then noticed only by each call's own limit).
     */
    pingMs: number;
    /**
     * Longest a request's answer may take in all, from the request to its end, however much progress the upstream reports (2026-07-28 cancellation.mdx: a maximum timeout regardless of progress). Past it the upstream request is closed, which cancels it, and the client gets GW_ERR_UPSTREAM_TIMEOUT. Listens (subscriptions/listen, GET streams) are not bounded by it.
     */
    callMs: number;
    /**
     * callMs for calls to some of this upstream's tools, in place of the one above: tool names as the upstream lists them (not as Gatehouse renames them), or globs (* any run of characters, ? one), each to its own limit (at least 100). An exact name wins over a glob; among globs the first written that matches. For example { build: 3600000, "search_*": 30000 }.
     */
    tools: {
      [k: string]: number;
    };
  };
  /**
   * Connection pool to this upstream's origin.
   */
  pool: {
    /**
     * Most connections open at once for calls. Listening streams (a legacy client's GET stream, a subscriptions/listen), which last as long as their client stays, each get a connection of their own apart from these (up to sessions.max of them), so they never leave a call waiting for one.
     */
    connections: number;
    /**
     * How long an idle connection is kept open, in milliseconds (at least 1: the HTTP client refuses 0).
     */
    keepAliveTimeoutMs: number;
  };
  /**
   * The most of one message from this upstream that Gatehouse holds: an answer it reads whole (a governed call's JSON answer, read for its audit record and output check; an answer the catalog or a bridge writes again), one SSE event (counted in characters), one stdio line. Past it the call is the upstream's failure, GW_ERR_UPSTREAM_BAD_RESPONSE (a stdio line is dropped unread; the call it answers fails at once), and the rest is not read. Raise it for a server whose answers are legitimately larger (big resources); answers Gatehouse only relays chunk by chunk are not bounded by it.
   */
  maxMessageBytes: number;
  /**
   * Resource URIs starting with one of these are routed to this upstream even when no resources/list showed them (several upstreams only).
   *
   * @maxItems 256
   */
  uriPrefixes: string[];
  /**
   * The upstream's own OAuth client-credentials grant: Gatehouse fetches a token from tokenUrl, caches it, renews it before it expires, and sends it as Authorization: Bearer. Client tokens are never forwarded.
   */
  clientCredentials?: {
    /**
     * The authorization server's token endpoint.
     */
    tokenUrl: string;
    /**
     * Client id of the gateway at that server.
     */
    clientId: string;
    /**
     * Client secret; use ${env:...} or ${file:...}.
     */
    clientSecret: string;
    /**
     * Scopes to request.
     *
     * @maxItems 64
     */
    scopes: string[];
    /**
     * RFC 8707 resource indicator to request the token for. Unset: the upstream's own URL (its canonical URI), which MCP clients must send in every token request (authorization §Resource Parameter Implementation). An empty string sends none, for an authorization server that refuses resource indicators.
     */
    resource?: string;
    /**
     * Renew the token this long before it expires.
     */
    refreshBeforeSeconds: number;
  };
  /**
   * The password this upstream sends the egress proxy (policy.egressProxy) with its name as the user, so the proxy knows its connections as its own and judges them by its egress rules: set its HTTP_PROXY and HTTPS_PROXY to http://NAME:TOKEN@HOST:PORT (NAME percent-encoded). Gatehouse does not start an HTTP upstream and cannot hand it credentials as it does a stdio child, so without one its requests carry none, and belong to it only when it is the only HTTP upstream that can reach the proxy and no upstream is a stdio one; beside another (two sidecar servers) or a stdio upstream (whose child could leave its own credentials out and pose as it) they belong to nobody. A request naming this upstream with another password is refused 407, and one without credentials is never this upstream's. Use ${file:...} or ${env:...}; at least 16 characters.
   */
  egressProxyToken?: string;
}
/**
 * One API key. Only its hash is stored here.
 */
export interface ApiKey {
  /**
   * Stable identifier, shown in logs and audit records instead of the key.
   */
  id: string;
  /**
   * sha256: followed by the hex SHA-256 of the key, as printed by gatehouse hash-key.
   */
  hash: string;
  /**
   * Tenant the key belongs to; limits and budgets are counted per tenant.
   */
  tenant?: string;
  /**
   * Scopes granted to the key, e.g. tools:call.
   *
   * @maxItems 256
   */
  scopes: string[];
  /**
   * If set, the only tools (upstream/tool references) this key may see and call.
   *
   * @maxItems 4096
   */
  tools?: string[];
  /**
   * Date (YYYY-MM-DD) or RFC 3339 timestamp after which the key is refused.
   */
  expires?: string;
  /**
   * Refuse this key without deleting it.
   */
  disabled?: boolean;
}
/**
 * OAuth 2.1 bearer tokens (JWTs) issued by an external authorization server; the gateway is the protected resource.
 */
export interface Oauth {
  /**
   * Expected iss claim; also where the authorization server metadata is found.
   */
  issuer: string;
  /**
   * Where the signing keys are published; discovered from the issuer's metadata when omitted.
   */
  jwksUri?: string;
  /**
   * Expected aud claim, normally listen.publicUrl.
   */
  audience: string;
  /**
   * Accepted signature algorithms; symmetric algorithms and none are never accepted.
   *
   * @minItems 1
   * @maxItems 16
   */
  algorithms?: [
    "RS256" | "RS384" | "RS512" | "PS256" | "PS384" | "PS512" | "ES256" | "ES384" | "ES512" | "EdDSA",
    ...("RS256" | "RS384" | "RS512" | "PS256" | "PS384" | "PS512" | "ES256" | "ES384" | "ES512" | "EdDSA")[]
  ];
  /**
   * Scopes advertised in the protected resource metadata.
   *
   * @maxItems 256
   */
  scopesSupported?: string[];
  /**
   * Tolerance for exp and nbf checks, in seconds. A token is accepted until exp plus this tolerance, and a listening stream it opened is served until then.
   */
  clockSkewSeconds: number;
  /**
   * Refuse a JWT whose typ header does not say it is an access token: at+jwt or application/at+jwt, in any case (RFC 9068 §2.1, §4). Such a token is refused 401 invalid_token. This keeps an OpenID Connect ID token (typ JWT) of the same issuer, with the same audience and a sub, from being taken as an access token. Off by default, since many authorization servers still mint access tokens with typ JWT; turn on when yours sets at+jwt. Opaque tokens checked by introspection have no typ and are not affected.
   */
  requireAccessTokenType: boolean;
  /**
   * Token introspection (RFC 7662) for opaque tokens: a bearer credential that is no configured API key, has no API key shape (gh_ or auth.apiKeyPrefixes) and is no JWT is sent to this endpoint, so a mistyped API key of a custom shape whose prefix is not declared in auth.apiKeyPrefixes reaches it.
   */
  introspection?: {
    /**
     * The introspection endpoint.
     */
    url: string;
    /**
     * Client id the gateway authenticates with.
     */
    clientId: string;
    /**
     * Client secret; use ${env:...} or ${file:...}.
     */
    clientSecret: string;
    /**
     * Longest time an introspection answer is reused; never longer than the token's own lifetime.
     */
    cacheMaxSeconds: number;
    /**
     * Accept an active token whose introspection answer names no audience (aud). Off by default: such a token cannot be shown to be meant for this gateway, and the spec has servers refuse tokens not issued for them (authorization §Token Handling). Turn on only for an authorization server that never returns aud and issues tokens for this gateway alone.
     */
    acceptMissingAudience: boolean;
  };
  /**
   * Authorization servers named in the protected resource metadata (RFC 9728); defaults to the issuer.
   *
   * @minItems 1
   * @maxItems 16
   */
  authorizationServers?: [string, ...string[]];
  /**
   * Token claim whose string value becomes the caller's tenant.
   */
  tenantClaim?: string;
  /**
   * Token claim (a string array or a space-separated string) whose values become the caller's groups.
   */
  groupsClaim?: string;
  /**
   * How long fetched signing keys are trusted before they are fetched again.
   */
  jwksMaxAgeSeconds: number;
  /**
   * Least time between two fetches of the key set caused by an unknown key id, so a flood of forged key ids cannot make the gateway hammer the authorization server.
   */
  jwksMinRefreshSeconds: number;
}
/**
 * Who reviews the changed definitions of some tools: the tools, by ref, and their reviewers.
 */
export interface PinningReviewer {
  /**
   * Tool refs (upstream/name); * matches any run of characters, ? one.
   *
   * @minItems 1
   * @maxItems 4096
   */
  tools: [string, ...string[]];
  /**
   * Who may accept these tools' changes, by subject or group (any one suffices); at least one must be named.
   */
  reviewers: {
    /**
     * @maxItems 4096
     */
    subjects: string[];
    /**
     * @maxItems 4096
     */
    groups: string[];
  };
}
/**
 * One policy rule: who it applies to (every listed selector must match; none listed means everyone) and what it allows or denies.
 */
export interface PolicyRule {
  /**
   * A name for logs and audit records.
   */
  id?: string;
  /**
   * Caller subjects (token sub, or key:<id> for API keys).
   *
   * @maxItems 4096
   */
  subjects?: string[];
  /**
   * Caller tenants.
   *
   * @maxItems 4096
   */
  tenants?: string[];
  /**
   * Caller groups (any one suffices).
   *
   * @maxItems 4096
   */
  groups?: string[];
  /**
   * Scopes the caller must hold (all of them).
   *
   * @maxItems 4096
   */
  scopes?: string[];
  /**
   * For an allow rule with scopes: what a caller gets that matches every other selector but lacks some of the scopes. hide (the default): the rule does not match it, and the item is hidden unless a later rule allows it. challenge: the item stays listed, and using it answers HTTP 403 with WWW-Authenticate error="insufficient_scope" naming the caller's scopes and the rule's, so an OAuth client can ask for a token with more (step-up authorization).
   */
  onMissingScopes?: "hide" | "challenge";
  /**
   * API key ids (auth.apiKeys[].id) the rule covers.
   *
   * @maxItems 4096
   */
  keys?: string[];
  /**
   * What a match means: allow or deny.
   */
  access: "allow" | "deny";
  /**
   * Tool refs (upstream/name) the rule covers; * matches any run of characters.
   *
   * @maxItems 4096
   */
  tools?: string[];
  /**
   * Prompt refs (upstream/name) the rule covers.
   *
   * @maxItems 4096
   */
  prompts?: string[];
  /**
   * Resource URIs the rule covers.
   *
   * @maxItems 4096
   */
  resources?: string[];
}
/**
 * One egress rule: for the calls it selects, what a URL, host or address found in the arguments may be (of a tools/call; of a prompts/get, whose prompt ref upstream/name its tools globs match as a tool's; and of a completion/complete, under the prompt's ref or, for a resource template, as a resources/read of the upstream that listed it), URLs nested in those URLs included (?u=http://10.0.0.1/), and what the URI of a resources/read or resources/subscribe, or each URI of a subscriptions/listen's resourceSubscriptions, may reach when its scheme is one a server fetches: http, https, ws, wss, ftp, file, gopher, ldap, ldaps, dict, tftp, sftp, scp, smb, telnet, or jar (by the URL inside it); a custom scheme such as demo:// is the server's identifier and is not judged. A listen's blocked URI is not refused but taken out of the filter the upstream receives: the acknowledgment leaves it out, as it does a URI the server does not honour, and no update about it is relayed. A resources/read or resources/subscribe (or a listen's URI) is selected by a rule whose tools globs, if any, cover the whole upstream that reads the URI (upstream/*, or *), never by one naming single tools or annotations. An allow lists what is reachable (with allow, anything else is blocked); a deny lists what is not. Loopback, link-local, cloud metadata and private addresses are blocked unless an allow names them (by cidrs, or by an IP literal in hosts).
 */
export interface EgressRule {
  /**
   * The entry's name: refusals, metrics, logs and audit records name it.
   */
  id: string;
  /**
   * Caller subjects (token sub, or key:<id> for API keys).
   *
   * @maxItems 4096
   */
  subjects?: string[];
  /**
   * Caller tenants.
   *
   * @maxItems 4096
   */
  tenants?: string[];
  /**
   * Caller groups (any one suffices).
   *
   * @maxItems 4096
   */
  groups?: string[];
  /**
   * Scopes the caller must hold (all of them).
   *
   * @maxItems 4096
   */
  scopes?: string[];
  /**
   * API key ids (auth.apiKeys[].id).
   *
   * @maxItems 4096
   */
  keys?: string[];
  /**
   * Tool refs (upstream/name); * matches any run of characters. A resources/read or resources/subscribe, or a subscriptions/listen's resource URI, counts as the ref upstream/* of the upstream that reads it.
   *
   * @maxItems 4096
   */
  tools?: string[];
  /**
   * Tool annotations the tool must declare with these values (a tool that does not declare one does not match it).
   */
  annotations?: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
  allow?: EgressTarget;
  deny?: EgressTarget;
}
/**
 * What a destination must be, by every dimension given.
 */
export interface EgressTarget {
  /**
   * Host names, * matching one or more labels at the start (*.example.com), or exact; IP literals compare as addresses.
   *
   * @maxItems 4096
   */
  hosts?: string[];
  /**
   * URL schemes (https, http, ...). A URL in an argument that names no host is judged by this alone: a file: URL (file:///path, the server's own files) anywhere, and data:, javascript:, blob: and the like (which a browser tool runs) in a destination field (format uri, or named url, href...): refused where allow.schemes is given without its scheme, or deny.schemes lists it (with no hosts or cidrs); passed where no schemes are given, as by default. Under allow.schemes only schemes a client acts on without a host are judged so (file, javascript, vbscript, data, blob, filesystem, about, view-source, jar, mailto, tel, sms, sip, news, intent...): a label such as note:hello or urn:isbn:... in a url field passes, unless deny.schemes names its word. A deny listing only such schemes (file, javascript, data...) is about their URLs: it does not match a bare host or a CONNECT tunnel, which a deny listing a network scheme (http) does. One naming a host (file://server/share) is judged by that host as well.
   *
   * @maxItems 32
   */
  schemes?: string[];
  /**
   * Ports (the scheme's default when a URL gives none). Under allow, a URL naming no port whose scheme has no default Gatehouse knows (memcached://host, rtsp://host) is not allowed; a bare host with no scheme is judged on the port argument beside it ({"host": "db.example.com", "port": 22}), and with none leaves the port to the tool.
   *
   * @maxItems 1024
   */
  ports?: number[];
  /**
   * Address ranges (10.20.0.0/16, fd00::/8); an address matches any one.
   *
   * @maxItems 4096
   */
  cidrs?: string[];
}
/**
 * A token bucket: rate tokens per perSeconds, up to burst, one per call, counted per ip, subject, key, tenant, upstream or tool. Kept in the store, so replicas share it.
 */
export interface RateLimit {
  /**
   * The entry's name: refusals, metrics, logs and audit records name it.
   */
  id: string;
  /**
   * Caller subjects (token sub, or key:<id> for API keys).
   *
   * @maxItems 4096
   */
  subjects?: string[];
  /**
   * Caller tenants.
   *
   * @maxItems 4096
   */
  tenants?: string[];
  /**
   * Caller groups (any one suffices).
   *
   * @maxItems 4096
   */
  groups?: string[];
  /**
   * Scopes the caller must hold (all of them).
   *
   * @maxItems 4096
   */
  scopes?: string[];
  /**
   * API key ids (auth.apiKeys[].id).
   *
   * @maxItems 4096
   */
  keys?: string[];
  /**
   * Tool refs (upstream/name); * matches any run of characters.
   *
   * @maxItems 4096
   */
  tools?: string[];
  /**
   * Tool annotations the tool must declare with these values (a tool that does not declare one does not match it).
   */
  annotations?: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
  /**
   * What is counted apart: ip (every request, before its body is read: 429), or after authentication subject, key, tenant, upstream or tool (tools/call: rate_limited). Per tool, the names no list gave (one upstream served by pass-through answers them itself) share one bucket per upstream.
   */
  per: "ip" | "subject" | "key" | "tenant" | "upstream" | "tool";
  /**
   * Tokens added per perSeconds.
   */
  rate: number;
  /**
   * The period of rate, in seconds.
   */
  perSeconds: number;
  /**
   * The most tokens the bucket holds; default rate (rounded up).
   */
  burst?: number;
}
/**
 * A budget: calls (or cost units) per calendar window in UTC, per subject, tenant, key or tool; a call past it is refused with budget_exhausted until the window ends.
 */
export interface Budget {
  /**
   * The entry's name: refusals, metrics, logs and audit records name it.
   */
  id: string;
  /**
   * Caller subjects (token sub, or key:<id> for API keys).
   *
   * @maxItems 4096
   */
  subjects?: string[];
  /**
   * Caller tenants.
   *
   * @maxItems 4096
   */
  tenants?: string[];
  /**
   * Caller groups (any one suffices).
   *
   * @maxItems 4096
   */
  groups?: string[];
  /**
   * Scopes the caller must hold (all of them).
   *
   * @maxItems 4096
   */
  scopes?: string[];
  /**
   * API key ids (auth.apiKeys[].id).
   *
   * @maxItems 4096
   */
  keys?: string[];
  /**
   * Tool refs (upstream/name); * matches any run of characters.
   *
   * @maxItems 4096
   */
  tools?: string[];
  /**
   * Tool annotations the tool must declare with these values (a tool that does not declare one does not match it).
   */
  annotations?: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
  /**
   * Whose budget: subject, tenant, key or tool (names no list gave: one counter per upstream, unlisted:<upstream>, unless the entry's tools name it written out).
   */
  per: "subject" | "tenant" | "key" | "tool";
  /**
   * minute, hour, day or month (calendar windows in UTC).
   */
  window: "minute" | "hour" | "day" | "month";
  /**
   * Units per window.
   */
  limit: number;
  /**
   * Units one call of the selected tools costs; at most limit (a call that costs more could never run, and the config is refused).
   */
  cost: number;
}
/**
 * A circuit breaker per upstream or per tool: opened by consecutive failures or by an error rate over a window, refusing calls at once while open (upstream_unavailable), then letting one probe through after the cool-down. Failures are the upstream's: unreachable, timed out, bad answers and JSON-RPC internal errors, not tool results with isError.
 */
export interface Breaker {
  /**
   * The entry's name: refusals, metrics, logs and audit records name it.
   */
  id: string;
  /**
   * Caller subjects (token sub, or key:<id> for API keys).
   *
   * @maxItems 4096
   */
  subjects?: string[];
  /**
   * Caller tenants.
   *
   * @maxItems 4096
   */
  tenants?: string[];
  /**
   * Caller groups (any one suffices).
   *
   * @maxItems 4096
   */
  groups?: string[];
  /**
   * Scopes the caller must hold (all of them).
   *
   * @maxItems 4096
   */
  scopes?: string[];
  /**
   * API key ids (auth.apiKeys[].id).
   *
   * @maxItems 4096
   */
  keys?: string[];
  /**
   * Tool refs (upstream/name); * matches any run of characters.
   *
   * @maxItems 4096
   */
  tools?: string[];
  /**
   * Tool annotations the tool must declare with these values (a tool that does not declare one does not match it).
   */
  annotations?: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
  /**
   * What trips apart: each upstream, or each tool.
   */
  per: "upstream" | "tool";
  /**
   * Failures in a row that open the circuit.
   */
  consecutiveFailures: number;
  /**
   * Share of failed calls in windowSeconds (with at least minCalls calls) that opens the circuit.
   */
  errorRate?: number;
  /**
   * Calls the window needs before errorRate is judged.
   */
  minCalls: number;
  /**
   * The window errorRate is measured over.
   */
  windowSeconds: number;
  /**
   * How long the circuit stays open before one probe call is let through.
   */
  coolDownSeconds: number;
}
/**
 * An approval rule: the calls it selects do not run until a reviewer approves them (by: reviewer) or the user confirms them through elicitation (by: user). The approval is bound to the exact call: caller, upstream, tool, arguments, policy version and deadline.
 */
export interface ApprovalRule {
  /**
   * The entry's name: refusals, metrics, logs and audit records name it.
   */
  id: string;
  /**
   * Caller subjects (token sub, or key:<id> for API keys).
   *
   * @maxItems 4096
   */
  subjects?: string[];
  /**
   * Caller tenants.
   *
   * @maxItems 4096
   */
  tenants?: string[];
  /**
   * Caller groups (any one suffices).
   *
   * @maxItems 4096
   */
  groups?: string[];
  /**
   * Scopes the caller must hold (all of them).
   *
   * @maxItems 4096
   */
  scopes?: string[];
  /**
   * API key ids (auth.apiKeys[].id).
   *
   * @maxItems 4096
   */
  keys?: string[];
  /**
   * Tool refs (upstream/name); * matches any run of characters.
   *
   * @maxItems 4096
   */
  tools?: string[];
  /**
   * Tool annotations the tool must declare with these values (a tool that does not declare one does not match it).
   */
  annotations?: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
  /**
   * Argument values the call must have for the rule to select it, by dotted path into the arguments (recipient.email). A string is a glob (* matches any run of characters, case-insensitive) matched against a string, number or boolean value; a number or boolean must equal the value. Every entry must match.
   */
  arguments?: {
    [k: string]: string | number | boolean;
  };
  /**
   * Who approves: reviewer (through the admin API, the CLI or the inbox page) or user (the client is asked through elicitation; a client without the elicitation capability falls back to a reviewer).
   */
  by: "reviewer" | "user";
  /**
   * Who may decide, by subject or group (any one suffices), and who is shown its approvals (listed, shown, on the inbox page; 403 for others). Without it, anyone the admin API admits may decide. No reviewer may approve a call made under their own subject (403 self_approval; they may reject it, which withdraws it). The admin token, the break-glass operator with no subject, is shown every approval and may always decide.
   */
  reviewers: {
    /**
     * @maxItems 4096
     */
    subjects: string[];
    /**
     * @maxItems 4096
     */
    groups: string[];
  };
  /**
   * How long an approval may wait for its decision, and then how long an approved call stays runnable; past it, the call is answered approval_expired.
   */
  deadlineSeconds: number;
  /**
   * How many times an approved call may run (identical calls after the first reuse the approval).
   */
  reuse: number;
}
/**
 * State in Redis, shared by all replicas: one server (url), a Sentinel-watched primary (sentinel) or a Cluster (cluster). Run it with maxmemory-policy noeviction (or no maxmemory): every key but the audit log has a TTL, and an evicting policy drops them under memory pressure without an error (a stored write's answer, so a retry runs it again; a budget's counter). With noeviction a full Redis refuses writes and Gatehouse refuses calls instead. gatehouse doctor warns about an evicting policy. Run it with persistence (appendonly yes): a Redis that restarts without its data loses audit records, and the chain then starts again from what is left (logged as an error); gatehouse doctor warns about a primary with aof_enabled:0. With url or cluster, Gatehouse itself needs no INFO: an ACL user without +info, or a server without the command, works. With sentinel, ioredis reads INFO on each connection to check that the server the sentinels named is the primary: refused (NOPERM), it skips that check; a server without INFO cannot be used. gatehouse doctor reads INFO for the two warnings above, and warns that it could not when INFO is refused or unknown.
 */
export interface RedisStore {
  /**
   * Must be redis to select this store.
   */
  kind: "redis";
  /**
   * Redis URL, redis:// or rediss:// (TLS), with the password in it (redis://:PASSWORD@host:6379/0); use ${env:...}. With sentinel or cluster, the host is not used, but the password, database and TLS still come from here.
   */
  url: string;
  /**
   * Prefix of every key Gatehouse writes, so several gateways (or other applications) can share one Redis. No braces: Gatehouse's own hash tags keep keys used together in one Cluster slot.
   */
  keyPrefix: string;
  /**
   * A command Redis has not answered in this time fails, and the call that needed it is refused (503): a partitioned Redis never holds calls open. A connection that answers nothing for this long after a command is closed and a new one made, so one a NAT or load balancer forgot without a reset is not kept.
   */
  commandTimeoutMs: number;
  /**
   * TLS settings for rediss:// URLs. They apply to the server in store.url, to each node of a Cluster, and with sentinel to the sentinels themselves (which must then listen with TLS too) and to the primary they name. Verification of the server's certificate cannot be turned off. Files given through ${file:...} are read at start-up and again by each reload, which a file that cannot be read, or a pair that does not match, refuses. A reload that changes store.tls alone (a rotated client certificate, a new CA bundle) applies it to every connection made from then on; those up keep theirs. Any other store change takes effect at the next restart.
   */
  tls?: {
    /**
     * PEM of the CA (or CAs) that signed the Redis server's certificate, when it is not one the system trusts; use ${file:...}.
     */
    ca?: string;
    /**
     * PEM of the client certificate Gatehouse presents, for a Redis that asks for one (tls-auth-clients yes, Redis' default with TLS, as managed services with mTLS do); intermediate certificates after it. Requires key; use ${file:...}.
     */
    cert?: string;
    /**
     * PEM of the client certificate's private key: unencrypted, or encrypted with passphrase (-----BEGIN ENCRYPTED PRIVATE KEY-----, or a traditional key with Proc-Type: 4,ENCRYPTED). Requires cert. A secret: give it as ${file:PATH} (a mounted Secret); it is kept out of every log line, and problems with it name the key and the file, never its contents.
     */
    key?: string;
    /**
     * The passphrase that decrypts an encrypted key. Requires key. A secret: give it as ${env:NAME} or ${file:PATH}; it is kept out of every log line. A passphrase that does not decrypt the key is a config error at load and at each reload, naming this key, never the value.
     */
    passphrase?: string;
    /**
     * The name the Redis server's certificate must hold (and the SNI sent), when it is not the host Gatehouse connects to: an IP in store.url, the address a sentinel or Cluster gives for a node, or a TLS proxy in front of Redis. The certificate is still verified, against this name. With sentinel it serves the sentinels too, unless store.sentinel.servername names theirs.
     */
    servername?: string;
  };
  /**
   * Find the primary through Redis Sentinel (failover follows it).
   */
  sentinel?: {
    /**
     * The primary's name, as in the sentinels' `sentinel monitor NAME ...`.
     */
    name: string;
    /**
     * Sentinels, host:port each: at most 16 (a deployment runs three or five). The store may ask each, and gatehouse doctor opens a connection to each at once.
     *
     * @minItems 1
     * @maxItems 16
     */
    nodes: [string, ...string[]];
    /**
     * The sentinels' own password, when they require one; use ${env:...} or ${file:...}.
     */
    password?: string;
    /**
     * With rediss://, the name the sentinels' certificates must hold (and the SNI sent to them), when it is not store.tls.servername: that one then serves the primary alone (the address the sentinels give for it), and this one the sentinels. Unset, the sentinels are verified against store.tls.servername when it is given, else against the host of each node.
     */
    servername?: string;
  };
  /**
   * Redis Cluster: the nodes to start from (the rest are discovered).
   */
  cluster?: {
    /**
     * Cluster nodes to start from, host:port each: at most 32 (one that answers is enough, the rest are discovered; three to six seeds cover a node being down).
     *
     * @minItems 1
     * @maxItems 32
     */
    nodes: [string, ...string[]];
  };
}
/**
 * State in a local SQLite file, written by a worker thread (WAL, fsync before each answer). One file serves one process. The thread starts at the store's first use: a config that keeps nothing in the store (audit off, no rate limits, budgets, breakers or idempotency keys) never starts it, and until then `/readyz` checks that the file could be opened (its directory writable, the file, if there, a readable and writable file) instead of asking the thread.
 */
export interface SqliteStore {
  /**
   * Which store: sqlite (the default) or redis.
   */
  kind: "sqlite" | "redis";
  /**
   * Database file, created if missing; relative paths resolve against the gateway's working directory.
   */
  path: string;
}
