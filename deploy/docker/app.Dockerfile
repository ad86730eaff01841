# The FrogNano bot app image (server and worker: `frognano-bot serve` / `frognano-bot worker`).
# Build from the repository root:
#   docker build -f deploy/docker/app.Dockerfile --build-arg FROGNANO_COMMIT=$(git rev-parse HEAD) \
#     -t registry.example.com/frognano/frognano-bot:0.1.0 .
# Multi-stage: the build stage compiles TypeScript; the runtime stage has production dependencies
# and dist/ only, and runs as a non-root user.
#
# Base image: Node 24 LTS on Debian 12, pinned by digest (the tag beside it says what the digest
# is; CI runs the whole test suite on Node 24, scripts/check-fresh-clone.sh). The digest is the
# one published for node:24-bookworm-slim when Node 24.18.0 was current. To refresh it (security
# updates of Node or Debian), on a machine with registry access:
#   docker pull node:24-bookworm-slim
#   docker inspect --format '{{index .RepoDigests 0}}' node:24-bookworm-slim
# (or `docker buildx imagetools inspect node:24-bookworm-slim`, first "Digest:" line), put the new
# digest in NODE_IMAGE below, rebuild, and note it in CHANGELOG.md.
ARG NODE_IMAGE=node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d

# The local sandbox's per-command launcher (native/sandbox-exec.c): its seccomp filter is built with
# libseccomp here and compiled into a static binary, so compiler, headers and library stay in
# this stage.
FROM ${NODE_IMAGE} AS native
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev libseccomp-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY native/sandbox-exec.c ./native/
COPY scripts/build-native.mjs ./scripts/
RUN node scripts/build-native.mjs && test -x native/build/sandbox-exec

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are copied.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
# The commit frognano_build_info reports (.git is not in the build context; unset: `unknown`).
ARG FROGNANO_COMMIT=
# tsc and the assets only: the launcher comes from the native stage.
RUN npx tsc -p tsconfig.build.json && node scripts/copy-assets.mjs && npm prune --omit=dev --ignore-scripts

FROM ${NODE_IMAGE} AS runtime
# git: the worker clones and pushes. bubblewrap: the local sandbox driver (SANDBOX_DRIVER=local on
# a single machine); unused with the Kubernetes driver (the launcher is static, its filter built in
# the native stage). tini: PID 1 that forwards SIGTERM.
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
COPY --from=native /src/native/build ./native/build
USER 10001:10001
EXPOSE 3000 3001
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/bin/cli.js"]
CMD ["serve"]
