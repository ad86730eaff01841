#!/usr/bin/env bash
# The README's test command on a fresh clone, as a newcomer runs it, on Node 24 (the images' runtime):
#   git clone <this repository> x && cd x && bash scripts/setup.sh && npm ci && npm test
# The clone goes into a new temporary folder, so it has no ../shared/ beside it: this proves the
# tests need nothing outside the repository. Node 24 comes from the npm registry's `node` package
# (its binary ships inside the package), installed into another temporary folder and put first on
# PATH, so npm, the build and vitest all run on it. Clones the committed HEAD (not uncommitted work).
# Usage: bash scripts/check-fresh-clone.sh [NODE_VERSION_RANGE]   (default 24)
#   FRESH_CLONE_TESTS="test/unit test/integration/leaf" limits the run to those test paths (for a
#   quick local try; CI runs everything).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
node_range="${1:-24}"
work="$(mktemp -d "${TMPDIR:-/tmp}/frognano-fresh-clone.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "fresh-clone: installing node@$node_range into $work/node"
npm install --prefix "$work/node" --no-save --no-audit --no-fund --loglevel=error "node@$node_range" >/dev/null
export PATH="$work/node/node_modules/.bin:$PATH"
echo "fresh-clone: node $(node --version) ($(command -v node)), npm $(npm --version)"

git clone --quiet "$repo" "$work/clone/frognano-bot"
cd "$work/clone/frognano-bot"
if [ -e ../shared ]; then
  echo "fresh-clone: $work/clone/shared exists; the check needs a folder without one" >&2
  exit 1
fi
echo "fresh-clone: $(git log -1 --format='%h %s') in $PWD (no ../shared)"
bash scripts/setup.sh
npm ci --no-audit --no-fund
# shellcheck disable=SC2086 # FRESH_CLONE_TESTS is a list of paths
npm test -- ${FRESH_CLONE_TESTS:-}
