#!/usr/bin/env bash
# Proves that the repository's copies of the shared Leaf data still equal the originals in
# ../shared/ (the folder handed to the project beside its repository): the parity corpus
# (test/fixtures/leaf-parity/cases.json) and the protocol (src/protocol/protocol.json). The tests read
# only the copies, so a clone without ../shared/ runs them; this check is what keeps them honest.
# Usage: bash scripts/check-shared-copies.sh [SHARED_DIR]   (default: ../shared next to the repository)
# Exit code: 0 equal, 1 a copy differs or an original is missing, 2 no shared folder.
set -euo pipefail
cd "$(dirname "$0")/.."
shared="${1:-../shared}"
if [ ! -d "$shared" ]; then
  echo "check-shared-copies: no shared folder at $shared" >&2
  exit 2
fi
status=0
check() { # <copy in the repository> <original under the shared folder>
  if [ ! -f "$shared/$2" ]; then
    echo "check-shared-copies: $shared/$2 is missing" >&2
    status=1
  elif cmp -s "$1" "$shared/$2"; then
    echo "check-shared-copies: $1 equals $shared/$2 (sha256 $(sha256sum "$1" | cut -d' ' -f1))"
  else
    echo "check-shared-copies: $1 differs from $shared/$2: copy the new file and update its recorded sha256 (see $(dirname "$1")/${3})" >&2
    status=1
  fi
}
check test/fixtures/leaf-parity/cases.json leaf-parity/cases.json README.md
check src/protocol/protocol.json leaf-protocol/leaf-protocol.json PROTOCOL-NOTICE.md
exit "$status"
