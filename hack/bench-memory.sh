#!/usr/bin/env bash
# The operator's heap by part (watch caches, cloud view, calls in flight, metrics,
# events, queues, reconciles) at the heap's peak and once settled, per VM, for a fleet
# of GROUPS groups of 10 (default 300): hack/bench_fleet.py run once with the operator
# under heaptrack, built with the system allocator (heaptrack cannot follow mimalloc) in
# target/heap (with the embedded simulator, which the bench runs). Slower than the plain bench; its times and call counts are not figures.
set -euo pipefail
cd "$(dirname "$0")/.."
groups="${1:-300}"
command -v heaptrack >/dev/null || { echo "needs heaptrack (apt-get install heaptrack)" >&2; exit 1; }
export CARGO_TARGET_DIR=target/heap
cargo build --release --locked --no-default-features --features embedded-sim -p verda-operator -p verda-test-apiserver --bins
recording="target/heap/operator-$groups-$(date +%s)"
VERDA_BENCH_OPERATOR_WRAP="heaptrack -o $recording" VERDA_BENCH_IDLE_PERIODS=1 \
  VERDA_BENCH_RESYNC_SECS=10 python3 hack/bench_fleet.py "$groups" | grep -v '^FLEET'
echo "recording: $recording.zst (heaptrack_gui or heaptrack_print read it)"
python3 hack/heap_by_part.py "$recording".zst "$((groups * ${VERDA_BENCH_REPLICAS:-10}))"
