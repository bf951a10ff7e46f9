# syntax=docker/dockerfile:1
# Gatehouse container image. The build stage has the whole toolchain; the runtime stage gets only dist/, the
# config schema and production node_modules, runs as a numeric non-root user and writes nowhere but /data,
# so it runs with a read-only root filesystem (docker run --read-only; readOnlyRootFilesystem in Kubernetes).
#
# No config is baked in: a useful one names the user's upstream and credentials, and Gatehouse refuses
# anonymous access on a non-loopback listener, so no default could serve. Mount one at $GATEHOUSE_CONFIG:
#   docker run --read-only -p 8080:8080 -v "$PWD/gatehouse.yaml:/etc/gatehouse/gatehouse.yaml:ro" gatehouse
# with `listen: { host: 0.0.0.0, port: 8080 }`, auth.apiKeys or auth.oauth, and state (store.path) under /data.
# Listening elsewhere than 8080? Set GATEHOUSE_HEALTHCHECK_URL to match.
#
# test/e2e/dockerfile.test.ts runs this file's build and start commands without Docker; it understands
# FROM, WORKDIR, COPY, RUN, ENV, USER, EXPOSE, VOLUME, HEALTHCHECK, ENTRYPOINT and CMD.

# The full image: it has python3, make and g++ for the one native dependency (better-sqlite3, the SQLite
# store). The runtime stage is the slim image of the same Debian release, so the compiled module fits it.
FROM node:20-bookworm AS build
WORKDIR /app
# Manifests first, so the dependency layer is reused until they change. --ignore-scripts because the
# package's `prepare` would build before src/ is copied (the build runs below); the production dependency
# that needs its install script is rebuilt by name (the test checks the lockfile for any other).
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
RUN npm rebuild better-sqlite3
COPY tsconfig.json ./
COPY src ./src
COPY config ./config
RUN npm run build
# Drop the toolchain: what is left in node_modules is what dist/ imports.
RUN npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
# tini is PID 1. Gatehouse handles SIGTERM/SIGINT itself (src/cli/serve.ts: drain, then exit 0), so signals
# alone would not need it; but stdio upstreams are child processes that may start their own (npx, sh), and
# when those are orphaned they are re-parented to PID 1, which node never reaps. tini reaps them, forwards
# signals to node and exits with node's status.
# util-linux (an essential package, so already there: named so that it stays) brings setpriv, which starts
# each stdio child to be killed when Gatehouse is (src/upstream/die-with-gatehouse.ts); /bin/sh runs the
# watchdog that ends what the children started (src/upstream/group-watchdog.ts). In the container that
# matters where its PID namespace is shared (a pod's shareProcessNamespace): otherwise tini, exiting with
# node, ends everything in the container anyway.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini util-linux \
  && rm -rf /var/lib/apt/lists/* \
  && mkdir -p /data \
  && chown 1000:1000 /data
ENV NODE_ENV=production \
    GATEHOUSE_CONFIG=/etc/gatehouse/gatehouse.yaml \
    GATEHOUSE_HEALTHCHECK_URL=http://127.0.0.1:8080/healthz
# config/ holds the JSON Schema the config loader reads at start; package.json gives --version.
COPY --from=build /app/package.json /app/
COPY --from=build /app/node_modules /app/node_modules
COPY --from=build /app/dist /app/dist
COPY --from=build /app/config /app/config
# The working directory is the writable volume, so a relative path Gatehouse writes to (the default
# store.path is ./data/gatehouse.db) lands there rather than on the read-only root filesystem. Nothing else
# is written at start: the entrypoint is node itself (no npm, so no npm cache) and Gatehouse uses no temp
# files. Stdio upstreams inherit HOME and TMPDIR; one that writes there needs them pointed under /data.
WORKDIR /data
VOLUME ["/data"]
# Numeric, so Kubernetes can verify runAsNonRoot without reading /etc/passwd (uid 1000 is `node`).
USER 1000:1000
# The MCP endpoint as configured above, and the Prometheus metrics listener's default port
# (metrics.port; it binds 127.0.0.1 unless metrics.host says otherwise).
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch(process.env.GATEHOUSE_HEALTHCHECK_URL, { signal: AbortSignal.timeout(2500) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form: a shell in between would be PID 1 and swallow the signals.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/main.js"]
CMD ["serve"]
