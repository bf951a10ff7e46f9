# syntax=docker/dockerfile:1
# Gatehouse container image: build with the full toolchain, run with production dependencies only.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY src ./src
COPY config ./config
RUN npm ci --no-audit --no-fund
# Keep only what runs: dist/ and production node_modules.
RUN npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/config ./config
# Writable state lives in /data so the root filesystem can be read-only.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8080
# Listen on all interfaces inside the container; the config must then enable authentication.
ENV GATEHOUSE_CONFIG=/etc/gatehouse/gatehouse.yaml
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node runs as PID 1 here; Gatehouse handles SIGTERM itself (drain, then exit), so no init shim is needed.
ENTRYPOINT ["node", "/app/dist/main.js"]
CMD ["serve"]
