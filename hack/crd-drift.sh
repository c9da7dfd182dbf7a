#!/usr/bin/env bash
# Fails when config/crd/bases differs from what the Rust types generate.
# Fix with: cargo run --locked -- crdgen --out config/crd/bases
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The container image's build (no simulator, mimalloc): CI compiles it here once and
# hack/ci-image.sh finds it fresh.
cargo run --quiet --locked --bin verda-operator --no-default-features --features mimalloc -- \
  crdgen --out "$tmp" >/dev/null
if ! diff -ru config/crd/bases "$tmp"; then
  echo "config/crd/bases is stale: run 'cargo run -- crdgen --out config/crd/bases'" >&2
  exit 1
fi
echo "CRDs up to date"
