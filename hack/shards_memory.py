#!/usr/bin/env python3
"""Memory per replica, one replica against three shards: G groups of 10 VirtualMachines,
each behind its own 2-port LoadBalancer, spread over N namespaces, converged first by
one `verda-operator run` (every namespace, no leader election) and then, on a fresh test
API server and simulator, by three `verda-operator run --shards` processes.

The shards' claims are settled before the fleet is applied (as in a running cluster,
where the fleet grows under replicas that already divide the namespaces). Prints, for
each run, the time from `kubectl apply` to converged, each process's peak RSS (VmHWM)
through convergence and the first resync period after it (as the fleet bench reads it:
the periodic listing of the cloud is part of a replica's peak) and its CPU time until
then, and the largest shard's peak RSS and converged anonymous memory (its heap) as
shares of the single replica's (goal: the heap under 45 %). Also each process's kept-alive connections to the cloud and to the API server.

Usage: hack/shards_memory.py [GROUPS [NAMESPACES]]   (defaults 1000 30; release
binaries built first: cargo build --release --locked -p verda-operator
-p verda-test-apiserver --bins)
Env: VERDA_SHARDS_MEMORY_MODES ("single shards"; one of them runs it alone, no verdict),
VERDA_SHARDS_MEMORY_PROJECTS ("namespace", the default: each namespace acts in a project
of its own, named by its credentials Secret, as in a cluster shared by many teams;
"shared": every namespace in the simulator's one project, with the operator's own
credentials, so that each shard lists the whole fleet on every refresh),
VERDA_BENCH_OPERATOR_WRAP (the single replica and the first shard run under it, e.g.
heaptrack), and
VERDA_BENCH_RSS_TRACE (a path prefix: each process's RSS, anonymous and file-backed,
in MB every 2 s).
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import bench_fleet as bench
import shards_failover
from bench_fleet import Processes, free_port, kubectl, wait_for

SHARDS = ["shard-a", "shard-b", "shard-c"]
PROJECTS = os.environ.get("VERDA_SHARDS_MEMORY_PROJECTS", "namespace")
RESYNC_SECS = 30


def spread(groups, namespaces):
    """How many groups each namespace gets: as even as can be."""
    return [groups // namespaces + (1 if i < groups % namespaces else 0)
            for i in range(namespaces)]


def converged(urls, groups):
    """The replicas' gauges, summed: every VM Ready, every LoadBalancer Active with all
    its members."""
    ready = full = active = 0
    for url in urls:
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        for line in text.splitlines():
            value = line.rsplit(" ", 1)[-1]
            if line.startswith("verda_group_ready_replicas{"):
                ready += int(float(value))
            elif line.startswith("verda_load_balancer_members{"):
                full += int(float(value)) == 2 * bench.REPLICAS
            elif line.startswith('verda_managed_objects{kind="loadbalancer",state="Active"}'):
                active += int(float(value))
    return ready == groups * bench.REPLICAS and full == groups and active == groups


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def cpu_secs(pid):
    """The process's CPU time so far, user and system."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def connections(pid, port):
    """The process's established TCP connections to `port` on this machine."""
    sockets = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            sockets.add(link[len("socket:["):-1])
    count = 0
    with open(f"/proc/{pid}/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if state == "01" and int(remote.split(":")[1], 16) == port and inode in sockets:
                count += 1
    return count


def port_in(path):
    """The port of the first http://127.0.0.1:PORT URL in a file (a clouds.yaml, a
    kubeconfig)."""
    with open(path) as f:
        return int(re.search(r"http://127\.0\.0\.1:(\d+)", f.read()).group(1))


def run(mode, groups, namespaces, workdir):
    procs = Processes()
    try:
        env = dict(os.environ)
        history = max(10_000, groups * (bench.REPLICAS + 1) * 20)
        env["KUBECONFIG"] = bench.start_apiserver(procs, workdir, mode, history)
        tenants = namespaces if PROJECTS == "namespace" else 0
        clouds_file, _ = bench.start_simulator(procs, workdir, mode,
                                               groups * bench.REPLICAS * 2, tenants)
        ring = shards_failover.Ring(env, workdir, procs, clouds_file, namespaces)
        with open(ring.config, "w") as f:
            # Each process spends its own budget: none that a fleet reaches, so both
            # runs go at the operator's own pace.
            f.write(f"resyncPeriod: {RESYNC_SECS}s\n"
                    "requestBudget: {requestsPerSecond: 100000, burst: 100000}\n"
                    "credentials: {defaultCloudName: verda-sim}\n")
        ring.create_namespaces()
        for i, ns in enumerate(ring.namespaces[:tenants], start=1):
            tenant = os.path.join(bench.tenant_clouds(workdir, mode), f"tenant-{i}.yaml")
            bench.credentials(env, workdir, ns, tenant)
        if mode == "single":
            listen = f"127.0.0.1:{free_port()}"
            log = open(os.path.join(workdir, "single.log"), "w")
            single = procs.start([*bench.WRAP, bench.OPERATOR, "run", "--listen", listen,
                                  "--config", ring.config, "--leader-elect=false"],
                                 env=ring.operator_env, stderr=log)
            pids = {"single": single.pid}
            urls = [f"http://{listen}/metrics"]
        else:
            for identity in SHARDS:
                ring.start(identity)
            ring.settled_holders(SHARDS)
            pids = {i: p.pid for i, p in ring.replicas.items()}
            urls = [f"http://{listen}/metrics" for listen in ring.listens.values()]
        for url in urls:
            wait_for("the operator's /metrics", lambda u=url: bench._reachable(u), 30, 0.2)
        if bench.RSS_TRACE:
            for identity, pid in pids.items():
                bench.trace_rss(pid, f"{bench.RSS_TRACE}-{identity}")
        idle_rss = {i: round(rss_mb(pid), 1) for i, pid in pids.items()}
        manifest = os.path.join(workdir, f"fleet-{mode}.yaml")
        with open(manifest, "w") as f:
            for ns, count in zip(ring.namespaces, spread(groups, namespaces)):
                f.write(bench.manifests(count, ns))
        started = time.monotonic()
        kubectl(env, "apply", "-f", manifest)
        wait_for(f"{groups} groups and LoadBalancers to converge",
                 lambda: converged(urls, groups), bench.LIMIT, 1.0)
        elapsed = time.monotonic() - started
        at_convergence = {i: round(bench.peak_rss_mb(pid), 1) for i, pid in pids.items()}
        converged_rss = {i: round(rss_mb(pid), 1) for i, pid in pids.items()}
        # A replica lists its projects' servers, ports and load balancers every resync
        # period: its peak is the larger for the first full-size listing after it
        # converged. Without waiting for it, a peak read at convergence counts it for
        # whichever process happened to converge a period before the others.
        time.sleep(RESYNC_SECS + 5)
        held = ring.holders() if mode == "shards" else {}
        result = {
            "mode": mode, "vms": groups * bench.REPLICAS, "namespaces": namespaces,
            "projects": tenants or 1,
            "converge_secs": round(elapsed, 1),
            "peak_rss_mb": {i: round(bench.peak_rss_mb(pid), 1) for i, pid in pids.items()},
            "peak_rss_at_convergence_mb": at_convergence,
            "rss_before_mb": idle_rss,
            "rss_converged_mb": converged_rss,
            "converged_resident_mb": {i: bench.resident_mb(pid) for i, pid in pids.items()},
            "cpu_secs": {i: round(cpu_secs(pid), 1) for i, pid in pids.items()},
            # Kept-alive connections once converged: to the cloud, to the API server.
            "cloud_connections": {i: connections(pid, port_in(clouds_file))
                                  for i, pid in pids.items()},
            "api_connections": {i: connections(pid, port_in(env["KUBECONFIG"]))
                                for i, pid in pids.items()},
            "namespaces_held": {i: sum(1 for h in held.values() if h == i) for i in pids}
            if held else {"single": namespaces},
        }
        print("MEMORY " + json.dumps(result), flush=True)
        if bench.WRAP:
            # Killed outright, so the wrapper records what the settled process holds
            # (matched by name prefix: a profiling build may be named otherwise).
            first = single if mode == "single" else ring.replicas[SHARDS[0]]
            subprocess.run(["pkill", "-KILL", "-s", str(first.pid), "^verda-operator"])
            first.wait(300)
        return result
    finally:
        procs.stop()


def main():
    groups = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    namespaces = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    os.environ.setdefault("RUST_LOG", "warn")
    modes = os.environ.get("VERDA_SHARDS_MEMORY_MODES", "single shards").split()
    if PROJECTS not in ("namespace", "shared"):
        sys.exit(f"VERDA_SHARDS_MEMORY_PROJECTS={PROJECTS!r}: use 'namespace' (a project "
                 "per namespace, the default) or 'shared' (one project for all)")
    with tempfile.TemporaryDirectory(prefix="verda-bench-") as workdir:
        results = {mode: run(mode, groups, namespaces, workdir) for mode in modes}
    if modes != ["single", "shards"]:
        return
    single, shards = results["single"], results["shards"]
    base = single["peak_rss_mb"]["single"]
    largest = max(shards["peak_rss_mb"].values())
    share = largest / base
    print()
    projects = "a project each" if PROJECTS == "namespace" else "one project"
    print(f"| {groups * bench.REPLICAS} VMs over {namespaces} namespaces, {projects} | converge | "
          "peak RSS per process | CPU per process | namespaces each | "
          "connections to the cloud / API server |")
    print("|---|---|---|---|---|---|")
    for r in (single, shards):
        rss = " / ".join(f"{v} MB" for v in r["peak_rss_mb"].values())
        cpu = " / ".join(f"{v} s" for v in r["cpu_secs"].values())
        held = " / ".join(str(n) for n in r["namespaces_held"].values())
        conns = " / ".join(f"{r['cloud_connections'][i]}/{r['api_connections'][i]}"
                           for i in r["cloud_connections"])
        print(f"| {r['mode']} | {r['converge_secs']} s | {rss} | {cpu} | {held} | {conns} |")
    print(f"largest shard's peak RSS: {share:.0%} of the single replica's")
    early = (max(shards["peak_rss_at_convergence_mb"].values())
             / single["peak_rss_at_convergence_mb"]["single"])
    print(f"read at convergence, before the next listing of the cloud: {early:.0%}")
    # The binary's pages are resident in every process alike: what is left divides or not.
    anon = max(r["anon"] for r in shards["converged_resident_mb"].values())
    base_anon = single["converged_resident_mb"]["single"]["anon"]
    # The goal is read from the heap: the binary's pages are clean, shared and
    # reclaimable, and the same in every process whatever its share.
    print(f"once converged, anonymous memory (the heap): largest shard {anon} MB, "
          f"{anon / base_anon:.0%} of the single replica's {base_anon} MB (goal < 45 %)")
    sys.exit(0 if anon / base_anon < 0.45 else 1)


if __name__ == "__main__":
    main()
