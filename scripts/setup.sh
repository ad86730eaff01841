#!/usr/bin/env bash
# Installs and starts what FrogNano bot's local sandbox, demo and tests need on a Debian machine:
#   - bubblewrap (the local sandbox driver) with e2fsprogs and util-linux (its workspace file system
#     and unprivileged uid), git, python3 with pytest (the example projects' tests),
#     openssl (the TLS tests make a throwaway certificate authority with it);
#   - gcc and libseccomp-dev, with which `npm ci` / `npm run build` builds native/build/sandbox-exec
#     (the local sandbox's per-command launcher and its seccomp filter);
#   - Redis answering on 127.0.0.1:6379 (the queue; the tests use it), started if it does not answer;
#   - promtool (Debian's prometheus package): the metrics test lints both processes' /metrics with it.
# Idempotent: installs only what is missing. Needs root (or sudo) for apt-get.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v git >/dev/null 2>&1 || missing+=(git)
/usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || missing+=(python3-pytest)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# The local sandbox's size-limited workspace (mke2fs) and its unprivileged uid for a root worker (setpriv).
command -v mke2fs >/dev/null 2>&1 || [ -x /usr/sbin/mke2fs ] || [ -x /sbin/mke2fs ] || missing+=(e2fsprogs)
command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
[ -f /usr/include/seccomp.h ] || missing+=(libseccomp-dev)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]} (Debian packages)"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v promtool >/dev/null 2>&1; then
  echo "setup: installing prometheus (Debian package) for promtool"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # Only promtool is wanted: where systemd runs, stop the Prometheus server the package enables.
  if [ -d /run/systemd/system ]; then $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true; fi
fi

redis_answers() {
  # PING over bash's /dev/tcp, so no redis-cli is needed.
  timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/6379 && printf "PING\r\n" >&3 && read -r -t 2 line <&3 && [[ "$line" == +PONG* ]]' \
    >/dev/null 2>&1
}

if ! redis_answers; then
  echo "setup: Redis does not answer on 127.0.0.1:6379; starting redis-server"
  mkdir -p /tmp/frognano-redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /tmp/frognano-redis --logfile /tmp/frognano-redis/redis.log
  for _ in $(seq 1 50); do
    redis_answers && break
    sleep 0.1
  done
  redis_answers || { echo "setup: Redis did not start; see /tmp/frognano-redis/redis.log" >&2; exit 1; }
fi
echo "setup: bubblewrap $(bwrap --version | cut -d' ' -f2), gcc with libseccomp, git, python3-pytest, promtool and Redis are ready"
