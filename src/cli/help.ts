// Help texts, one per command, kept together so `--help` output reads as one manual.

export const MAIN_HELP = `gatehouse: an MCP gateway in front of MCP servers you did not write

Usage:
  gatehouse serve [--config FILE]                  run with a config file
  gatehouse serve --upstream URL | --stdio "CMD"   run in front of one server, no file needed
  gatehouse check-config [--env-optional] FILE     validate a config file
  gatehouse hash-key [KEY | -]                     hash an API key for auth.apiKeys
  gatehouse doctor [--config FILE] [--json]        check upstreams, auth, store and ports of a deployment
  gatehouse audit verify|export|tail [--config F]  check, export or follow the audit log
  gatehouse budgets show [--subject S]             what budgets have spent in the current windows
  gatehouse approvals list|show|approve|reject     decide on calls waiting for approval (admin API)
  gatehouse pins list|show|accept                  review tools whose definition changed (admin API)

Options:
  -h, --help       show help (also after any command)
  -v, --version    print the version

Docs: README.md and docs/configuration.md
`;

export const SERVE_HELP = `Usage: gatehouse serve [options]

Runs the gateway. With --config (or GATEHOUSE_CONFIG, or ./gatehouse.yaml) it reads a config file;
with --upstream or --stdio it runs in front of one server with defaults (anonymous, loopback only).
A config file is read again whenever it changes (looked at every second, or at once on SIGHUP).

Options:
  -c, --config FILE     config file (YAML)
      --upstream URL    a Streamable HTTP MCP server, e.g. http://127.0.0.1:3001/mcp
      --stdio "CMD"     a stdio MCP server to spawn, e.g. "npx -y @modelcontextprotocol/server-everything"
      --host HOST       interface to listen on (default 127.0.0.1)
      --port N          port to listen on (default 8080; 0 picks a free one)
      --path PATH       path of the MCP endpoint (default /mcp)
      --log-level L     debug | info | warn | error
      --store FILE      the SQLite file for state and the audit log (default ./data/gatehouse.db);
                        a Redis store is named in the config (store.kind: redis), not here
  -h, --help            show this help

Exit status: 0 stopped by SIGTERM or SIGINT, 1 the config cannot be served or the port cannot be bound,
2 usage (an unknown option, a missing or unusable value, such as --port abc or --log-level loud).
`;

export const CHECK_CONFIG_HELP = `Usage: gatehouse check-config [--env-optional] FILE

Validates FILE against the config schema, with interpolation, and checks that this build can serve it.
Prints every problem as FILE:LINE:COLUMN KEY.PATH: MESSAGE and exits 1; prints "FILE: ok" and exits 0
when valid. An unknown key gets the nearest known one as a suggestion.

Options:
      --env-optional    secrets absent here (an unset \${env:NAME}, a missing \${file:PATH} or one
                        this user may not read) are warnings, not errors: check a file where its
                        secrets do not live (CI)
  -h, --help            show this help
`;

export const HASH_KEY_HELP = `Usage: gatehouse hash-key [KEY | -]

Prints the hash of an API key, for the "hash" field of auth.apiKeys. With "-" the key is read from
standard input (keeps it out of shell history). With no argument a new random key is generated and
both the key and its hash are printed: give the key to the client, put only the hash in the config.
A key that starts with "-" goes after "--": gatehouse hash-key -- -KEY.

Options:
  -h, --help            show this help

A key is sent as "Authorization: Bearer <key>", so it may hold letters, digits and - . _ ~ + / only,
with = only at its end; one with other characters (a space, !, #) is refused. A key that does not
start with gh_ is hashed with a note on stderr: declare its prefix in auth.apiKeyPrefixes (stdout is
the hash alone).

Exit status: 0 printed, 1 the key is too short or cannot be sent as a Bearer credential, 2 usage (an
unknown option, more than one key).
`;

export const BUDGETS_HELP = `Usage: gatehouse budgets show [options]

Prints the budget counters (policy.budgets) of the current windows, read from the store the config
names (store.kind sqlite or redis), or from a SQLite file: budget, per, whose, used, limit, window and
when the window ends.

Options:
  -c, --config FILE     config file (default $GATEHOUSE_CONFIG, then ./gatehouse.yaml); gives limits.
                        Only the store's secrets must be present here, not the upstreams'
      --store FILE      a SQLite store file instead of the config's store (a Redis store: --config);
                        with --config too, the counters are the file's and the limits the config's,
                        and a config whose store is Redis is refused (exit 2)
      --subject S       only the counters of this caller (e.g. key:ci-bot, or a token's sub)
      --json            one JSON object per line instead of a table
  -h, --help            show this help

Exit status: 0 printed, 1 the config or the store cannot be read, 2 usage (an unknown option, a --store
that is a URL, or one beside a --config whose store is Redis).
`;

export const AUDIT_HELP = `Usage: gatehouse audit verify|export|tail [options]

Reads the audit log from the store the config names (store.kind sqlite or redis), or from a SQLite file.
Only the store's secrets must be present where it runs, not the upstreams'.

Commands:
  verify    walk the hash chain from its start (or its retention anchor); exit 0 when every record is
            intact, else name the first record that was edited, inserted or removed and exit 1
  export    write the records as JSON lines
  tail      print new records as they are written, until Ctrl-C

Options:
  -c, --config FILE     config file (default $GATEHOUSE_CONFIG, then ./gatehouse.yaml)
      --store FILE      a SQLite store file instead of the config's store (a Redis store: --config);
                        beside --config, the file is read, and a config whose store is Redis is
                        refused (exit 2)
      --head HASH       verify: also require the record with this hash, a head printed by an earlier
                        verify and kept elsewhere (finds a log rewritten or cut short since)
      --since TIME      export/tail: records at or after TIME (YYYY-MM-DD, or an RFC 3339 time; UTC
                        unless it gives an offset)
      --until TIME      export/tail: records at or before TIME (a date alone: through that whole day)
      --tool NAME       export/tail: records of this tool (public name or ref upstream/name)
      --subject S       export/tail: records of this caller (e.g. key:ci-bot)
      --interval-ms N   tail: how often to look for new records (default 500)
  -h, --help            show this help

Exit status: 0 done (verify: the chain is intact), 1 verify found the chain broken, or the config or the
store cannot be read, 2 usage (an unknown option, a value that cannot be used: --since, --until,
--interval-ms, --head, a --store that is a URL or beside a --config whose store is Redis).
`;

export const APPROVALS_HELP = `Usage: gatehouse approvals list|show ID|approve ID|reject ID [options]

Talks to the admin API of a running gateway (admin.enabled), found through the config's admin.host,
admin.port and admin.token, or through --url and --token. Of the config's secrets only admin.token
must be present here (and not even it with --token).

Commands:
  list          the approvals waiting for a decision (--state for others), oldest first, every page
                the API answers; with a reviewer's access token, only those of rules that name them
                (or name no one); the admin token sees all
  show ID       one approval: caller, tool, the redacted arguments and their hash, deadline, decision
  approve ID    let the call run (the caller's identical retry runs it); never one's own call
                (refused, self_approval: another reviewer or the admin token must approve it)
  reject ID     refuse it; the caller's identical retry is answered approval_rejected with the reason

Options:
  -c, --config FILE     config file (default $GATEHOUSE_CONFIG, then ./gatehouse.yaml)
      --url URL         the admin API (default from the config; or $GATEHOUSE_ADMIN_URL)
      --token TOKEN     the admin token, or an access token of an admin group (default admin.token;
                        or $GATEHOUSE_ADMIN_TOKEN)
      --state S         list: pending (default), approved, rejected, expired, used or all
      --reason R        approve, reject: the reason recorded and shown to the caller
      --json            one JSON object per line
  -h, --help            show this help

Exit status: 0 done, 1 failed (refused, unreachable), 2 usage, 3 no such approval.
`;

export const PINS_HELP = `Usage: gatehouse pins list|show REF|accept REF --digest SHA [options]

Tool-contract pinning (tools.pinning): the first definition of each tool is pinned; a tool whose
definition changes is refused with tool_changed (enforce) or logged (warn) until its change is accepted.
Talks to the admin API of a running gateway, like gatehouse approvals.

Commands:
  list          the pinned tools whose definition changed (--all: every pinned tool)
  show REF      one pin (REF is upstream/tool): the pinned and current digests and what changed
  accept REF --digest SHA
                make the definition "show" printed (its "now:" digest) the pin; the tool's calls
                run again. Refused if the tool changed again since: show it again first

Options:
  -c, --config FILE     config file (default $GATEHOUSE_CONFIG, then ./gatehouse.yaml)
      --url URL         the admin API (default from the config; or $GATEHOUSE_ADMIN_URL)
      --token TOKEN     the admin token, or an access token of an admin group (default admin.token;
                        or $GATEHOUSE_ADMIN_TOKEN)
      --all             list: every pinned tool, changed or not
      --digest SHA      accept: the digest of the definition reviewed, as "show" printed it
      --json            one JSON object per line
  -h, --help            show this help

Exit status: 0 done, 1 failed, 2 usage, 3 no such pin.
`;
