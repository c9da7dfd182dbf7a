#!/usr/bin/env bash
# Measures the OpenStack simulator's throughput on loopback (mixed reads over keep-alive
# connections). Pass --release as the first argument for an optimised build.
# Knobs: SIM_BENCH_SECS (default 3), SIM_BENCH_CONCURRENCY (default 16).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=()
if [[ "${1:-}" == "--release" ]]; then profile=(--release); fi
exec cargo test "${profile[@]}" -p verda-operator --test it -- --ignored --nocapture sim_throughput::
