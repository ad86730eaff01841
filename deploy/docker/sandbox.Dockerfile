# The default sandbox image: what a job's agent and the repository's tests run in. Non-root
# (uid 1000), no credentials, no network at run time (the driver's NetworkPolicy).
#   docker build -f deploy/docker/sandbox.Dockerfile -t registry.example.com/frognano/frognano-sandbox:0.1.0 deploy/docker
#
# The Kubernetes driver needs, inside the image: /bin/sh, coreutils (head, sleep, sha256sum, stat,
# realpath, wc, mkdir, rm, cat, env), util-linux setsid, findutils find and tar. Repositories with
# other toolchains get their own image through the admin policy (`sandbox.image` in `defaults` or in
# a rule), built FROM this one.

# Base pinned by digest, tag beside it; refresh as for the app image (deploy/docker/app.Dockerfile):
# `docker pull debian:bookworm-slim`, then `docker inspect --format '{{index .RepoDigests 0}}'`.
ARG DEBIAN_IMAGE=debian:bookworm-slim@sha256:7b140f374b289a7c2befc338f42ebe6441b7ea838a042bbd5acbfca6ec875818
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      bash coreutils findutils util-linux tar gzip xz-utils git ca-certificates procps \
      python3 python3-pytest python3-venv python-is-python3 make diffutils patch less \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 1000 sandbox \
 && useradd --uid 1000 --gid 1000 --home-dir /tmp --no-create-home --shell /bin/bash sandbox
ENV HOME=/tmp LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PIP_NO_INDEX=1
WORKDIR /workspace
USER 1000:1000
CMD ["/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]
