#!/usr/bin/env bash
# The Helm chart on the real systems, as a user installs and upgrades it:
#   1. helm lint --strict; helm install with a bad value (mode=bogus) refused in the
#      schema's words, nothing installed; helm install into verda-system with the default values (Secrets
#      readable in the namespace `default` only);
#   2. the operator binary run as the chart's ServiceAccount with the chart's arguments
#      and configuration (there is no kubelet to run its pod), the published group and
#      LoadBalancer (../shared/verda-manifests) applied to `default`, Ready;
#   3. the CRD upgrade as documented: a `helm upgrade` leaves stale CRDs stale, `kubectl
#      apply --server-side --force-conflicts -f charts/verda-operator/crds/` brings them
#      up to date; then `helm upgrade --reuse-values` with a new label and resync period,
#      the operator restarted with the new configuration: the same servers, server group
#      and load balancer, still Ready;
#   4. a VirtualMachine in a namespace the chart does not list: its credentials Secret
#      is refused (Ready=False), the group in `default` stays Ready;
#   5. helm uninstall: the CRDs, the custom objects and their cloud resources stay; the
#      Deployment, ServiceAccount, RBAC, ConfigMap and Service go. Then installed again
#      to delete the published objects, which takes their cloud resources.
# Every wait is bounded; a failure prints what failed, the objects' conditions and the
# operator's log.
#
# Usage: hack/real-systems.sh runs it (stage helm) on a fresh kube-apiserver with an
#        empty demo project. By hand, with the real systems up and in that state:
#        hack/real-helm.sh
# Env:   ADMIN_KUBECONFIG, CLOUDS, OSC, RS, WORK, ROOT as hack/real-systems.sh sets them;
#        VERDA_OPERATOR_BIN  the operator binary (default target/debug/verda-operator)
set -euo pipefail
ROOT=${ROOT:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}
RS=${RS:-$ROOT/../shared/real-systems}
WORK="${WORK:-$ROOT/target/real-systems}/helm"
ADMIN_KUBECONFIG=${ADMIN_KUBECONFIG:-/opt/kubeharness/kubeconfig}
CLOUDS=${CLOUDS:-/opt/osharness/run/clouds.yaml}
OSC=${OSC:-/opt/osharness/venv/bin/openstack}
PYTHON=$(dirname "$OSC")/python
BIN=${VERDA_OPERATOR_BIN:-$ROOT/target/debug/verda-operator}
CHART=$ROOT/charts/verda-operator
MANIFESTS=$ROOT/../shared/verda-manifests
NS=verda-system TEAM=default UNLISTED=team-unlisted
GROUP=virtualmachinegroup-sample LB=loadbalancer-sample
export KUBECONFIG=$ADMIN_KUBECONFIG

log() { echo "[real-helm] $*" >&2; }
kubectl() { command kubectl "$@" 2> >(grep -v 'version difference\|^WARNING: version' >&2); }
os() { OS_CLIENT_CONFIG_FILE=$CLOUDS "$OSC" --os-cloud osh-demo "$@"; }
rm -rf "$WORK" && mkdir -p "$WORK"

# shellcheck source=hack/use-helm.sh
source "$ROOT/hack/use-helm.sh"
want_version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n1)
[[ -x $BIN ]] || { log "no operator binary at $BIN: build it (cargo build)"; exit 1; }
[[ $("$BIN" --version) == "verda-operator $want_version" ]] ||
  { log "$BIN says '$("$BIN" --version)', not $want_version: rebuild it"; exit 1; }

# --- the operator process -------------------------------------------------------------
operator_pid="" operator_log="" operator_port="" runs=0
# Runs the binary as a pod of the Deployment would: the chart's ServiceAccount (a fresh
# token), the Deployment's arguments and OS_CLOUD, the ConfigMap's configuration file
# and the Secret's clouds.yaml; only the paths point at copies and /metrics listens on
# a free local port.
start_operator() {
  runs=$((runs + 1))
  local dir=$WORK/run-$runs
  mkdir -p "$dir"
  bash "$ROOT/hack/sa-kubeconfig.sh" "$ADMIN_KUBECONFIG" $NS "$dir/kubeconfig" 1h
  kubectl -n $NS get configmap verda-operator-config -o jsonpath='{.data.config\.yaml}' >"$dir/config.yaml"
  local secret cloud
  secret=$(kubectl -n $NS get deploy verda-operator -o jsonpath='{.spec.template.spec.volumes[?(@.name=="clouds")].secret.secretName}')
  kubectl -n $NS get secret "$secret" -o jsonpath='{.data.clouds\.yaml}' | base64 -d >"$dir/clouds.yaml"
  chmod 600 "$dir/clouds.yaml"
  cloud=$(kubectl -n $NS get deploy verda-operator -o jsonpath='{.spec.template.spec.containers[0].env[?(@.name=="OS_CLOUD")].value}')
  operator_port=$("$PYTHON" "$ROOT/hack/free_port.py")
  local args=()
  mapfile -t args < <(kubectl -n $NS get deploy verda-operator -o jsonpath='{.spec.template.spec.containers[0].args}' |
    "$PYTHON" -c 'import json, sys
for a in json.load(sys.stdin):
    print(sys.argv[1] if a == "/etc/verda/config.yaml" else a)' "$dir/config.yaml")
  operator_log=$dir/operator.log
  log "operator (run $runs): ${args[*]} --listen 127.0.0.1:$operator_port, OS_CLOUD=$cloud"
  env -u VERDA_CONFIG -u KUBERNETES_SERVICE_HOST -u OS_CLIENT_CONFIG_FILE \
    KUBECONFIG="$dir/kubeconfig" OS_CLIENT_CONFIG_FILE="$dir/clouds.yaml" OS_CLOUD="$cloud" \
    POD_NAMESPACE=$NS POD_NAME="helm-check-$runs" \
    "$BIN" "${args[@]}" --listen "127.0.0.1:$operator_port" </dev/null >"$operator_log" 2>&1 &
  operator_pid=$!
}
stop_operator() {
  [[ -n $operator_pid ]] || return 0
  kill -TERM "$operator_pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$operator_pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL "$operator_pid" 2>/dev/null || true
  wait "$operator_pid" 2>/dev/null || true
  operator_pid=""
}
conditions() {
  kubectl get vm,vmg,lb -A -o jsonpath='{range .items[*]}{.kind} {.metadata.namespace}/{.metadata.name}:{range .status.conditions[*]} {.type}={.status} ({.reason}) {.message};{end}{"\n"}{end}' 2>&1 || true
}
on_exit() {
  local rc=$?
  if ((rc != 0)); then
    log "FAILED (exit $rc). The objects' conditions:"
    conditions >&2
    if [[ -n $operator_log && -f $operator_log ]]; then
      log "the last lines of the operator's log ($operator_log):"
      tail -n 40 "$operator_log" >&2
    fi
  fi
  stop_operator
  exit "$rc"
}
trap on_exit EXIT
trap 'log "failed at line $LINENO: $BASH_COMMAND"' ERR
fail() { log "FAILED: $*"; exit 1; }

# until_true SECONDS WHAT COMMAND...: polls COMMAND every 2 s; fails after SECONDS.
until_true() {
  local limit=$1 what=$2 start=$SECONDS
  shift 2
  until "$@"; do
    ((SECONDS - start < limit)) || fail "$what: not within $limit s"
    [[ -z $operator_pid ]] || kill -0 "$operator_pid" 2>/dev/null || fail "$what: the operator exited"
    sleep 2
  done
}
# ready KIND/NAME...: every object in $TEAM has Ready=True.
ready() {
  kubectl -n $TEAM wait --for=condition=Ready --timeout=60s "$@" >/dev/null
}
# The sum of the operator's verda_reconciles_total{controller="$1",result="success"}.
reconciles() {
  curl -fsS "http://127.0.0.1:$operator_port/metrics" 2>/dev/null |
    awk -v c="controller=\"$1\"" '/^verda_reconciles_total\{/ && index($0, c) && /result="success"/ { n += $NF } END { print n + 0 }'
}
# What the cloud holds: server, server group and load balancer IDs, one per line.
inventory() {
  os server list -f value -c ID | sort | sed 's/^/server /'
  os server group list -f value -c ID | sort | sed 's/^/server-group /'
  os loadbalancer list -f value -c id | sort | sed 's/^/load-balancer /'
}
# What the objects recorded: each VirtualMachine's server, the group's server group,
# the load balancer.
recorded() {
  kubectl -n $TEAM get vm -o jsonpath='{range .items[*]}{.metadata.name} {.status.serverID}{"\n"}{end}' | sort
  echo "group $(kubectl -n $TEAM get vmg $GROUP -o jsonpath='{.status.serverGroupID}')"
  echo "lb $(kubectl -n $TEAM get lb $LB -o jsonpath='{.status.loadBalancerID}')"
}
count() { grep -c "^$1 " <<<"$2" || true; }

t0=$SECONDS
# --- 1. lint, install --------------------------------------------------------------------
kubectl get crd virtualmachines.verda.linecorp.com >/dev/null 2>&1 &&
  fail "the cluster already has the CRDs: this needs a fresh kube-apiserver (hack/real-systems.sh, stage helm)"
[[ -z $(inventory) ]] ||
  fail "the demo project is not empty: this needs an empty one (hack/real-systems.sh, stage helm, purges it)"
helm lint --strict --quiet "$CHART" >"$WORK/lint.log" || { cat "$WORK/lint.log" >&2; fail "helm lint --strict"; }
log "helm lint --strict: ok ($(helm version --short))"

kubectl create namespace $NS >/dev/null
kubectl get namespace $TEAM >/dev/null
# The operator's credentials: the demo project's cloud under the chart's default name.
"$PYTHON" - "$CLOUDS" "$WORK/clouds.yaml" <<'PY'
import sys, yaml
clouds = yaml.safe_load(open(sys.argv[1]))["clouds"]
with open(sys.argv[2], "w") as f:
    yaml.safe_dump({"clouds": {"openstack": clouds["osh-demo"]}}, f)
PY
chmod 600 "$WORK/clouds.yaml"
kubectl -n $NS create secret generic verda-cloud --from-file=clouds.yaml="$WORK/clouds.yaml" >/dev/null
# A bad value stops helm install with the schema's words, before anything is installed.
if helm install verda-operator "$CHART" -n $NS --set mode=bogus >/dev/null 2>"$WORK/install-bad.log"; then
  fail "helm install --set mode=bogus installed: values.schema.json should refuse it"
fi
grep -qF "values don't meet the specifications of the schema" "$WORK/install-bad.log" &&
  grep -qF mode "$WORK/install-bad.log" ||
  { cat "$WORK/install-bad.log" >&2; fail "helm install --set mode=bogus failed without the schema's words"; }
[[ -z $(helm list -n $NS -q) ]] || fail "helm install --set mode=bogus left a release behind"
log "helm install --set mode=bogus: refused by the schema ($(grep -m1 -F "/mode" "$WORK/install-bad.log"))"
t_install=$SECONDS
helm install verda-operator "$CHART" -n $NS >"$WORK/install.log" ||
  { cat "$WORK/install.log" >&2; fail "helm install"; }
installed=$(helm get manifest verda-operator -n $NS | grep -c '^kind:')
log "helm install: $installed objects, $(kubectl get crd -o name | grep -c verda.linecorp.com) CRDs from crds/"

# --- 2. the operator, the published manifests ---------------------------------------------
start_operator
kubectl -n $TEAM apply -f "$MANIFESTS/virtualmachinegroup.yaml" -f "$MANIFESTS/loadbalancer.yaml" >/dev/null
group_ready() { [[ $(kubectl -n $TEAM get vmg $GROUP -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
lb_ready() { [[ $(kubectl -n $TEAM get lb $LB -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
until_true 240 "the published group Ready" group_ready
until_true 240 "the published LoadBalancer Ready" lb_ready
to_ready=$((SECONDS - t_install))
before_cloud=$(inventory)
before_objects=$(recorded)
log "install to Ready: $to_ready s; the cloud: $(count server "$before_cloud") servers, $(count server-group "$before_cloud") server groups, $(count load-balancer "$before_cloud") load balancers"
grep -q ' $' <<<"$before_objects" && fail "an object recorded no cloud ID: $before_objects"
for id in $(awk '{print $2}' <<<"$before_objects"); do
  grep -q " $id\$" <<<"$before_cloud" || fail "$id recorded by an object is not in the cloud: $before_cloud"
done

# --- 3. CRDs, then helm upgrade ---------------------------------------------------------------
crd=virtualmachines.verda.linecorp.com
columns() { kubectl get crd $crd -o jsonpath='{.spec.versions[0].additionalPrinterColumns[*].name}' | wc -w; }
crd_version() { kubectl get crd $crd -o jsonpath='{.metadata.labels.app\.kubernetes\.io/version}'; }
file_columns=$("$PYTHON" -c 'import sys, yaml; print(len(yaml.safe_load(open(sys.argv[1]))["spec"]["versions"][0]["additionalPrinterColumns"]))' \
  "$CHART/crds/verda.linecorp.com_virtualmachines.yaml")
# A CRD of an older release, as a cluster installed before this chart has it: one
# printer column less and an older version label.
kubectl get crd $crd -o json | "$PYTHON" -c 'import json, sys
crd = json.load(sys.stdin)
for v in crd["spec"]["versions"]:
    v["additionalPrinterColumns"] = v["additionalPrinterColumns"][:-1]
crd["metadata"]["labels"]["app.kubernetes.io/version"] = "0.0.0"
json.dump(crd, sys.stdout)' | kubectl replace -f - >/dev/null
helm upgrade verda-operator "$CHART" -n $NS --reuse-values >"$WORK/upgrade-1.log" ||
  { cat "$WORK/upgrade-1.log" >&2; fail "helm upgrade"; }
[[ $(columns) == $((file_columns - 1)) && $(crd_version) == 0.0.0 ]] ||
  fail "helm upgrade changed the CRD ($(columns) printer columns, version label $(crd_version)): Helm is documented not to"
log "helm upgrade left the older CRD as it was ($(columns) of $file_columns printer columns, version label 0.0.0)"
# The documented upgrade: the chart's CRDs first, then the release.
kubectl apply --server-side --force-conflicts -f "$CHART/crds/" >"$WORK/crds-apply.log"
[[ $(columns) == "$file_columns" && $(crd_version) == "$want_version" ]] ||
  fail "kubectl apply of crds/ left the CRD with $(columns) printer columns, version label $(crd_version)"
helm upgrade verda-operator "$CHART" -n $NS --reuse-values \
  --set extraLabels.team=platform --set config.resyncPeriod=1m >"$WORK/upgrade-2.log" ||
  { cat "$WORK/upgrade-2.log" >&2; fail "helm upgrade --reuse-values --set extraLabels.team=platform"; }
[[ $(kubectl -n $NS get deploy verda-operator -o jsonpath='{.spec.template.metadata.labels.team}') == platform ]] ||
  fail "the upgraded Deployment's pods lack the label team=platform"
kubectl -n $NS get configmap verda-operator-config -o jsonpath='{.data.config\.yaml}' | grep -q '^resyncPeriod: 1m$' ||
  fail "the upgraded ConfigMap does not say resyncPeriod: 1m"
[[ -n $(kubectl -n $TEAM get role verda-operator-secrets -o name) ]] || fail "the upgrade lost the Role in $TEAM"
log "kubectl apply of crds/ brought the CRD to $file_columns printer columns and version $want_version; helm upgrade: revision $(helm status verda-operator -n $NS -o json | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["version"])')"
# A rolled-out pod: the operator restarted with the upgraded configuration reconciles
# every object once at start.
stop_operator
start_operator
reconciled() {
  (($(reconciles virtualmachinegroup) >= 1 && $(reconciles loadbalancer) >= 1 && $(reconciles virtualmachine) >= 2))
}
until_true 120 "the restarted operator reconciling the group, its VirtualMachines and the LoadBalancer" reconciled
ready "vmg/$GROUP" "lb/$LB"
ready vm --all
after_cloud=$(inventory)
after_objects=$(recorded)
if [[ $after_cloud != "$before_cloud" || $after_objects != "$before_objects" ]]; then
  diff <(echo "$before_cloud"; echo "$before_objects") <(echo "$after_cloud"; echo "$after_objects") >&2 || true
  fail "the upgrade replaced cloud resources (above: before, after)"
fi
log "after the upgrade: the same $(count server "$after_cloud") servers, $(count server-group "$after_cloud") server group and $(count load-balancer "$after_cloud") load balancer, all Ready"

# --- 4. a namespace the chart does not list ---------------------------------------------
kubectl create namespace $UNLISTED >/dev/null
kubectl -n $UNLISTED create secret generic team-cloud --from-file=clouds.yaml="$WORK/clouds.yaml" >/dev/null
kubectl -n $UNLISTED apply -f - >/dev/null <<'YAML'
apiVersion: verda.linecorp.com/v1alpha1
kind: VirtualMachine
metadata:
  name: unlisted
spec:
  image: centos79
  flavor: n3-1vcpu-2gb
  cloudCredentialsRef: {secretName: team-cloud, cloudName: openstack}
YAML
refused() {
  local reason
  reason=$(kubectl -n $UNLISTED get vm unlisted -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')
  [[ $reason == CredentialsForbidden || $reason == CredentialsUnreadable ]]
}
until_true 60 "VirtualMachine $UNLISTED/unlisted refused its credentials Secret" refused
message=$(kubectl -n $UNLISTED get vm unlisted -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}')
log "$UNLISTED/unlisted: Ready=False, $message"
grep -qi forbidden <<<"$message" || log "note: that message does not say 'forbidden'"
ready "vmg/$GROUP" "lb/$LB"
[[ $(inventory) == "$after_cloud" ]] || fail "the cloud changed while $UNLISTED/unlisted was refused"
# Its finalizer stays while its credentials cannot be read (the operator cannot know
# what it holds in the cloud); removing it by hand abandons whatever that is.
if ! kubectl -n $UNLISTED delete vm unlisted --timeout=30s >/dev/null 2>&1; then
  log "deleting $UNLISTED/unlisted waits on its finalizer: $(kubectl -n $UNLISTED get vm unlisted -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
  kubectl -n $UNLISTED patch vm unlisted --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  log "removed its finalizer by hand"
fi

# --- 5. helm uninstall ----------------------------------------------------------------------
helm uninstall verda-operator -n $NS >"$WORK/uninstall.log" || { cat "$WORK/uninstall.log" >&2; fail "helm uninstall"; }
crds=$(kubectl get crd -o name | grep -c verda.linecorp.com || true)
chart_crds=$(find "$CHART/crds" -name '*.yaml' | wc -l)
((crds == chart_crds)) || fail "helm uninstall left $crds of the $chart_crds CRDs; Helm keeps crds/"
kept=$(kubectl -n $TEAM get vmg,lb,vm -o name | wc -l)
((kept == 4)) || fail "after helm uninstall $TEAM holds $kept custom objects, not the group, its 2 VirtualMachines and the LoadBalancer"
gone=(deploy/verda-operator serviceaccount/verda-operator configmap/verda-operator-config service/verda-operator-metrics
  pdb/verda-operator role/verda-operator-leader-election rolebinding/verda-operator-leader-election
  role/verda-operator-secrets rolebinding/verda-operator-secrets)
for o in "${gone[@]}"; do
  [[ -z $(kubectl -n $NS get "$o" -o name --ignore-not-found) ]] || fail "helm uninstall left $NS $o"
done
for o in role/verda-operator-secrets rolebinding/verda-operator-secrets; do
  [[ -z $(kubectl -n $TEAM get "$o" -o name --ignore-not-found) ]] || fail "helm uninstall left $TEAM $o"
done
for o in clusterrole/verda-operator clusterrolebinding/verda-operator clusterrole/verda-editor clusterrole/verda-viewer; do
  [[ -z $(kubectl get "$o" -o name --ignore-not-found) ]] || fail "helm uninstall left $o"
done
[[ -n $(kubectl -n $NS get secret verda-cloud -o name --ignore-not-found) ]] || fail "helm uninstall took the Secret verda-cloud, which it did not make"
[[ $(inventory) == "$after_cloud" ]] || fail "the cloud resources changed at helm uninstall"
log "helm uninstall: kept the $crds CRDs, the $kept custom objects in $TEAM, their cloud resources and the Secret verda-cloud; took the chart's ${#gone[@]} objects in $NS, the Role and RoleBinding in $TEAM and the 3 ClusterRoles and the ClusterRoleBinding"
stop_operator

# Installed again, the operator deletes the published objects and their cloud resources.
t_clean=$SECONDS
helm install verda-operator "$CHART" -n $NS >"$WORK/install-2.log" ||
  { cat "$WORK/install-2.log" >&2; fail "helm install (again)"; }
start_operator
kubectl -n $TEAM delete "lb/$LB" "vmg/$GROUP" --wait=false >/dev/null
no_objects() { [[ -z $(kubectl -n $TEAM get vmg,lb,vm -o name) ]]; }
until_true 180 "the published objects deleted" no_objects
until_true 120 "their cloud resources gone" eval '[[ -z $(inventory) ]]'
stop_operator
log "deleted the published objects and their $(count server "$after_cloud") servers, server group and load balancer in $((SECONDS - t_clean)) s"
log "SUMMARY helm: install to Ready $to_ready s; servers $(count server "$before_cloud") -> $(count server "$after_cloud"), server groups $(count server-group "$before_cloud") -> $(count server-group "$after_cloud"), load balancers $(count load-balancer "$before_cloud") -> $(count load-balancer "$after_cloud") across the upgrade (same IDs); unlisted namespace: ${message%%:*}; uninstall kept $crds CRDs and $kept objects; $((SECONDS - t0)) s in all"
