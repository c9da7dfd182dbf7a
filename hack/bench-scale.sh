#!/usr/bin/env bash
# The scale story and the steady state, measured against the simulator without
# latency: time and cloud calls from replicas 2 -> 3 to the third member in every
# pool, and cloud calls per resync when nothing changes.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked --test it -- --ignored --nocapture bench_scale:: 2>&1 | grep -E '^(SCALE|STEADY)|test result'
