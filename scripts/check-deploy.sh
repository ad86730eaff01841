#!/usr/bin/env bash
# What deploy/ ships, checked with the real tools: both overlays (and the production overlay with
# the internal-ca component) render with `kubectl kustomize`, and the admin policy the
# frognano-policy ConfigMap is generated from is valid (`frognano-bot validate-config --policy`).
# The objects themselves are schema-checked by test/integration/kubernetes/deploy-manifests.test.ts.
# Needs kubectl (its built-in kustomize; Debian's kubernetes-client 1.20 is too old for
# `patches:`/components) and dist/ (npm ci).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v kubectl >/dev/null 2>&1; then
  echo "check-deploy: kubectl is not installed; install kubectl 1.27 or later to render the overlays" >&2
  exit 1
fi
for dir in deploy/overlays/dev deploy/overlays/production test/fixtures/deploy/production-internal-ca; do
  count="$(kubectl kustomize "$dir" | grep -c '^kind: ')"
  echo "check-deploy: kubectl kustomize $dir renders $count objects"
done
node dist/bin/cli.js validate-config --policy deploy/base/policy.yaml
