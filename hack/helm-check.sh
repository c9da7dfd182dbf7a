#!/usr/bin/env bash
# Checks the Helm chart charts/verda-operator against the kustomize sources it is copied
# from (hack/dist.sh --check checks the copies themselves):
#   - helm lint, also --strict, with the default values and with every option switched;
#   - rendered with ci/dist-values.yaml, the same objects as dist/install.yaml (less its
#     Namespace: the chart installs into one made by `helm install --create-namespace`),
#     the same spec, rules, data, roleRef and subjects once labels, annotations and
#     imagePullPolicy are set aside; crds/ the same CRDs as dist/install.yaml's;
#   - mode=shards: the Deployment of `kubectl kustomize config/shards`;
#   - monitoring on: the ServiceMonitor and PrometheusRule of config/prometheus and the
#     dashboard ConfigMap of config/grafana;
#   - the default values: no cluster-wide rule on Secrets or ConfigMaps, a Role and
#     RoleBinding verda-operator-secrets in the release namespace and in each listed
#     one, and the six app.kubernetes.io labels on every object and pod template;
#   - extraLabels, tolerations, nodeSelector, watchNamespace and allowOperatorCredentials
#     reach the objects;
#   - values.schema.json: a bad mode, a negative replica count, an unknown key (at the top
#     and in `config`) each stop helm with the schema's words naming the key; every key of
#     the configuration file docs/src/configuration.md shows passes;
#   - kubeVersion: Kubernetes 1.30 is refused, 1.31 (a provider's build too) is not.
# Installs Helm with ../shared/tools/get-helm.sh when it is not on PATH. Needs kubectl
# and python3 with PyYAML.
# Usage: hack/helm-check.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/.."
CHART=charts/verda-operator
# shellcheck source=hack/use-helm.sh
source "$HERE/use-helm.sh"
echo "$(helm version --short)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Lint: the warnings --strict turns into failures are those of a value or template
# that some combination reaches, so lint each.
helm lint --quiet "$CHART" >"$tmp/lint.log" 2>&1 || { cat "$tmp/lint.log"; exit 1; }
for set in "" "mode=shards" "secretAccess.clusterWide=true" \
  "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true" \
  "cloud.createSecret=true,cloud.cloudsYaml=clouds: {}" "podDisruptionBudget.enabled=false,affinity=null"; do
  helm lint --strict --quiet "$CHART" ${set:+--set "$set"} >"$tmp/lint.log" 2>&1 ||
    { echo "helm lint --strict --set '$set' failed:"; cat "$tmp/lint.log"; exit 1; }
done
echo "helm lint (also --strict, six value sets): ok"

render() { helm template "$@" >"$tmp/$1.yaml"; }
render dist "$CHART" -n verda-system -f "$CHART/ci/dist-values.yaml"
render shards "$CHART" -n verda-system -f "$CHART/ci/dist-values.yaml" --set mode=shards
render monitoring "$CHART" -n verda-system -f "$CHART/ci/dist-values.yaml" \
  --set metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true
render platform "$CHART" -n ops --set 'secretAccess.namespaces={team-a,team-b}'
render bare "$CHART" -n verda-system
render options "$CHART" -n verda-system --set extraLabels.team=platform \
  --set 'tolerations[0].key=node-role.kubernetes.io/control-plane,tolerations[0].effect=NoSchedule' \
  --set nodeSelector.pool=system,watchNamespace=team-a,allowOperatorCredentials=false,config.resyncPeriod=10m
# The schema: each bad value fails with Helm's words for a schema violation and every
# given word (the key, and the rule's, as Helm 3 and 4 both print them).
refused() {
  local set=$1 word
  shift
  if helm template "$CHART" -n verda-system --set "$set" >/dev/null 2>"$tmp/schema.log"; then
    echo "helm template --set '$set' rendered: values.schema.json should refuse it" >&2
    exit 1
  fi
  for word in "values don't meet the specifications of the schema" "$@"; do
    grep -qiF -- "$word" "$tmp/schema.log" ||
      { echo "helm template --set '$set': no \"$word\" in its error:" >&2; cat "$tmp/schema.log" >&2; exit 1; }
  done
}
refused mode=bogus mode leaderElected shards
refused replicaCount=-1 replicaCount
refused shards.replicaCount=-1 replicaCount
refused replicas=3 "additional propert" replicas
refused config.resyncPeriods=5m "additional propert" resyncPeriods
refused config.requestBudget.burst=0 burst
# Every key of the configuration file as docs/src/configuration.md shows it, the
# commented ones (clusterName, defaultCloudName) too.
awk '/^## The configuration file/ { doc = 1 } doc && /^```yaml$/ { inside = 1; next }
  inside && /^```$/ { exit } inside' docs/src/configuration.md |
  sed -E 's/^( {0,4})# ([A-Za-z]+:)/\1\2/; s/^/  /; 1i config:' >"$tmp/documented-config.yaml"
grep -q clusterName "$tmp/documented-config.yaml" ||
  { echo "no configuration file example in docs/src/configuration.md" >&2; exit 1; }
render documented "$CHART" -n verda-system -f "$tmp/documented-config.yaml" \
  --set podDisruptionBudget.minAvailable=50%,logFormat=text,imagePullSecrets={regcred}
echo "values.schema.json: bad mode, replica counts and unknown keys refused; the documented configuration passes"
# kubeVersion: the oldest Kubernetes that takes the CRDs' CEL rules (hack/dist.sh says why).
if helm template "$CHART" --kube-version 1.30.14 >/dev/null 2>"$tmp/kube.log" ||
  ! grep -q "chart requires kubeVersion" "$tmp/kube.log"; then
  echo "kubeVersion: Kubernetes 1.30 not refused:" >&2; cat "$tmp/kube.log" >&2; exit 1
fi
for v in 1.31.0 v1.31.4-gke.1 1.36.0; do
  helm template "$CHART" --kube-version "$v" >/dev/null
done
echo "kubeVersion: $(sed -n 's/^kubeVersion: //p' "$CHART/Chart.yaml") (1.30 refused; 1.31, 1.31-gke, 1.36 taken)"
kubectl kustomize config/shards >"$tmp/kustomize-shards.yaml"
kubectl kustomize config/prometheus >"$tmp/kustomize-prometheus.yaml"
kubectl kustomize config/grafana >"$tmp/kustomize-grafana.yaml"

python3 - "$tmp" "$CHART" <<'PY'
import copy, difflib, glob, os, sys
import yaml

tmp, chart = sys.argv[1], sys.argv[2]
failures = []


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def key(o):
    m = o["metadata"]
    return (o["kind"], m.get("namespace", ""), m["name"])


def index(docs):
    out = {}
    for o in docs:
        if key(o) in out:
            failures.append(f"{key(o)} rendered twice")
        out[key(o)] = o
    return out


STANDARD = ("app.kubernetes.io/", "helm.sh/")
# The configuration's defaults that dist/install.yaml leaves implicit and the chart
# writes out (the credentials policy).
CONFIG_DEFAULTS = {"credentials": {"allowOperatorCredentials": True}}


def merge_defaults(config, defaults):
    for k, v in defaults.items():
        if isinstance(v, dict):
            merge_defaults(config.setdefault(k, {}), v)
        else:
            config.setdefault(k, v)
    return config


def normalize(o):
    """What must be equal: labels that are not the standard ones (e.g. aggregation),
    selector labels on pod templates, everything outside metadata; the configuration
    file parsed."""
    o = copy.deepcopy(o)
    m = o["metadata"]
    labels = {k: v for k, v in (m.get("labels") or {}).items() if not k.startswith(STANDARD)}
    o["metadata"] = {"name": m["name"], "namespace": m.get("namespace", ""), "labels": labels}
    template = (o.get("spec") or {}).get("template")
    if template:
        selector = o["spec"]["selector"]["matchLabels"]
        template["metadata"] = {
            "labels": {k: v for k, v in template["metadata"].get("labels", {}).items() if k in selector}
        }
        for c in template["spec"]["containers"]:
            c.pop("imagePullPolicy", None)
    if o["kind"] == "ConfigMap" and "config.yaml" in (o.get("data") or {}):
        o["data"]["config.yaml"] = merge_defaults(yaml.safe_load(o["data"]["config.yaml"]) or {}, CONFIG_DEFAULTS)
    return o


def dump(o):
    return yaml.safe_dump(o, sort_keys=True, width=1000).splitlines()


def same(what, want, got):
    a, b = normalize(want), normalize(got)
    if a != b:
        diff = "\n".join(difflib.unified_diff(dump(a), dump(b), what + " (kustomize)", what + " (chart)", lineterm=""))
        failures.append(f"{what} differs:\n{diff}")


def compare(name, want_docs, got_docs, skip=lambda k: False):
    want = {k: v for k, v in index(want_docs).items() if not skip(k)}
    got = index(got_docs)
    for k in sorted(set(want) - set(got)):
        failures.append(f"{name}: the chart renders no {k}")
    for k in sorted(set(got) - set(want)):
        failures.append(f"{name}: the chart renders {k}, which kustomize has not")
    for k in sorted(set(want) & set(got)):
        same(f"{name} {k[0]} {k[1]}/{k[2]}", want[k], got[k])
    return len(set(want) & set(got))


# 1. dist/install.yaml: everything but the Namespace; its CRDs against crds/.
dist = load("dist/install.yaml")
crds = [o for o in dist if o["kind"] == "CustomResourceDefinition"]
n = compare("dist/install.yaml", dist, load(f"{tmp}/dist.yaml"),
            skip=lambda k: k[0] in ("Namespace", "CustomResourceDefinition"))
chart_crds = [d for f in sorted(glob.glob(f"{chart}/crds/*.yaml")) for d in load(f)]
n += compare("dist/install.yaml CRDs vs crds/", crds, chart_crds)
version = yaml.safe_load(open(f"{chart}/Chart.yaml"))["appVersion"]
# Helm installs crds/ untemplated: the labels that hold for any release.
crd_labels = {"app.kubernetes.io/name": "verda-operator", "app.kubernetes.io/part-of": "verda-operator",
              "app.kubernetes.io/version": version, "app.kubernetes.io/component": "crd"}
for o in chart_crds:
    if o["metadata"].get("labels") != crd_labels:
        failures.append(f"crds/: {o['metadata']['name']} has labels {o['metadata'].get('labels')}, want {crd_labels}")
print(f"dist/install.yaml: {n} objects the same in the chart (CRDs from crds/)")

# 2. mode=shards: the Deployment of config/shards.
deploy = lambda docs: [o for o in docs if o["kind"] == "Deployment"]
compare("config/shards", deploy(load(f"{tmp}/kustomize-shards.yaml")), deploy(load(f"{tmp}/shards.yaml")))
print("mode=shards: the Deployment of config/shards")

# 3. Monitoring: config/prometheus and config/grafana.
monitoring = [o for o in load(f"{tmp}/monitoring.yaml")
              if o["kind"] in ("ServiceMonitor", "PrometheusRule") or o["metadata"]["name"] == "verda-operator-dashboard"]
want = load(f"{tmp}/kustomize-prometheus.yaml") + load(f"{tmp}/kustomize-grafana.yaml")
n = compare("config/prometheus, config/grafana", want, monitoring)
print(f"monitoring: {n} objects the same as config/prometheus and config/grafana")

# 4. The default values (release `platform` in namespace ops, two team namespaces).
platform = load(f"{tmp}/platform.yaml")
objects = index(platform)
for o in platform:
    if o["kind"] == "ClusterRole":
        for rule in o["rules"]:
            if {"secrets", "configmaps"} & set(rule.get("resources", [])):
                failures.append(f"default values: ClusterRole {o['metadata']['name']} reads {rule['resources']} cluster-wide")
for ns in ("ops", "team-a", "team-b"):
    role = objects.get(("Role", ns, "verda-operator-secrets"))
    binding = objects.get(("RoleBinding", ns, "verda-operator-secrets"))
    if not role or not binding:
        failures.append(f"default values: no Role and RoleBinding verda-operator-secrets in {ns}")
        continue
    granted = {(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    wanted = {(r, v) for r in ("secrets", "configmaps") for v in ("get", "list", "watch")}
    if granted != wanted:
        failures.append(f"default values: Role {ns}/verda-operator-secrets grants {sorted(granted)}")
    if binding["subjects"] != [{"kind": "ServiceAccount", "name": "verda-operator", "namespace": "ops"}]:
        failures.append(f"default values: RoleBinding {ns}/verda-operator-secrets binds {binding['subjects']}")
# Nothing set at all: Secrets in the release namespace and `default`, where kubectl
# applies the published manifests.
bare = index(load(f"{tmp}/bare.yaml"))
for ns in ("verda-system", "default"):
    if ("Role", ns, "verda-operator-secrets") not in bare:
        failures.append(f"no values set: no Role verda-operator-secrets in {ns}")
COMPONENTS = {"crd", "rbac", "controller", "monitoring"}


def check_labels(where, labels, extra=None):
    want = {"app.kubernetes.io/name": "verda-operator", "app.kubernetes.io/instance": "platform",
            "app.kubernetes.io/version": version, "app.kubernetes.io/part-of": "verda-operator",
            "app.kubernetes.io/managed-by": "Helm", **(extra or {})}
    wrong = {k: labels.get(k) for k, v in want.items() if labels.get(k) != v}
    if labels.get("app.kubernetes.io/component") not in COMPONENTS:
        wrong["app.kubernetes.io/component"] = labels.get("app.kubernetes.io/component")
    if wrong:
        failures.append(f"{where}: labels {wrong}, want {want} and a component of {sorted(COMPONENTS)}")


for o in platform:
    check_labels(f"default values: {key(o)}", o["metadata"].get("labels") or {})
    template = (o.get("spec") or {}).get("template")
    if template:
        check_labels(f"default values: pod template of {key(o)}", template["metadata"].get("labels") or {})
print(f"default values: {len(platform)} objects labelled, Secrets and ConfigMaps read in ops, team-a, team-b only")

# 5. Options reach the objects.
options = load(f"{tmp}/options.yaml")
for o in options:
    labels = o["metadata"].get("labels") or {}
    if labels.get("team") != "platform":
        failures.append(f"extraLabels: {key(o)} has no label team=platform")
(d,) = deploy(options)
pod = d["spec"]["template"]["spec"]
if d["spec"]["template"]["metadata"]["labels"].get("team") != "platform":
    failures.append("extraLabels: not on the pod template")
if pod.get("tolerations") != [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]:
    failures.append(f"tolerations: {pod.get('tolerations')}")
if pod.get("nodeSelector") != {"pool": "system"}:
    failures.append(f"nodeSelector: {pod.get('nodeSelector')}")
args = pod["containers"][0]["args"]
if args[-2:] != ["--namespace", "team-a"]:
    failures.append(f"watchNamespace: args {args}")
config = [o for o in options if o["kind"] == "ConfigMap"][0]
parsed = yaml.safe_load(config["data"]["config.yaml"])
if parsed["credentials"] != {"allowOperatorCredentials": False} or parsed["resyncPeriod"] != "10m" \
        or parsed["defaults"] != {"networks": ["private"]}:
    failures.append(f"config: {parsed}")
print("extraLabels, tolerations, nodeSelector, watchNamespace, allowOperatorCredentials, config: reach the objects")

if failures:
    print("\nFAILED:", file=sys.stderr)
    for f in failures:
        print("- " + f, file=sys.stderr)
    sys.exit(1)
PY
echo "Helm chart: same objects as dist/install.yaml, config/shards, config/prometheus and config/grafana"
