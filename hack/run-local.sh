#!/usr/bin/env bash
# Runs the operator on this machine with no cluster and no cloud: the development
# Kubernetes API server (tests/apiserver) and the operator's embedded OpenStack
# simulator. Use the printed KUBECONFIG with kubectl in another terminal.
# Set VERDA_LISTEN to move the metrics endpoint (default 127.0.0.1:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
mkdir -p target/local
kubeconfig="$PWD/target/local/kubeconfig"
rm -f "$kubeconfig"

cargo build --locked -p verda-operator -p verda-test-apiserver --bins

"$target/debug/verda-test-apiserver" --kubeconfig "$kubeconfig" &
apiserver=$!
trap 'kill "$apiserver" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$kubeconfig" ] && break; sleep 0.1; done

cat <<MSG
Kubernetes API server for development: export KUBECONFIG=$kubeconfig
Then, for example:
  kubectl apply -f samples/virtualmachinegroup.yaml -f samples/loadbalancer.yaml
  kubectl get verda
  kubectl scale vmg/virtualmachinegroup-sample --replicas=3
MSG
"$target/debug/verda-operator" run --kubeconfig "$kubeconfig" \
  --listen "${VERDA_LISTEN:-127.0.0.1:8080}" --lease-namespace default
