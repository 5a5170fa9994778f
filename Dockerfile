# syntax=docker/dockerfile:1
# reins: multi-stage build on the current Node LTS. The build stage compiles TypeScript and the
# better-sqlite3 native addon; the runtime stage carries only production dependencies and dist/.
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    DATA_DIR=/data \
    CONFIG_FILE=/app/config/default.json
WORKDIR /app
# bubblewrap: `exec` runs each command in its own sandbox (EXEC_ISOLATION=bwrap, the default). Docker's
# defaults refuse what it needs: user namespaces (seccomp), a fresh /proc (masked paths) and mounts
# (AppArmor). A server with SYSTEM_TOOLS=exec therefore needs
#   docker run --security-opt seccomp=unconfined --security-opt systempaths=unconfined \
#     --security-opt apparmor=unconfined …
# (or profiles allowing exactly those), else it refuses to start and says so; -e EXEC_ISOLATION=none
# opts out of the sandbox instead (commands then see everything the server can).
# tini: an init inside the image reaps orphaned processes and forwards signals, with or without
# `docker run --init`.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap tini \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY migrations ./migrations
COPY config ./config
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8787
# Readiness (the database answers) on the address HOST and PORT give, whatever they are set to.
HEALTHCHECK --interval=15s --timeout=4s --start-period=10s --retries=3 \
  CMD ["node", "dist/healthcheck.js"]
ENTRYPOINT ["/usr/bin/tini", "--"]
# --max-semi-space-size=64: room for a burst's short-lived objects (docs/deployment.md#node-flags).
CMD ["node", "--max-semi-space-size=64", "dist/main.js"]
