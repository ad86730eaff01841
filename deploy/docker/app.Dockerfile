# The FrogNano bot app image (server and worker: `frognano-bot serve` / `frognano-bot worker`).
# Build from the repository root:
#   docker build -f deploy/docker/app.Dockerfile --build-arg FROGNANO_COMMIT=$(git rev-parse HEAD) \
#     -t registry.example.com/frognano/frognano-bot:0.1.0 .
# Multi-stage: the build stage compiles TypeScript; the runtime stage has production dependencies
# and dist/ only, and runs as a non-root user.

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are copied.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
# The commit frognano_build_info reports (.git is not in the build context; unset: `unknown`).
ARG FROGNANO_COMMIT=
RUN npm run build && npm prune --omit=dev --ignore-scripts

FROM node:20-bookworm-slim AS runtime
# git: the worker clones and pushes. bubblewrap: the local sandbox driver (SANDBOX_DRIVER=local on
# a single machine); unused with the Kubernetes driver. tini: PID 1 that forwards SIGTERM.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates bubblewrap tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 frognano \
 && useradd --uid 10001 --gid 10001 --home-dir /var/lib/frognano --create-home --shell /usr/sbin/nologin frognano
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
USER 10001:10001
EXPOSE 3000 3001
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/bin/cli.js"]
CMD ["serve"]
