#!/usr/bin/env bash
# CI's image stage: the top-level Dockerfile built with podman from bases assembled out of
# this machine (hack/image-check.sh), its builder reusing this target/debug, and the image
# run against the test API server with the simulator of the default build as its cloud.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --locked -p verda-test-apiserver
# The Dockerfile's cargo command on the host: the image's build (PROFILE=dev, this
# target/debug mounted in its builder) then finds it fresh and takes seconds.
cargo build --quiet --locked -p verda-operator --bin verda-operator --no-default-features --features mimalloc
# The image's cloud: the default build's simulator, built last so that
# target/debug/verda-operator is it when image-check.sh copies it aside.
cargo build --quiet --locked -p verda-operator
hack/image-check.sh dev
# The builder's cargo left the image's binary at target/debug/verda-operator: the default
# one back, for the real-systems stage.
cargo build --quiet --locked -p verda-operator
