#!/usr/bin/env bash
# CI's image stage: the top-level Dockerfile built with podman from bases assembled out of
# this machine (hack/image-check.sh), its builder reusing this target/debug, and the image
# run against the test API server with the simulator as its cloud. Both are the binaries
# the README's tests built (`cargo test --workspace` builds them), and the image's own
# build (without the simulator) is the one hack/crd-drift.sh made: nothing compiles here
# that CI compiled before.
set -euo pipefail
cd "$(dirname "$0")/.."
# Fresh after the README's tests: this only makes sure the binaries are there.
cargo test --quiet --workspace --locked --no-run
bins=target/image-check-bins
mkdir -p "$bins"
# Copies: the builder's cargo replaces target/debug/verda-operator.
cp target/debug/verda-operator "$bins/verda-operator"
cp target/debug/verda-test-apiserver "$bins/verda-test-apiserver"
# The Dockerfile's cargo command on the host (fresh after hack/crd-drift.sh): the image's
# build (PROFILE=dev, this target/debug mounted in its builder) then takes seconds.
cargo build --quiet --locked -p verda-operator --bin verda-operator --no-default-features --features mimalloc
VERDA_TEST_APISERVER="$bins/verda-test-apiserver" VERDA_CLOUD_SIMULATOR="$bins/verda-operator" \
  hack/image-check.sh dev
# The builder's cargo left the image's binary at target/debug/verda-operator: cargo links
# the tests' one (with the simulator) back, for the real-systems stage.
cargo test --quiet --workspace --locked --no-run
target/debug/verda-operator simulate --help >/dev/null ||
  { echo "target/debug/verda-operator is not the operator with the simulator after the image build" >&2; exit 1; }
