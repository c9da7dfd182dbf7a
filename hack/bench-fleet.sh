#!/usr/bin/env bash
# Fleet-size benchmark (release build): 100 and 1,000 VMs in groups of 10, each group
# behind a 2-port LoadBalancer, on the simulator at zero delay and the test API server
# (or the cluster of KUBECONFIG with VERDA_BENCH_REAL_CLUSTER=1). Prints time to
# converge, cloud calls (total, per VM, by operation), peak RSS and idle calls per
# resync period. Arguments: group counts (default: 10 100).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p verda-operator -p verda-test-apiserver --bins
exec python3 hack/bench_fleet.py "$@"
