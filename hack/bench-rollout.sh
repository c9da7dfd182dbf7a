#!/usr/bin/env bash
# A rollout measured against the simulator without latency: a 30-replica group behind
# the published 2-port LoadBalancer, one replica at a time (maxSurge: 1) against
# maxSurge: 25%, until every replica runs the new template and serves: time and cloud
# calls of each, and their ratio, in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked --test it -- --ignored --nocapture bench_rollout:: 2>&1 | grep -E '^ROLLOUT|test result'
