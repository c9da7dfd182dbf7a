#!/usr/bin/env bash
# Fleet-size benchmark (release build): 100 and 1,000 VMs in groups of 10, each group
# behind a 2-port LoadBalancer, on the simulator at zero delay and the test API server
# (or the cluster of KUBECONFIG with VERDA_BENCH_REAL_CLUSTER=1). Prints time to
# converge, cloud calls (total, per VM, by operation), peak RSS and idle calls per
# resync period. Arguments: group counts (default: 10 100). Knobs (hack/bench_fleet.py):
# VERDA_BENCH_REPLICAS (group size), VERDA_BENCH_BUDGET (RATE/BURST),
# VERDA_BENCH_LATENCY and VERDA_BENCH_BUILD (the simulator's pace, e.g. 0.2s and 5s),
# VERDA_BENCH_FAIRNESS=1 (another project's VirtualMachine timed alone and during the fleet),
# VERDA_BENCH_PORTS=1 (every replica on a declared port),
# VERDA_BENCH_ZONES=1 (every group spread over the simulator's three availability zones),
# VERDA_BENCH_LB_OPTIONS=1 (every LoadBalancer with every listener, pool and monitor option),
# VERDA_BENCH_DNS=1 (a DNSZone, every group and LoadBalancer named in it),
# VERDA_BENCH_AUTOSCALE=1 (every group autoscaled on its LoadBalancer's listener),
# VERDA_BENCH_SG=1 (every replica in a SecurityGroup fed by another group, one per ten groups).
# VERDA_BENCH_OPERATOR_WRAP (a command the operator runs under; hack/bench-memory.sh uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p verda-operator -p verda-test-apiserver --bins
exec python3 hack/bench_fleet.py "$@"
