#!/usr/bin/env python3
"""Fleet-size benchmark: G groups of R VirtualMachines, each behind its own 2-port
LoadBalancer, applied with kubectl to the test API server (or the cluster of
KUBECONFIG with VERDA_BENCH_REAL_CLUSTER=1), run by the release operator binary against
`verda-operator simulate` at zero delay.

Prints, per fleet size: time from `kubectl apply` to converged (every group Ready with
R replicas, every LoadBalancer Ready with R members in both pools), cloud calls to
converge (total, per VM, by operation), the operator's peak RSS and its anonymous
memory (the heap) at convergence, and cloud calls per
resync period once idle (and how many of them were writes). Figures come from the
operator's own /metrics (verda_cloud_requests_total) and /proc/PID/status.

Run through hack/bench-fleet.sh, which builds the release binaries first.
"""

import base64
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from free_port import free_port

TARGET = os.environ.get("CARGO_TARGET_DIR", "target")
OPERATOR = os.path.join(TARGET, "release", "verda-operator")
APISERVER = os.path.join(TARGET, "release", "verda-test-apiserver")
RESYNC = int(os.environ.get("VERDA_BENCH_RESYNC_SECS", "30"))
IDLE_PERIODS = int(os.environ.get("VERDA_BENCH_IDLE_PERIODS", "3"))
REPLICAS = int(os.environ.get("VERDA_BENCH_REPLICAS", "10"))
LIMIT = int(os.environ.get("VERDA_BENCH_LIMIT_SECS", "600"))
# requestBudget of the operator: "RATE/BURST"; unset, a budget no fleet reaches, so the
# figures show the operator's own pace (the 20/s of docs/src/development/fleet-size.md is a separate run).
BUDGET = os.environ.get("VERDA_BENCH_BUDGET", "100000/100000")
# The simulator's pace: every request held this long ("0.2s"), a server's BUILD this long
# ("5s"); Octavia's PENDING_* stays at zero.
LATENCY = os.environ.get("VERDA_BENCH_LATENCY", "0s")
BUILD = os.environ.get("VERDA_BENCH_BUILD", "0s")
# The operator's cap on requests on the wire at once, per cloud client.
CONCURRENCY = 16
# "1": a single VirtualMachine of another namespace (the simulator's second project) is
# timed to Ready alone, then again while the fleet is being created.
FAIRNESS = os.environ.get("VERDA_BENCH_FAIRNESS") == "1"
# A command the operator runs under, e.g. "heaptrack -o /tmp/fleet" with a binary built
# `--no-default-features` (heap by allocation site); peak RSS is then the wrapper's.
WRAP = shlex.split(os.environ.get("VERDA_BENCH_OPERATOR_WRAP", ""))
# A file to write the operator's RSS to every 2 s ("seconds MB" per line, from its start):
# where in a run the peak comes.
RSS_TRACE = os.environ.get("VERDA_BENCH_RSS_TRACE")
# "1": every replica on a declared port (`template.ports` on the seeded `private`
# network): what declared ports cost in calls, against a run without.
PORTS = os.environ.get("VERDA_BENCH_PORTS") == "1"
# Every group spread over the simulator's three availability zones.
ZONES = os.environ.get("VERDA_BENCH_ZONES") == "1"
# Every LoadBalancer with every listener, pool and monitor option, its group's members
# weighted (a one-group split).
LB_OPTIONS = os.environ.get("VERDA_BENCH_LB_OPTIONS") == "1"
# "1": a DNSZone `fleet.test.` made first, every group named in it (`group-<i>` for its
# serving replicas, `group-<i>-<n>` per replica) and every LoadBalancer (`lb-<i>`).
DNS = os.environ.get("VERDA_BENCH_DNS") == "1"
# Every group autoscaled on its LoadBalancer's port-80 listener (the simulator counts no
# connections: each stays at minReplicas = the group size): the autoscaler's own cost.
AUTOSCALE = os.environ.get("VERDA_BENCH_AUTOSCALE") == "1"
# "1": every replica in a SecurityGroup fed by another group: SecurityGroup `tier-<j>`
# takes 5432 from the replicas of group `group-<10j>` (an address group kept in step
# with them) and is what the groups `group-<10j+1..10j+10>` boot in (one tier per ten
# groups, as a fleet of tiers would have).
SECURITY_GROUPS = os.environ.get("VERDA_BENCH_SG") == "1"
TIER = 10
DNS_ZONE = "fleet.test."
CONFIRM_SECS = 5
WRITE = re.compile(r"^(create|delete|update|replace|set|resize|confirm|add|remove)_")


def kubectl(env, *args):
    done = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def wait_for(what, check, limit, every=0.5):
    deadline = time.monotonic() + limit
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {limit} s waiting for {what}")
        time.sleep(every)


class Processes:
    """Starts what the run needs and stops it, by PID, however the run ends."""

    def __init__(self):
        self.started = []

    def start(self, args, **kwargs):
        # A session of its own: a wrapper's child (heaptrack's) is stopped with it.
        proc = subprocess.Popen(args, start_new_session=True, **kwargs)
        self.started.append(proc)
        return proc

    def stop(self):
        for proc in reversed(self.started):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)


def tiers(groups, namespace):
    """The fleet's SecurityGroups (VERDA_BENCH_SG=1)."""
    return [{
        "apiVersion": "verda.linecorp.com/v1alpha1",
        "kind": "SecurityGroup",
        "metadata": {"name": f"tier-{j}", "namespace": namespace},
        "spec": {"rules": [{"direction": "ingress", "protocol": "tcp", "ports": "5432",
                            "from": {"virtualMachineGroup": f"group-{(j * TIER) % groups}"}}]},
    } for j in range((groups + TIER - 1) // TIER)]


def manifests(groups, namespace):
    docs = tiers(groups, namespace) if SECURITY_GROUPS else []
    for i in range(groups):
        docs.append({
            "apiVersion": "verda.linecorp.com/v1alpha1",
            "kind": "VirtualMachineGroup",
            "metadata": {"name": f"group-{i}", "namespace": namespace},
            "spec": {
                "replicas": REPLICAS,
                "haPolicy": "soft",
                **({"zones": {"names": ["az-1", "az-2", "az-3"]}} if ZONES else {}),
                **({"dns": [{"zone": DNS_ZONE, "name": f"group-{i}", "ttl": 30,
                             "perReplica": True}]} if DNS else {}),
                **({"autoscaling": {
                    "minReplicas": REPLICAS, "maxReplicas": REPLICAS + 10,
                    "metrics": [{"loadBalancer": {
                        "name": f"lb-{i}", "port": 80,
                        "target": {"activeConnectionsPerReplica": 100}}}]}} if AUTOSCALE else {}),
                "template": {"image": "centos79", "flavor": "n3-1vcpu-2gb",
                             "initScript": {"value": "ls"},
                             **({"ports": [{"network": "private"}]} if PORTS else {}),
                             **({"securityGroups": [f"tier-{max(i - 1, 0) // TIER}"]}
                                if SECURITY_GROUPS else {})},
            },
        })
        ports = []
        for port, protocol in ((80, "http"), (443, "https")):
            ports.append({
                "port": port, "protocol": protocol,
                "realServers": {"protocol": protocol, "port": port,
                                "virtualMachineGroupRef": f"group-{i}"},
                "monitors": [{"protocol": protocol, "port": port,
                              "endpoint": "/health/alive"}],
            })
        if LB_OPTIONS:
            every_option(ports, f"group-{i}")
        docs.append({
            "apiVersion": "verda.linecorp.com/v1alpha1",
            "kind": "LoadBalancer",
            "metadata": {"name": f"lb-{i}", "namespace": namespace},
            "spec": {"region": "tokyo1", "zone": "dev", "vipType": "private",
                     "serviceType": "generic", "ports": ports,
                     **({"dns": [{"zone": DNS_ZONE, "name": f"lb-{i}"}]} if DNS else {})},
        })
    # One YAML stream, as a user's manifest file: each document in flow style
    # (kubectl reads a stream whose first document looks like JSON as JSON only).
    return "".join(f"---\n{flow(d)}\n" for d in docs)


def every_option(ports, group):
    """Gives both ports every listener, pool and monitor option."""
    for p in ports:
        p["timeouts"] = {"clientData": "40s", "memberConnect": "3s",
                         "memberData": "1m", "tcpInspect": "0s"}
        p["connectionLimit"] = 10000
        p["allowedCIDRs"] = ["10.0.0.0/8"]
        rs = p["realServers"]
        del rs["virtualMachineGroupRef"]
        rs["groups"] = [{"name": group, "weight": 5}]
        p["monitors"][0].update({"maxRetriesDown": 2, "delaySeconds": 7,
                                 "timeoutSeconds": 4, "maxRetries": 2})
    http, https = ports
    http["insertHeaders"] = {"X-Forwarded-For": True, "X-Forwarded-Proto": True}
    http["realServers"].update({"protocol": "proxy", "algorithm": "least-connections",
                                "sessionPersistence": {"type": "app-cookie",
                                                       "cookieName": "sid"}})
    http["monitors"][0].update({"httpMethod": "HEAD", "expectedCodes": "200-204"})
    https["realServers"].update({"protocol": "tcp", "algorithm": "source-ip",
                                 "sessionPersistence": {"type": "source-ip"}})


def flow(value):
    """A value as a YAML flow node (strings quoted as JSON, which YAML accepts)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return json.dumps(value)


def ready(obj):
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def dns_zone(env, workdir, namespace):
    """Applies the fleet's DNSZone and waits until Designate serves it."""
    path = os.path.join(workdir, "zone.yaml")
    with open(path, "w") as f:
        f.write(flow({"apiVersion": "verda.linecorp.com/v1alpha1", "kind": "DNSZone",
                      "metadata": {"name": "fleet", "namespace": namespace},
                      "spec": {"name": DNS_ZONE, "email": "hostmaster@fleet.test"}}))
    kubectl(env, "apply", "-f", path)
    wait_for("the DNSZone to be Ready", lambda: ready(json.loads(kubectl(
        env, "get", "dnsz", "fleet", "-n", namespace, "-o", "json"))), 60, 0.5)


def names_settled(env, namespace):
    """Every name of every VirtualMachine, group and LoadBalancer ACTIVE in Designate."""
    out = kubectl(env, "get", "vm,vmg,lb", "-n", namespace, "-o", "json")
    rows = [row for o in json.loads(out)["items"]
            for row in (o.get("status") or {}).get("dns") or []]
    return rows and all(row.get("status") == "ACTIVE" for row in rows)


def converged(env, groups, namespace):
    if DNS and not names_settled(env, namespace):
        return False
    out = kubectl(env, "get", "vmg,lb", "-n", namespace, "-o", "json")
    items = json.loads(out)["items"]
    vmgs = [o for o in items if o["kind"] == "VirtualMachineGroup"]
    lbs = [o for o in items if o["kind"] == "LoadBalancer"]
    done_groups = [g for g in vmgs
                   if (g.get("status") or {}).get("readyReplicas") == REPLICAS]
    done_lbs = [lb for lb in lbs if ready(lb) and len((lb.get("status") or {}).get("ports") or []) == 2
                and all(len(p.get("members") or []) == REPLICAS for p in lb["status"]["ports"])]
    return len(done_groups) == groups and len(done_lbs) == groups


def metrics_say_converged(metrics_url, groups):
    """The operator's own gauges: every replica Ready, every LoadBalancer Active with
    all its members. Cheap to poll (no kubectl process), confirmed by kubectl after."""
    text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    ready = full = active = 0
    for line in text.splitlines():
        if line.startswith("verda_group_ready_replicas{"):
            ready += int(float(line.rsplit(" ", 1)[1]))
        elif line.startswith("verda_load_balancer_members{"):
            full += int(float(line.rsplit(" ", 1)[1])) == 2 * REPLICAS
        elif line.startswith('verda_managed_objects{kind="loadbalancer",state="Active"}'):
            active = int(float(line.rsplit(" ", 1)[1]))
    return ready == groups * REPLICAS and full == groups and active == groups


def cloud_calls(metrics_url):
    text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    calls = {}
    for line in text.splitlines():
        if not line.startswith("verda_cloud_requests_total{"):
            continue
        labels, value = line.rsplit(" ", 1)
        op = re.search(r'operation="([^"]*)"', labels).group(1)
        service = re.search(r'service="([^"]*)"', labels).group(1)
        key = f"{service}/{op}"
        calls[key] = calls.get(key, 0) + int(float(value))
    return calls


def delta(after, before):
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0) > 0}


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid):
    """CPU time the process has used (user + system), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        # Fields after the command (in parentheses, which may hold spaces): utime is
        # the 14th field, stime the 15th.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def resident_mb(pid):
    """The process's resident memory as anonymous (its heap, stacks) and file-backed
    (its binary's pages, shared by every replica on a node)."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                fields[parts[0].rstrip(":")] = int(parts[1]) / 1024
    return {"anon": round(fields.get("Anonymous", 0), 1),
            "file": round(fields.get("Rss", 0) - fields.get("Anonymous", 0), 1)}


def trace_rss(pid, path):
    """Samples the operator's RSS, then its anonymous and file-backed parts, into `path`
    every 2 s until it exits."""
    def sample():
        started = time.monotonic()
        with open(path, "w") as out:
            while True:
                try:
                    with open(f"/proc/{pid}/status") as f:
                        kb = {l.split(":")[0]: int(l.split()[1]) for l in f
                              if l.startswith(("VmRSS:", "RssAnon:", "RssFile:"))}
                    rss, anon, file = kb["VmRSS"], kb["RssAnon"], kb["RssFile"]
                except (OSError, KeyError):
                    return
                out.write(f"{time.monotonic() - started:.0f} {rss / 1024:.1f} "
                          f"{anon / 1024:.1f} {file / 1024:.1f}\n")
                out.flush()
                time.sleep(2)
    threading.Thread(target=sample, daemon=True).start()


def start_apiserver(procs, workdir, tag, history):
    """The test API server; returns its kubeconfig."""
    kubeconfig = os.path.join(workdir, f"kubeconfig-{tag}")
    procs.start([APISERVER, "--kubeconfig", kubeconfig, "--history-limit", str(history)],
                stdout=subprocess.DEVNULL)
    wait_for("the test API server", lambda: os.path.exists(kubeconfig)
             and os.path.getsize(kubeconfig) > 0, 30, 0.1)
    return kubeconfig


def start_simulator(procs, workdir, tag, quota, tenants=0):
    """`verda-operator simulate`; returns its clouds.yaml (cloud verda-sim) and the
    second project's. With `tenants`, each tenant's clouds.yaml is written as
    `tenant-clouds-<tag>/tenant-<i>.yaml` (see `tenant_clouds`)."""
    sim_port = free_port()
    team_clouds = os.path.join(workdir, f"team-clouds-{tag}.yaml")
    tenant_dir = tenant_clouds(workdir, tag)
    os.makedirs(tenant_dir, exist_ok=True)
    sim = procs.start([OPERATOR, "simulate", "--listen", f"127.0.0.1:{sim_port}", "--delay", "0",
                       "--sim-instance-quota", str(quota),
                       "--sim-hosts", str(max(3, REPLICAS)),
                       "--sim-latency", LATENCY, "--sim-build-delay", BUILD,
                       "--team-clouds", team_clouds,
                       "--sim-tenants", str(tenants), "--tenant-clouds", tenant_dir],
                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    clouds = []
    for line in sim.stdout:
        if line.startswith("#"):
            continue
        clouds.append(line)
        # The file ends with the second cloud entry's last key.
        if sum("identity_api_version" in c for c in clouds) == 2 or len(clouds) > 60:
            break
    clouds_file = os.path.join(workdir, f"clouds-{tag}.yaml")
    with open(clouds_file, "w") as f:
        f.write("".join(clouds))
    subprocess.Popen(["cat"], stdin=sim.stdout, stdout=subprocess.DEVNULL)
    return clouds_file, team_clouds


def run(groups, workdir):
    ns = f"bench-{os.getpid()}-{groups}"
    procs = Processes()
    try:
        env = dict(os.environ)
        real_cluster = os.environ.get("VERDA_BENCH_REAL_CLUSTER") == "1"
        if not real_cluster:
            # A watch history of 20 changes per object, so a paginated list of a large
            # fleet outlives the churn as on a real API server (the default 10,000 does
            # not at 10,000 VMs: the operator's watches relist in a loop).
            history = max(10_000, groups * (REPLICAS + 1) * 20)
            env["KUBECONFIG"] = start_apiserver(procs, workdir, str(groups), history)
        clouds_file, team_clouds = start_simulator(procs, workdir, str(groups),
                                                   groups * REPLICAS * 2)
        config_file = os.path.join(workdir, "operator.yaml")
        with open(config_file, "w") as f:
            rate, burst = BUDGET.split("/")
            f.write(f"resyncPeriod: {RESYNC}s\n")
            f.write(f"requestBudget: {{requestsPerSecond: {rate}, burst: {burst}}}\n")
            # The second project's Secret names its cloud by this.
            f.write("credentials: {defaultCloudName: verda-sim}\n")
        listen = f"127.0.0.1:{free_port()}"
        metrics_url = f"http://{listen}/metrics"
        operator_env = dict(env, OS_CLIENT_CONFIG_FILE=clouds_file, OS_CLOUD="verda-sim",
                            RUST_LOG=os.environ.get("RUST_LOG", "warn"))
        namespace = os.path.join(workdir, "namespace.json")
        with open(namespace, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, f)
        kubectl(env, "apply", "-f", namespace)
        # Fairness needs a second namespace: then the operator watches them all.
        scope = [] if FAIRNESS else ["--namespace", ns]
        operator = procs.start([*WRAP, OPERATOR, "run", "--listen", listen, "--config", config_file,
                                *scope, "--leader-elect=false"],
                               env=operator_env, stderr=open(os.path.join(workdir, f"operator-{groups}.log"), "w"))
        wait_for("the operator's /metrics", lambda: _reachable(metrics_url), 30, 0.2)
        if RSS_TRACE:
            trace_rss(operator.pid, RSS_TRACE)
        manifest = os.path.join(workdir, f"fleet-{groups}.yaml")
        with open(manifest, "w") as f:
            f.write(manifests(groups, ns))
        fairness = {}
        if FAIRNESS:
            other = f"{ns}-other"
            second_project(env, workdir, other, team_clouds)
            fairness["alone_secs"] = probe(env, workdir, other, "probe-alone")
        if DNS:
            dns_zone(env, workdir, ns)
        before = cloud_calls(metrics_url)
        cpu_before = cpu_seconds(operator.pid)
        started = time.monotonic()
        kubectl(env, "apply", "-f", manifest)
        applied = time.monotonic() - started
        if FAIRNESS:
            fairness["during_fleet_secs"] = probe(env, workdir, other, "probe-during-fleet")
            fairness["fleet_ready_vms_then"] = ready_vms(metrics_url)
            fairness["ratio"] = round(fairness["during_fleet_secs"] / fairness["alone_secs"], 2)
        # Every poll has the operator encode its whole /metrics page (per-object series):
        # a second apart at fleet size, so the measurement does not load what it measures.
        wait_for(f"{groups} groups and LoadBalancers to converge",
                 lambda: metrics_say_converged(metrics_url, groups), LIMIT,
                 max(0.25, min(1.0, groups / 500)))
        elapsed = time.monotonic() - started
        cpu_converge = cpu_seconds(operator.pid) - cpu_before
        at_convergence = resident_mb(operator.pid)
        wait_for("kubectl to show the fleet converged",
                 lambda: converged(env, groups, ns), 60, 1)
        # Each LoadBalancer confirms its tree once more 3 s after its last write (when a
        # listing of the cloud view can vouch for it from then on): part of converging.
        time.sleep(CONFIRM_SECS)
        converge = delta(cloud_calls(metrics_url), before)
        # Idle: every period from convergence on, each counted on its own, the first
        # included (a burst right after a large change is a cost too).
        periods = []
        previous = cloud_calls(metrics_url)
        cpu_idle_start, idle_start = cpu_seconds(operator.pid), time.monotonic()
        for _ in range(IDLE_PERIODS):
            time.sleep(RESYNC)
            now = cloud_calls(metrics_url)
            periods.append(delta(now, previous))
            previous = now
        cpu_idle = cpu_seconds(operator.pid) - cpu_idle_start
        idle_wall = time.monotonic() - idle_start
        vms = groups * REPLICAS
        total = sum(converge.values())
        lb_calls = sum(v for k, v in converge.items() if k.startswith("load-balancer/"))
        idle_writes = sum(v for idle in periods for k, v in idle.items()
                          if WRITE.match(k.split("/", 1)[1]))
        result = {
            "groups": groups, "vms": vms, "lbs": groups,
            "converge_secs": round(elapsed, 1), "apply_secs": round(applied, 1),
            "calls": total,
            "calls_per_vm": round((total - lb_calls) / vms, 2),
            "calls_per_lb": round(lb_calls / groups, 2),
            "peak_rss_mb": round(peak_rss_mb(operator.pid), 1),
            # CPU: seconds used from apply to converged, and the mean rate once idle
            # (millicores, the unit of a Deployment's CPU request).
            "cpu_secs_to_converge": round(cpu_converge, 1),
            "cpu_mean_millicores_converging": round(1000 * cpu_converge / elapsed),
            "cpu_idle_millicores": round(1000 * cpu_idle / idle_wall, 1),
            # The heap the fleet costs: the memory goals are read from this, not RSS.
            "anon_mb_at_convergence": at_convergence["anon"],
            "file_mb_at_convergence": at_convergence["file"],
            "idle_calls": [sum(p.values()) for p in periods], "idle_writes": idle_writes,
            "by_operation": dict(sorted(converge.items(), key=lambda kv: -kv[1])),
            "idle_by_operation": periods,
        }
        if LATENCY != "0s" or BUILD != "0s":
            latency, build = seconds(LATENCY), seconds(BUILD)
            bound = build + (total * latency / CONCURRENCY) * 1.5
            result["latency_bound_secs"] = round(bound, 1)
        if fairness:
            result["fairness"] = fairness
        print("FLEET " + json.dumps(result), flush=True)
        if WRAP:
            # Killed outright, so the wrapper records what the settled fleet holds
            # (a graceful stop frees it all first).
            subprocess.run(["pkill", "-KILL", "-s", str(operator.pid), "-x", "verda-operator"])
            operator.wait(300)
        if real_cluster:
            # Leave the cluster as found: the operator deletes what it made.
            kubectl(env, "delete", "lb,vmg", "--all", "-n", ns, "--wait=false")
            wait_for("the fleet to be deleted", lambda: not kubectl(
                env, "get", "vm,vmg,lb", "-n", ns, "-o", "name").strip(), LIMIT, 2)
            kubectl(env, "delete", "namespace", ns, "--wait=false")
        return result
    finally:
        procs.stop()


def seconds(text):
    """ "0.2s", "200ms" or "5" as seconds."""
    if text.endswith("ms"):
        return float(text[:-2]) / 1000
    return float(text.rstrip("s"))


def tenant_clouds(workdir, tag):
    """The directory of the simulator's tenants' clouds.yaml files."""
    return os.path.join(workdir, f"tenant-clouds-{tag}")


def second_project(env, workdir, namespace, team_clouds):
    """A namespace whose objects act in the simulator's second project."""
    path = os.path.join(workdir, f"{namespace}.json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, f)
    kubectl(env, "apply", "-f", path)
    credentials(env, workdir, namespace, team_clouds)


def credentials(env, workdir, namespace, clouds_file):
    """`namespace`'s credentials Secret, with the clouds.yaml at `clouds_file`."""
    with open(clouds_file, "rb") as f:
        clouds = base64.b64encode(f.read()).decode()
    secret = os.path.join(workdir, f"{namespace}-secret.json")
    with open(secret, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "verda-cloud-credentials", "namespace": namespace},
                   "data": {"clouds.yaml": clouds}}, f)
    kubectl(env, "apply", "-f", secret)


def probe(env, workdir, namespace, name):
    """Seconds from `kubectl apply` of one VirtualMachine until it is Ready."""
    path = os.path.join(workdir, f"{name}.yaml")
    with open(path, "w") as f:
        f.write(flow({"apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachine",
                      "metadata": {"name": name, "namespace": namespace},
                      "spec": {"image": "centos79", "flavor": "n3-1vcpu-2gb",
                               "initScript": {"value": "ls"}}}) + "\n")
    started = time.monotonic()
    kubectl(env, "apply", "-f", path)
    kubectl(env, "-n", namespace, "wait", "--for=condition=Ready", f"vm/{name}", f"--timeout={LIMIT}s")
    return round(time.monotonic() - started, 2)


def ready_vms(metrics_url):
    text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
               if line.startswith("verda_group_ready_replicas{"))


def _reachable(url):
    try:
        urllib.request.urlopen(url, timeout=2).read()
        return True
    except OSError:
        return False


def main():
    sizes = [int(g) for g in (sys.argv[1:] or ["10", "100"])]
    with tempfile.TemporaryDirectory(prefix="verda-bench-") as workdir:
        results = [run(g, workdir) for g in sizes]
    print()
    print(f"| VMs (groups of {REPLICAS}) | LBs | converge | cloud calls | per VM | per LB | "
          f"peak RSS | anonymous at convergence | CPU to converge (mean) | CPU idle | "
          f"idle calls, each {RESYNC} s period | idle writes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        idle = " / ".join(str(n) for n in r["idle_calls"])
        print(f"| {r['vms']} | {r['lbs']} | {r['converge_secs']} s | {r['calls']} | "
              f"{r['calls_per_vm']} | {r['calls_per_lb']} | {r['peak_rss_mb']} MB | "
              f"{r['anon_mb_at_convergence']} MB | {r['cpu_secs_to_converge']} s "
              f"({r['cpu_mean_millicores_converging']}m) | {r['cpu_idle_millicores']}m | {idle} | "
              f"{r['idle_writes']} |")
    for r in results:
        if "latency_bound_secs" in r:
            print(f"latency {LATENCY} per call, {BUILD} build, {r['vms']} VMs: converged in "
                  f"{r['converge_secs']} s; bound build + calls x latency / {CONCURRENCY} x 1.5 = "
                  f"{r['latency_bound_secs']} s")
        if "fairness" in r:
            f = r["fairness"]
            print(f"fairness, {r['vms']} VMs: another project's VirtualMachine Ready in "
                  f"{f['alone_secs']} s alone, {f['during_fleet_secs']} s while the fleet was created "
                  f"({f['ratio']}x; {f['fleet_ready_vms_then']} of the fleet's VMs Ready by then)")


if __name__ == "__main__":
    main()
