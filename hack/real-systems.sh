#!/usr/bin/env bash
# The real-systems stage: a real kube-apiserver and real Keystone, Nova, Neutron and
# Octavia from ../shared/real-systems, then
#   1. the end-to-end suite (tests/it/e2e_*, leader_election) against the real API server;
#   2. tests/it/real_systems.rs, real_shared_clusters.rs, real_lifecycle.rs and
#      real_monitoring.rs, which drive the operator binary as a user does (kubectl, the
#      openstack CLI), authenticated as the ServiceAccount config/rbac ships; the last
#      with Debian's Prometheus scraping it.
# Installs and starts what it needs, retries a failed start once, stops what it started.
# Exits non-zero when anything fails; never skips.
#
# Usage: hack/real-systems.sh            (from anywhere; needs root for the installs)
# Env:   VERDA_REAL_SYSTEMS_DIR  where the real systems live (default ../shared/real-systems)
#        VERDA_KEEP_REAL_SYSTEMS=1  leave them running afterwards
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RS="${VERDA_REAL_SYSTEMS_DIR:-$ROOT/../shared/real-systems}"
WORK="$ROOT/target/real-systems"
ADMIN_KUBECONFIG=/opt/kubeharness/kubeconfig
CLOUDS=/opt/osharness/run/clouds.yaml
OSC=/opt/osharness/venv/bin/openstack

log() { echo "[real-systems] $*" >&2; }
[[ -d $RS ]] || { log "no real systems at $RS"; exit 1; }
mkdir -p "$WORK"

started=()
cleanup() {
  local rc=$?
  if [[ ${VERDA_KEEP_REAL_SYSTEMS:-0} != 1 ]]; then
    for s in "${started[@]}"; do bash "$RS/$s/stop.sh" >"$WORK/stop-$s.log" 2>&1 || true; done
  fi
  exit "$rc"
}
trap cleanup EXIT

# start NAME LOGDIR: start a real system, retry once after stopping it, else fail with
# the tail of its logs.
start() {
  local name=$1 logs=$2 attempt
  for attempt in 1 2; do
    log "starting $name (attempt $attempt)"
    if bash "$RS/$name/start.sh" >"$WORK/start-$name.log" 2>&1; then
      [[ " ${started[*]} " == *" $name "* ]] || started+=("$name")
      return 0
    fi
    tail -n 20 "$WORK/start-$name.log" >&2
    bash "$RS/$name/stop.sh" >/dev/null 2>&1 || true
  done
  log "$name did not start twice; last lines of its logs:"
  for f in "$logs"/*.log; do [[ -f $f ]] && { echo "== $f"; tail -n 15 "$f"; }; done >&2
  return 1
}

t0=$(date +%s)
# shellcheck source=hack/prometheus.sh
source "$ROOT/hack/prometheus.sh"
PROMETHEUS=$(install_prometheus)
log "Prometheus: $PROMETHEUS"
log "installing OpenStack (idempotent)"
bash "$RS/openstack/install.sh" >"$WORK/install.log" 2>&1 || { tail -n 30 "$WORK/install.log" >&2; exit 1; }
start kube /opt/kubeharness/run/logs
# A fresh OpenStack every run (about 2 min more than a restart): state left by an
# earlier run cannot leak into this one. Two compute hosts, not three: the third,
# host-hierarchical, binds ports through a dynamic VLAN segment, and once such a
# segment exists (it outlives its ports when a bind fails) Neutron's test driver fails
# every bind on the network, so no server can be created any more.
bash "$RS/openstack/stop.sh" --wipe >"$WORK/wipe-openstack.log" 2>&1 || true
export OSH_COMPUTE_HOSTS="host-ovs-filter-active host-ovs-no_filter"
start openstack /opt/osharness/run/logs
log "real systems up in $(($(date +%s) - t0)) s"
# A second project (team-b) for the shared-cluster test: its user, network,
# quotas and application credential, in a clouds.yaml of its own.
# shellcheck source=hack/real-tenant.sh
source "$ROOT/hack/real-tenant.sh"
TENANT_CLOUDS="$WORK/tenant-clouds.yaml"
make_tenant "$TENANT_CLOUDS"

export KUBECONFIG=$ADMIN_KUBECONFIG
command -v kubectl >/dev/null || { log "kubectl is not on PATH"; exit 1; }
kubectl() { command kubectl "$@" 2> >(grep -v 'version difference\|^WARNING: version' >&2); }

# Install as a user would, with the one-file install: CRDs, RBAC, namespace and
# Deployment (no kubelet runs it here).
install_operator() {
  kubectl apply -f "$ROOT/dist/install.yaml" >/dev/null
  kubectl wait --for condition=Established --timeout=60s \
    crd/virtualmachines.verda.linecorp.com crd/virtualmachinegroups.verda.linecorp.com \
    crd/loadbalancers.verda.linecorp.com >/dev/null
}

# Whatever an interrupted earlier run left in the demo project goes first, so that
# quotas and the tests' before/after inventories start from a clean project.
purge_project() {
  local os=("$OSC" --os-cloud osh-demo)
  export OS_CLIENT_CONFIG_FILE=$CLOUDS
  local lbs servers groups fips
  lbs=$("${os[@]}" loadbalancer list -f value -c id)
  for id in $lbs; do "${os[@]}" loadbalancer delete --cascade --wait "$id"; done
  servers=$("${os[@]}" server list -f value -c ID)
  [[ -z $servers ]] || "${os[@]}" server delete --wait $servers
  groups=$("${os[@]}" server group list -f value -c ID)
  [[ -z $groups ]] || "${os[@]}" server group delete $groups
  fips=$("${os[@]}" floating ip list -f value -c ID)
  [[ -z $fips ]] || "${os[@]}" floating ip delete $fips
  log "purged the demo project: $(echo $lbs | wc -w) load balancers, $(echo $servers | wc -w) servers, $(echo $groups | wc -w) server groups, $(echo $fips | wc -w) floating IPs"
}

install_operator
cd "$ROOT"
log "end-to-end suite against the real kube-apiserver"
t1=$(date +%s)
VERDA_E2E_REAL_CLUSTER=1 cargo test --locked --test it -- e2e_ leader_election::
log "end-to-end suite passed in $(($(date +%s) - t1)) s"

# The suite leaves its namespaces behind with objects in them; the operator binary,
# watching every namespace, would reconcile them against the real cloud. A fresh
# cluster (start.sh wipes etcd) keeps the two stages apart.
log "fresh cluster for the operator binary"
bash "$RS/kube/stop.sh" >"$WORK/stop-kube.log" 2>&1
start kube /opt/kubeharness/run/logs
install_operator
purge_project

# The operator's identity: the ServiceAccount config/rbac ships, nothing more.
token=$(kubectl -n verda-system create token verda-operator --duration=2h)
sa_kubeconfig="$WORK/operator.kubeconfig"
cp "$ADMIN_KUBECONFIG" "$sa_kubeconfig"
KUBECONFIG=$sa_kubeconfig command kubectl config set-credentials operator --token="$token" >/dev/null
KUBECONFIG=$sa_kubeconfig command kubectl config set-context --current --user=operator >/dev/null
chmod 600 "$sa_kubeconfig"

log "operator binary against real OpenStack"
t2=$(date +%s)
VERDA_REAL_OPERATOR_KUBECONFIG=$sa_kubeconfig \
VERDA_REAL_ADMIN_KUBECONFIG=$ADMIN_KUBECONFIG \
VERDA_REAL_CLOUDS=$CLOUDS \
VERDA_REAL_OPENSTACK_CLI=$OSC \
VERDA_REAL_OPENSTACK_LOGS=/opt/osharness/run/logs \
VERDA_REAL_COMPUTE_HOSTS=$(wc -w <<<"$OSH_COMPUTE_HOSTS") \
VERDA_REAL_TENANT_CLOUDS=$TENANT_CLOUDS \
VERDA_REAL_PROMETHEUS=$PROMETHEUS \
  cargo test --locked --test it -- --ignored --test-threads=1 --nocapture \
    real_systems:: real_shared_clusters:: real_lifecycle:: real_monitoring::
log "real-cloud suite passed in $(($(date +%s) - t2)) s; stage took $(($(date +%s) - t0)) s"
