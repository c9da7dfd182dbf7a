#!/usr/bin/env bash
# The real-systems stage: a real kube-apiserver and real Keystone, Nova (three compute
# hosts), Neutron, Octavia and Cinder from ../shared/real-systems, then
#   e2e      the end-to-end suite (tests/it/e2e_*, leader_election) against the real API
#            server, and the real `openstack` CLI against `verda-operator simulate`
#            (hack/simulate-cli.sh, run while OpenStack starts: it needs neither);
#   cloud    tests/it/real_systems.rs, real_shared_clusters.rs, real_lifecycle.rs and
#            real_monitoring.rs, which drive the operator binary as a user does (kubectl,
#            the openstack CLI), authenticated as the ServiceAccount config/rbac ships;
#            the last with Debian's Prometheus scraping it;
#   volumes  tests/it/real_volumes.rs: boot and data volumes on the real Cinder, a
#            group's per-replica volumes across replacement, roll-out and scaling;
#            tests/it/real_addresses.rs: a group's per-replica ports and fixed
#            addresses on the real Neutron, kept across the same;
#   health   tests/it/real_group_health.rs: a group healing itself; tests/it/real_lb_options.rs:
#            listener, pool and monitor options and a traffic split between two groups
#            on the real Octavia; tests/it/real_lb_tls.rs: TLS termination from
#            kubernetes.io/tls Secrets through the real Barbican; tests/it/real_dns.rs:
#            a DNSZone and the DNS names of a LoadBalancer and a group in the real
#            Designate, resolved from BIND with dig;
#   zones    tests/it/real_zones.rs: groups spread over the three Nova availability
#            zones, one zone lost (its compute service disabled, its servers ERROR)
#            and back;
#   upgrade  the previous release (RELEASES) built from git (in the background from the
#            stage's start, in target/previous) and run with its own dist/install.yaml,
#            then upgraded in place (tests/it/real_upgrade.rs);
#   chaos    two replicas under seeded random faults (tests/it/real_chaos.rs; the seed
#            is printed, VERDA_CHAOS_SEED replays it);
#   shards   three `run --shards` replicas divide six namespaces, one is SIGKILLed
#            (tests/it/real_shards.rs; VERDA_REAL_SHARDS_NAMESPACES sets how many);
#   helm     the Helm chart installed, upgraded (CRDs as documented, nothing replaced),
#            refused a Secret outside its namespaces and uninstalled (hack/real-helm.sh).
# health, shards, helm and upgrade run beside cloud and volumes, in a second Kubernetes
# cluster and projects of their own (lane b, below); zones and chaos after both.
# Installs and starts what it needs, retries a failed start once, stops what it started.
# Exits non-zero when anything fails; never skips.
#
# Usage: hack/real-systems.sh            (from anywhere; needs root for the installs)
# Env:   VERDA_REAL_SYSTEMS_DIR  where the real systems live (default ../shared/real-systems)
#        VERDA_KEEP_REAL_SYSTEMS=1  leave them running afterwards
#        VERDA_REAL_STAGES       the stages to run, for development (default, and in CI:
#                                "e2e cloud volumes health zones upgrade chaos shards helm"); a stage left out is
#                                said so
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RS="${VERDA_REAL_SYSTEMS_DIR:-$ROOT/../shared/real-systems}"
WORK="$ROOT/target/real-systems"
ADMIN_KUBECONFIG=/opt/kubeharness/kubeconfig
CLOUDS=/opt/osharness/run/clouds.yaml
OSC=/opt/osharness/venv/bin/openstack

log() { echo "[real-systems] $*" >&2; }
# record NAME SINCE: a part's time, in the table .ci/run prints at the end.
record() { printf '%s\t%s\n' "$1" $(($(date +%s) - $2)) >>"$WORK/stage-times"; }
STAGES=" ${VERDA_REAL_STAGES:-e2e cloud volumes health zones upgrade chaos shards helm} "
stage() {
  [[ $STAGES == *" $1 "* ]] && return 0
  log "stage $1 left out (VERDA_REAL_STAGES=$STAGES)"
  return 1
}
[[ -d $RS ]] || { log "no real systems at $RS"; exit 1; }
mkdir -p "$WORK"

# Lane b's Kubernetes cluster: the same binaries as the first, its own place and ports
# (../shared/real-systems/kube/start.sh and stop.sh read them).
LANE_B_KUBE="$WORK/kube-b"
lane_b_cluster() {
  export KUBEHARNESS_HOME="$LANE_B_KUBE" KUBEHARNESS_BIN=/opt/kubeharness/bin \
    KUBEHARNESS_API_PORT=6444 KUBEHARNESS_ETCD_PORT=2381 KUBEHARNESS_ETCD_PEER_PORT=2382 \
    KUBEHARNESS_KCM_PORT=10267
}

started=()
t0=$(date +%s)
cleanup() {
  local rc=$?
  # (its group, or itself if it has not made the group yet)
  [[ -z ${simcli_pid:-} ]] || kill -- -"$simcli_pid" 2>/dev/null || kill "$simcli_pid" 2>/dev/null || true
  [[ -z ${previous_pid:-} ]] || kill -- -"$previous_pid" 2>/dev/null || kill "$previous_pid" 2>/dev/null || true
  [[ -z ${autoscale_pid:-} ]] || kill -- -"$autoscale_pid" 2>/dev/null || kill "$autoscale_pid" 2>/dev/null || true
  [[ -z ${lane_b_pid:-} ]] || kill -- -"$lane_b_pid" 2>/dev/null || kill "$lane_b_pid" 2>/dev/null || true
  if [[ ${VERDA_KEEP_REAL_SYSTEMS:-0} != 1 && -d $LANE_B_KUBE ]]; then
    (lane_b_cluster && bash "$RS/kube/stop.sh") >"$WORK/stop-kube-lane-b.log" 2>&1 || true
  fi
  if [[ ${VERDA_KEEP_REAL_SYSTEMS:-0} != 1 ]]; then
    for s in "${started[@]}"; do bash "$RS/$s/stop.sh" >"$WORK/stop-$s.log" 2>&1 || true; done
  fi
  exit "$rc"
}
trap cleanup EXIT
# A signal from outside (a runner's deadline, Ctrl-C) fails the stage, which stops the
# real systems once the command running now returns (bash runs a trap only then). Said
# in the log, so that it is not read as a test failing by itself.
interrupted() {
  log "interrupted by SIG$1 from outside this stage, $(($(date +%s) - t0)) s after it began:"
  log "the stage fails and stops the real systems once the command running now returns"
  trap - "$1"
  exit $((128 + $2))
}
trap 'interrupted HUP 1' HUP
trap 'interrupted INT 2' INT
trap 'interrupted TERM 15' TERM

# start NAME LOGDIR: start a real system, retry once after stopping it, else fail with
# the tail of its logs.
start() {
  local name=$1 logs=$2 attempt
  for attempt in 1 2; do
    log "starting $name (attempt $attempt)"
    if bash "$RS/$name/start.sh" >"$WORK/start-$name${LANE:-}.log" 2>&1; then
      [[ " ${started[*]} " == *" $name "* ]] || started+=("$name")
      return 0
    fi
    tail -n 20 "$WORK/start-$name${LANE:-}.log" >&2
    bash "$RS/$name/stop.sh" >/dev/null 2>&1 || true
  done
  log "$name did not start twice; last lines of its logs:"
  for f in "$logs"/*.log; do [[ -f $f ]] && { echo "== $f"; tail -n 15 "$f"; }; done >&2
  return 1
}

# shellcheck source=hack/prometheus.sh
source "$ROOT/hack/prometheus.sh"
PROMETHEUS=$(install_prometheus)
log "Prometheus: $PROMETHEUS"
log "installing OpenStack (idempotent)"
bash "$RS/openstack/install.sh" >"$WORK/install.log" 2>&1 || { tail -n 30 "$WORK/install.log" >&2; exit 1; }
start kube /opt/kubeharness/run/logs
# The openstack CLI against `verda-operator simulate` needs neither the cluster nor the
# real cloud, only the CLI: it runs while OpenStack starts (a minute off the stage), in
# a process group of its own that cleanup stops.
simcli_pid=
if [[ $STAGES == *" e2e "* ]]; then
  t_cli=$(date +%s)
  setsid bash -c 'VERDA_OPENSTACK_CLI=$1 bash "$2"; rc=$?; date +%s >"$3"; exit $rc' _ \
    "$OSC" "$ROOT/hack/simulate-cli.sh" "$WORK/simulate-cli.end" >"$WORK/simulate-cli.log" 2>&1 &
  simcli_pid=$!
fi
# A fresh OpenStack every run (about 2 min more than a restart): state left by an
# earlier run cannot leak into this one. The default compute hosts (three, all binding
# ports as OVS).
bash "$RS/openstack/stop.sh" --wipe >"$WORK/wipe-openstack.log" 2>&1 || true
unset OSH_COMPUTE_HOSTS
start openstack /opt/osharness/run/logs
COMPUTE_HOSTS=$(OS_CLIENT_CONFIG_FILE=$CLOUDS "$OSC" --os-cloud osh-admin compute service list \
  --service nova-compute -f value -c Host | sort -u | wc -l)
log "real systems up in $(($(date +%s) - t0)) s ($COMPUTE_HOSTS compute hosts)"
record "start: Prometheus, OpenStack, Kubernetes" "$t0"
# A second project (team-b) for the shared-cluster test: its user, network,
# quotas and application credential, in a clouds.yaml of its own.
# hack/real_tenant.py OUT [PROJECT CIDR [--as-demo]], as the real systems' admin (lane b
# changes CLOUDS to its own project's file).
real_tenant() {
  OS_CLIENT_CONFIG_FILE=/opt/osharness/run/clouds.yaml "$(dirname "$OSC")/python3" \
    "$ROOT/hack/real_tenant.py" "$@"
}
TENANT_CLOUDS="$WORK/tenant-clouds.yaml"
t_tenant=$(date +%s)
real_tenant "$TENANT_CLOUDS"
record "start: second project (team-b)" "$t_tenant"

export KUBECONFIG=$ADMIN_KUBECONFIG
command -v kubectl >/dev/null || { log "kubectl is not on PATH"; exit 1; }
kubectl() { command kubectl "$@" 2> >(grep -v 'version difference\|^WARNING: version' >&2); }

# Install as a user would, with the one-file install (this release's, or the file
# given): CRDs, RBAC, namespace and Deployment (no kubelet runs it here).
install_operator() {
  local file=${1:-$ROOT/dist/install.yaml} crds
  kubectl apply -f "$file" >/dev/null
  crds="crd/virtualmachines.verda.linecorp.com crd/virtualmachinegroups.verda.linecorp.com crd/loadbalancers.verda.linecorp.com"
  # DNSZone came with 0.8.0: an earlier release's file has no such CRD.
  grep -q 'name: dnszones.verda.linecorp.com' "$file" && crds="$crds crd/dnszones.verda.linecorp.com"
  # SecurityGroup came with 0.10.0.
  grep -q 'name: securitygroups.verda.linecorp.com' "$file" && crds="$crds crd/securitygroups.verda.linecorp.com"
  # shellcheck disable=SC2086
  kubectl wait --for condition=Established --timeout=60s $crds >/dev/null
}

# Whatever an interrupted earlier run left in the demo project goes first, so that
# quotas and the tests' before/after inventories start from a clean project.
purge_project() {
  export OS_CLIENT_CONFIG_FILE=$CLOUDS
  "$(dirname "$OSC")/python3" "$ROOT/hack/real_purge.py"
}

# The previous release (RELEASES): its source from git, built in a target directory of
# its own (target/previous: it never replaces this release's binary, nor waits for the
# tests' cargo), in the background at the lowest priority from the stage's start: the
# OpenStack start and the first stages leave a core mostly idle, waiting on the cloud.
# Built once per commit: a later run in this checkout (target/ keeps it) reuses it.
start_previous_build() {
  local current line
  current=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n1)
  line=$(grep -v '^#' "$ROOT/RELEASES" | awk -v cur="$current" 'NF == 2 && $1 != cur' | tail -n1)
  [[ -n $line ]] || { log "RELEASES names no release before $current"; return 1; }
  PREVIOUS_VERSION=${line%% *}
  PREVIOUS_COMMIT=${line##* }
  if ! git -C "$ROOT" cat-file -e "$PREVIOUS_COMMIT^{commit}" 2>/dev/null; then
    log "release $PREVIOUS_VERSION was built from $PREVIOUS_COMMIT, which this clone does not have;"
    log "the upgrade check needs the repository's history (a full clone, not a shallow one)"
    return 1
  fi
  PREVIOUS_SRC="$WORK/previous-$PREVIOUS_VERSION"
  PREVIOUS_BIN="$WORK/verda-operator-$PREVIOUS_VERSION"
  rm -rf "$PREVIOUS_SRC" && mkdir -p "$PREVIOUS_SRC"
  git -C "$ROOT" archive "$PREVIOUS_COMMIT" | tar -x -C "$PREVIOUS_SRC"
  if [[ -x $PREVIOUS_BIN && $(cat "$PREVIOUS_BIN.commit" 2>/dev/null) == "$PREVIOUS_COMMIT" ]]; then
    log "previous release $PREVIOUS_VERSION: the binary built from $PREVIOUS_COMMIT earlier"
    return 0
  fi
  log "building the previous release $PREVIOUS_VERSION ($PREVIOUS_COMMIT) in the background"
  previous_t0=$(date +%s)
  rm -f "$WORK/previous-build.end" "$WORK/previous-build.failed"
  # Its session's scheduling group at the lowest priority too (nice alone ranks it only
  # within its session when the kernel groups by session).
  setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true
    cd "$1" && CARGO_TARGET_DIR="$2" nice -n 19 cargo build --quiet --locked --bin verda-operator &&
    cp "$2/debug/verda-operator" "$3" && echo "$4" >"$3.commit" && date +%s >"$5.end" ||
    { touch "$5.failed"; exit 1; }' _ \
    "$PREVIOUS_SRC" "$ROOT/target/previous" "$PREVIOUS_BIN" "$PREVIOUS_COMMIT" "$WORK/previous-build" \
    >"$WORK/previous-build.log" 2>&1 &
  previous_pid=$!
}

# Whether process $1 runs (a child not waited for stays a zombie, which kill -0 finds).
running() {
  local state
  state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) && [[ $state != Z ]]
}

# Waits for the previous release's build (start_previous_build) and checks both binaries
# say their versions.
build_previous() {
  if [[ -n ${previous_pid:-} ]]; then
    local pid=$previous_pid
    previous_pid=
    # Lane b waits from a subshell, which cannot `wait` for its parent's child: the
    # build says how it ended in a file.
    until [[ -s $WORK/previous-build.end || -e $WORK/previous-build.failed ]]; do
      running "$pid" || break
      sleep 2
    done
    if [[ ! -s $WORK/previous-build.end ]]; then
      cat "$WORK/previous-build.log" >&2
      log "the previous release $PREVIOUS_VERSION did not build (above)"
      return 1
    fi
    printf '%s\t%s\n' "upgrade: previous release built (beside the stages)" \
      $(($(cat "$WORK/previous-build.end") - previous_t0)) >>"$WORK/stage-times"
  fi
  local built current
  # Built by the tests of the stages before (their features, which a plain build would
  # not share); run alone on a fresh clone, the stage builds it.
  [[ -x $ROOT/target/debug/verda-operator ]] ||
    (cd "$ROOT" && cargo build --quiet --locked --bin verda-operator)
  current=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n1)
  built=$("$PREVIOUS_BIN" --version) && [[ $built == "verda-operator $PREVIOUS_VERSION" ]] ||
    { log "the previous binary says '$built', not $PREVIOUS_VERSION"; return 1; }
  built=$("$ROOT/target/debug/verda-operator" --version) && [[ $built == "verda-operator $current" ]] ||
    { log "the current binary says '$built', not $current"; return 1; }
  log "previous release $PREVIOUS_VERSION built from $PREVIOUS_COMMIT"
}

# Started now, waited for by the upgrade stage.
if [[ $STAGES == *" upgrade "* ]]; then start_previous_build; fi

# A fresh cluster (start.sh wipes etcd) with the install file `$1` applied, the demo
# project purged, and a kubeconfig of the ServiceAccount config/rbac ships (the
# operator's identity, nothing more) in $sa_kubeconfig.
fresh_cluster() {
  bash "$RS/kube/stop.sh" >"$WORK/stop-kube${LANE:-}.log" 2>&1
  start kube "${KUBEHARNESS_HOME:-/opt/kubeharness}/run/logs"
  install_operator "$1"
  purge_project
  sa_kubeconfig="$WORK/operator${LANE:-}.kubeconfig"
  bash "$ROOT/hack/sa-kubeconfig.sh" "$ADMIN_KUBECONFIG" verda-system "$sa_kubeconfig" 2h
}

# The command running the ignored real-cloud tests named after $1, as the ServiceAccount
# of the kubeconfig $1, in the array real_command.
real_test_command() {
  local kubeconfig=$1
  shift
  real_command=(env
    VERDA_REAL_OPERATOR_KUBECONFIG="$kubeconfig"
    VERDA_REAL_ADMIN_KUBECONFIG="$ADMIN_KUBECONFIG"
    VERDA_REAL_CLOUDS="$CLOUDS"
    VERDA_REAL_OPENSTACK_CLI="$OSC"
    VERDA_REAL_OPENSTACK_LOGS=/opt/osharness/run/logs
    VERDA_REAL_OPENSTACK_PIDS=/opt/osharness/run/pids
    VERDA_REAL_OPENSTACK_START="$RS/openstack/start.sh"
    VERDA_REAL_COMPUTE_HOSTS="$COMPUTE_HOSTS"
    VERDA_REAL_TENANT_CLOUDS="$TENANT_CLOUDS"
    VERDA_REAL_PROMETHEUS="$PROMETHEUS"
    VERDA_REAL_PREVIOUS_OPERATOR="${PREVIOUS_BIN:-}"
    VERDA_REAL_PREVIOUS_VERSION="${PREVIOUS_VERSION:-}"
    cargo test --locked --test it -- --ignored --test-threads="${REAL_THREADS:-1}" --nocapture "$@")
}

# The ignored real-cloud tests named in "$@", as the operator's ServiceAccount.
real_tests() {
  real_test_command "$sa_kubeconfig" "$@"
  "${real_command[@]}"
}

cd "$ROOT"

if stage e2e; then
  install_operator
  # Groups that size themselves (tests/it/real_autoscaling.rs, project demo) and
  # security groups that follow them (tests/it/real_security_groups.rs, project team-b),
  # side by side and beside the suite: the suite needs only the kube-apiserver, the
  # tests mostly wait (for Nova, Octavia, Prometheus, a schedule's minute), and each
  # test's operator watches only its own namespace. As the operator's ServiceAccount,
  # whose kubeconfig is kept apart from the later stages' (they start from a fresh
  # cluster).
  autoscale_kubeconfig="$WORK/operator-autoscale.kubeconfig"
  bash "$ROOT/hack/sa-kubeconfig.sh" "$ADMIN_KUBECONFIG" verda-system "$autoscale_kubeconfig" 2h
  t_auto=$(date +%s)
  REAL_THREADS=2 real_test_command "$autoscale_kubeconfig" real_autoscaling:: real_security_groups::
  setsid bash -c 'end=$1; shift; "$@"; rc=$?; date +%s >"$end"; exit $rc' _ \
    "$WORK/autoscale.end" "${real_command[@]}" >"$WORK/autoscale.log" 2>&1 &
  autoscale_pid=$!
  log "end-to-end suite against the real kube-apiserver"
  t1=$(date +%s)
  # Six at once on two cores: the suite waits on the API server far more than it
  # computes (as the README's tests in .ci/run).
  VERDA_E2E_REAL_CLUSTER=1 cargo test --locked --test it -- --test-threads=6 e2e_ leader_election::
  log "end-to-end suite passed in $(($(date +%s) - t1)) s"
  record "e2e: end-to-end suite" "$t1"
  pid=$autoscale_pid
  autoscale_pid=
  if ! wait "$pid"; then
    cat "$WORK/autoscale.log" >&2
    log "autoscaling or security groups on the real cloud failed (above)"
    exit 1
  fi
  cat "$WORK/autoscale.log"
  printf '%s\t%s\n' "e2e: autoscaling and security groups on the real cloud (beside the suite)" \
    $(($(cat "$WORK/autoscale.end") - t_auto)) >>"$WORK/stage-times"
  log "the openstack CLI against verda-operator simulate (the embedded cloud), run while OpenStack started:"
  if ! wait "$simcli_pid"; then
    simcli_pid=
    cat "$WORK/simulate-cli.log" >&2
    log "the openstack CLI against verda-operator simulate failed (above)"
    exit 1
  fi
  simcli_pid=
  cat "$WORK/simulate-cli.log" >&2
  printf '%s\t%s\n' "e2e: openstack CLI against simulate (beside the start)" \
    $(($(cat "$WORK/simulate-cli.end") - t_cli)) >>"$WORK/stage-times"
fi

# Lane b: the upgrade, health, shards and helm stages, run beside the cloud and volumes
# stages (the real-cloud tests mostly wait on Nova and Octavia, with the cores 20 to 60 %
# idle). In a Kubernetes cluster of its own (lane_b_cluster) and a project of its own
# (lane-b, made as team-b is, its clouds.yaml naming it osh-demo); the upgrade's second
# tenant is lane-b-team, not the team-b of the cloud stage's tests. Every operator names
# its cluster (the kube-system namespace's UID) in its user agent: each lane counts its
# own requests in the access logs, and sees only its own objects. Nothing either lane
# does breaks the other: the volumes stage stops Cinder's API for a while, which the
# upgrade's orphans check (it lists volumes) runs before, and a purge (it lists volumes)
# waits out; the stages that break what every project uses (zones, chaos) run after
# both lanes.
lane_b() {
  LANE=-lane-b
  lane_b_cluster
  ADMIN_KUBECONFIG=$LANE_B_KUBE/kubeconfig
  export KUBECONFIG=$ADMIN_KUBECONFIG
  CLOUDS="$WORK/lane-b-clouds.yaml"
  local t
  t=$(date +%s)
  real_tenant "$CLOUDS" lane-b 10.2.0.0/24 --as-demo
  # First: beside the cloud stage, which stops no service, and the previous release is
  # built by the time lane b starts.
  if [[ $STAGES == *" upgrade "* ]]; then
    log "lane b: upgrade in place from the previous release"
    t=$(date +%s)
    TENANT_CLOUDS="$WORK/lane-b-tenant-clouds.yaml"
    real_tenant "$TENANT_CLOUDS" lane-b-team 10.3.0.0/24
    build_previous
    fresh_cluster "$PREVIOUS_SRC/dist/install.yaml"
    real_tests real_upgrade::
    log "lane b: upgrade passed in $(($(date +%s) - t)) s"
    record "upgrade (lane b)" "$t"
  fi
  if [[ $STAGES == *" health "* ]]; then
    log "lane b: groups that keep themselves healthy; load balancer options, traffic split, TLS and DNS"
    t=$(date +%s)
    fresh_cluster "$ROOT/dist/install.yaml"
    real_tests real_group_health:: real_lb_options:: real_lb_tls:: real_dns::
    log "lane b: group health and load balancer options, TLS and DNS passed in $(($(date +%s) - t)) s"
    record "health (lane b)" "$t"
  fi
  if [[ $STAGES == *" shards "* ]]; then
    log "lane b: shards: three replicas divide namespaces, one SIGKILLed"
    t=$(date +%s)
    fresh_cluster "$ROOT/dist/install.yaml"
    real_tests real_shards::
    log "lane b: shards passed in $(($(date +%s) - t)) s"
    record "shards (lane b)" "$t"
  fi
  if [[ $STAGES == *" helm "* ]]; then
    log "lane b: Helm chart: install, published objects Ready, upgrade with nothing replaced, uninstall"
    t=$(date +%s)
    # A fresh cluster with nothing installed (the chart installs) and an empty project.
    bash "$RS/kube/stop.sh" >"$WORK/stop-kube$LANE.log" 2>&1
    start kube "$LANE_B_KUBE/run/logs"
    purge_project
    ADMIN_KUBECONFIG=$ADMIN_KUBECONFIG CLOUDS=$CLOUDS OSC=$OSC RS=$RS WORK=$WORK ROOT=$ROOT \
      bash "$ROOT/hack/real-helm.sh"
    log "lane b: Helm chart passed in $(($(date +%s) - t)) s"
    record "helm (lane b)" "$t"
  fi
}

lane_b_pid=
if [[ $STAGES == *" health "* || $STAGES == *" shards "* || $STAGES == *" helm "* ||
  $STAGES == *" upgrade "* ]]; then
  log "lane b (upgrade, health, shards, helm) started beside the stages below; its output: $WORK/lane-b.log"
  t_lane_b=$(date +%s)
  # A process group of its own (job control), which cleanup stops as a whole.
  set -m
  (lane_b) >"$WORK/lane-b.log" 2>&1 &
  lane_b_pid=$!
  set +m
fi

# The suite leaves its namespaces behind with objects in them; the operator binary,
# watching every namespace, would reconcile them against the real cloud. A fresh
# cluster keeps the stages apart.
if stage cloud; then
  log "operator binary against real OpenStack"
  t2=$(date +%s)
  fresh_cluster "$ROOT/dist/install.yaml"
  real_tests real_systems:: real_shared_clusters:: real_lifecycle:: real_monitoring::
  log "real-cloud suite passed in $(($(date +%s) - t2)) s"
  record "cloud" "$t2"
fi

if stage volumes; then
  log "volumes on the real Cinder"
  t5=$(date +%s)
  [[ -n ${sa_kubeconfig:-} ]] || fresh_cluster "$ROOT/dist/install.yaml"
  real_tests real_volumes:: real_addresses::
  log "volumes passed in $(($(date +%s) - t5)) s"
  record "volumes" "$t5"
fi

if [[ -n $lane_b_pid ]]; then
  pid=$lane_b_pid
  lane_b_pid=
  if ! wait "$pid"; then
    cat "$WORK/lane-b.log" >&2
    log "lane b (upgrade, health, shards, helm) failed (above)"
    exit 1
  fi
  cat "$WORK/lane-b.log"
  log "lane b ended $(($(date +%s) - t_lane_b)) s after it started"
fi

if stage zones; then
  log "groups over availability zones: one lost and back"
  t9=$(date +%s)
  [[ -n ${sa_kubeconfig:-} ]] || fresh_cluster "$ROOT/dist/install.yaml"
  real_tests real_zones::
  log "zones passed in $(($(date +%s) - t9)) s"
  record "zones" "$t9"
fi

if stage chaos; then
  log "chaos: two replicas, random faults"
  t4=$(date +%s)
  fresh_cluster "$ROOT/dist/install.yaml"
  real_tests real_chaos::
  log "chaos passed in $(($(date +%s) - t4)) s"
  record "chaos" "$t4"
fi
log "stage took $(($(date +%s) - t0)) s"
