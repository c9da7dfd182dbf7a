#!/usr/bin/env python3
"""Shards under churn: N namespaces, each with a group of 3 VirtualMachines behind a
2-port LoadBalancer, reconciled by 3 `verda-operator run --shards` processes against
`verda-operator simulate`, on the test API server (or the cluster of KUBECONFIG with
VERDA_BENCH_REAL_CLUSTER=1).

Prints: time to converge and how the namespaces were spread; how many namespaces moved
when a 4th replica joined; after a SIGKILL of one replica, how long until a `kubectl
scale` in one of its namespaces reached both pools of that namespace's LoadBalancer
(goal: within lease duration + 10 s); and how long a replica stopped with SIGTERM took
to hand its namespaces over.

Usage: hack/shards_failover.py [NAMESPACES]   (release binaries built first:
cargo build --release --locked -p verda-operator -p verda-test-apiserver --bins)
Env: VERDA_SHARDS_LEASE_SECS (10).
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import bench_fleet as bench
from bench_fleet import Processes, free_port, kubectl, wait_for

LEASE_SECS = int(os.environ.get("VERDA_SHARDS_LEASE_SECS", "10"))


class Ring:
    def __init__(self, env, workdir, procs, clouds_file, namespaces):
        self.env, self.workdir, self.procs = env, workdir, procs
        self.tag = f"shards-{os.getpid()}"
        self.lease_namespace = f"{self.tag}-leases"
        self.namespaces = [f"{self.tag}-{i:02}" for i in range(namespaces)]
        self.config = os.path.join(workdir, "operator.yaml")
        with open(self.config, "w") as f:
            f.write("resyncPeriod: 30s\ncredentials: {defaultCloudName: verda-sim}\n")
        # Each reconcile that wrote to the cloud is logged (JSON) with when its writes
        # went out and were answered: the record of who wrote for a namespace when.
        self.operator_env = dict(env, OS_CLIENT_CONFIG_FILE=clouds_file, OS_CLOUD="verda-sim",
                                 RUST_LOG=os.environ.get("RUST_LOG", "info")
                                 + ",verda_operator::cloud_writes=debug")
        self.replicas = {}
        self.listens = {}

    def create_namespaces(self):
        docs = [{"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": self.lease_namespace}}]
        for ns in self.namespaces:
            docs.append({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": ns, "labels": {"verda-shards-demo": self.tag}}})
        path = os.path.join(self.workdir, "namespaces.yaml")
        with open(path, "w") as f:
            f.write("".join(f"---\n{bench.flow(d)}\n" for d in docs))
        kubectl(self.env, "apply", "-f", path)

    def create(self):
        self.create_namespaces()
        for ns in self.namespaces:
            path = os.path.join(self.workdir, f"fleet-{ns}.yaml")
            with open(path, "w") as f:
                f.write(bench.manifests(1, ns))
            kubectl(self.env, "apply", "-f", path)

    def start(self, identity):
        listen = f"127.0.0.1:{free_port()}"
        self.listens[identity] = listen
        log = open(os.path.join(self.workdir, f"{identity}.log"), "w")
        # VERDA_BENCH_OPERATOR_WRAP (e.g. heaptrack) wraps the first replica only.
        wrap = bench.WRAP if not self.replicas else []
        self.replicas[identity] = self.procs.start(
            [*wrap, bench.OPERATOR, "run", "--log-format", "json", "--shards", "--listen", listen,
             "--config", self.config,
             "--shard-namespace-selector", f"verda-shards-demo={self.tag}",
             "--identity", identity, "--lease-namespace", self.lease_namespace,
             "--lease-name", "verda-shards", "--lease-duration", f"{LEASE_SECS}s"],
            env=self.operator_env, stderr=log)

    def writes(self):
        """Every reconcile's cloud writes, from the replicas' logs: (namespace, first
        sent, last answered, replica, object), times in ms since the epoch."""
        records = []
        for identity in self.replicas:
            with open(os.path.join(self.workdir, f"{identity}.log")) as f:
                for line in f:
                    if '"verda_operator::cloud_writes"' not in line:
                        continue
                    r = json.loads(line)
                    records.append((r["object"].split("/", 1)[0], int(r["first_sent_ms"]),
                                    int(r["last_done_ms"]), identity, r["object"]))
        return records

    def holders(self):
        out = kubectl(self.env, "get", "lease", "-n", self.lease_namespace, "-o", "json")
        holders = {}
        for lease in json.loads(out)["items"]:
            name = lease["metadata"]["name"]
            holder = (lease.get("spec") or {}).get("holderIdentity") or ""
            if name.startswith("verda-shards-ns-") and holder:
                holders[name[len("verda-shards-ns-"):]] = holder
        return holders

    def settled_holders(self, replicas):
        """The claims once every namespace is held, by live replicas only, as evenly as
        can be, and unchanged over two rounds; and when they first were."""
        def even():
            held = self.holders()
            counts = [sum(1 for h in held.values() if h == r) for r in replicas]
            fair = len(self.namespaces) // len(replicas)
            ok = (len(held) == len(self.namespaces) and set(held.values()) <= set(replicas)
                  and all(fair <= c <= fair + 1 for c in counts))
            return held if ok else None
        while True:
            first = wait_for("the claims to spread evenly", even, 120, 0.25)
            spread_at = time.monotonic()
            time.sleep(2 * LEASE_SECS / 3)
            if even() == first:
                return first, spread_at

    def converged(self, members_per_pool):
        out = kubectl(self.env, "get", "vmg,lb", "-A", "-o", "json")
        items = [o for o in json.loads(out)["items"]
                 if o["metadata"]["namespace"].startswith(self.tag)]
        groups = [g for g in items if g["kind"] == "VirtualMachineGroup"
                  and (g.get("status") or {}).get("readyReplicas") == members_per_pool(g)]
        lbs = [lb for lb in items if lb["kind"] == "LoadBalancer" and bench.ready(lb)
               and len((lb.get("status") or {}).get("ports") or []) == 2
               and all(len(p.get("members") or []) == members_per_pool(lb)
                       for p in lb["status"]["ports"])]
        return len(groups) == len(self.namespaces) and len(lbs) == len(self.namespaces)

    def delete(self):
        for ns in self.namespaces:
            kubectl(self.env, "delete", "lb,vmg", "--all", "-n", ns, "--wait=false")
        wait_for("the fleet to be deleted", lambda: not any(
            kubectl(self.env, "get", "vm,vmg,lb", "-n", ns, "-o", "name").strip()
            for ns in self.namespaces), 300, 2)
        for ns in [*self.namespaces, self.lease_namespace]:
            kubectl(self.env, "delete", "namespace", ns, "--wait=false")


def concurrent_writes(records):
    """Pairs of reconciles of two replicas whose cloud writes for one namespace overlapped
    in time (the rule is that none ever do)."""
    by_namespace = {}
    for ns, first, last, who, obj in records:
        by_namespace.setdefault(ns, []).append((first, last, who, obj))
    found = []
    for ns, spans in by_namespace.items():
        spans.sort()
        for i, (first, last, who, obj) in enumerate(spans):
            for first2, last2, who2, obj2 in spans[i + 1:]:
                if first2 > last:
                    break
                if who2 != who:
                    found.append((ns, who, obj, first, last, who2, obj2, first2, last2))
    return found


def run(namespaces, workdir):
    procs = Processes()
    try:
        env = dict(os.environ)
        real_cluster = os.environ.get("VERDA_BENCH_REAL_CLUSTER") == "1"
        if not real_cluster:
            env["KUBECONFIG"] = bench.start_apiserver(procs, workdir, "shards", 10_000)
        clouds_file, _ = bench.start_simulator(procs, workdir, "shards", namespaces * 3 * 4)
        ring = Ring(env, workdir, procs, clouds_file, namespaces)
        ring.create()
        three = ["shard-a", "shard-b", "shard-c"]
        started = time.monotonic()
        for identity in three:
            ring.start(identity)
        wait_for("every namespace to converge", lambda: ring.converged(lambda _: 3), 300, 1)
        converge_secs = time.monotonic() - started
        before, _ = ring.settled_holders(three)
        spread = {r: sum(1 for h in before.values() if h == r) for r in three}

        four = [*three, "shard-d"]
        ring.start("shard-d")
        after, _ = ring.settled_holders(four)
        moved = sum(1 for ns in ring.namespaces if before[ns] != after[ns])
        spread4 = {r: sum(1 for h in after.values() if h == r) for r in four}

        # SIGKILL one; scale a group in one of its namespaces at once.
        victim = "shard-a"
        orphaned = sorted(ns for ns, h in after.items() if h == victim)
        target = orphaned[0]
        ring.replicas[victim].send_signal(signal.SIGKILL)
        ring.replicas[victim].wait(30)
        killed = time.monotonic()
        kubectl(env, "scale", "vmg", "group-0", "-n", target, "--replicas=4")

        def scaled():
            lb = json.loads(kubectl(env, "get", "lb", "lb-0", "-n", target, "-o", "json"))
            ports = (lb.get("status") or {}).get("ports") or []
            return len(ports) == 2 and all(len(p.get("members") or []) == 4 for p in ports)
        wait_for("the scale to reach both pools", scaled, 120, 0.25)
        scale_secs = time.monotonic() - killed
        survivors = ["shard-b", "shard-c", "shard-d"]
        taken, _ = ring.settled_holders(survivors)

        # SIGTERM another: it hands its namespaces over before it exits.
        leaving = "shard-b"
        stopped = time.monotonic()
        ring.replicas[leaving].send_signal(signal.SIGTERM)
        ring.replicas[leaving].wait(60)
        exit_secs = time.monotonic() - stopped
        held_at_exit = sum(1 for h in ring.holders().values() if h == leaving)
        remaining = ["shard-c", "shard-d"]
        final, spread_at = ring.settled_holders(remaining)
        handover_secs = spread_at - stopped
        wait_for("every namespace converged", lambda: ring.converged(
            lambda o: 4 if o["metadata"]["namespace"] == target else 3), 120, 1)
        result = {
            "namespaces": namespaces, "lease_secs": LEASE_SECS,
            "converge_secs": round(converge_secs, 1), "spread_of_3": spread,
            "moved_on_4th": moved, "moved_fraction": round(moved / namespaces, 2),
            "spread_of_4": spread4,
            "killed_owned": len(orphaned),
            "scale_after_kill_secs": round(scale_secs, 1),
            "scale_goal_secs": LEASE_SECS + 10,
            "killed_claims_left": sum(1 for h in taken.values() if h == victim),
            "sigterm_exit_secs": round(exit_secs, 1),
            "sigterm_claims_held_at_exit": held_at_exit,
            "sigterm_handover_secs": round(handover_secs, 1),
            "final_spread": {r: sum(1 for h in final.values() if h == r) for r in remaining},
        }
        records = ring.writes()
        overlapping = concurrent_writes(records)
        writers = {}
        for _, _, _, who, obj in records:
            writers.setdefault(obj, set()).add(who)
        result.update({
            "reconciles_that_wrote": len(records),
            "objects_written_by_more_than_one_replica_in_turn":
                sum(1 for w in writers.values() if len(w) > 1),
            "concurrent_writes_by_two_replicas": len(overlapping),
        })
        for o in overlapping[:10]:
            print("CONCURRENT", o, flush=True)
        print("SHARDS " + json.dumps(result), flush=True)
        if real_cluster:
            ring.delete()
        return result
    finally:
        procs.stop()


def main():
    namespaces = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    bench.REPLICAS = 3
    keep = os.environ.get("VERDA_SHARDS_KEEP_LOGS")
    with tempfile.TemporaryDirectory(prefix="verda-bench-") as workdir:
        try:
            result = run(namespaces, workdir)
        finally:
            if keep:
                subprocess.run(["cp", "-r", workdir, keep])
    ok = (result["scale_after_kill_secs"] <= result["scale_goal_secs"]
          and result["moved_fraction"] <= 0.4 and result["killed_claims_left"] == 0
          and result["sigterm_claims_held_at_exit"] == 0
          and result["reconciles_that_wrote"] > 0
          and result["concurrent_writes_by_two_replicas"] == 0)
    print("within goals" if ok else "GOAL MISSED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
