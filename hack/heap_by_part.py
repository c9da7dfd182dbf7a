#!/usr/bin/env python3
"""The operator's heap by part, from a heaptrack recording of a fleet run.

Usage: heap_by_part.py RECORDING.zst VMS

Prints, for the heap's peak and for what was still held when the operator stopped
(the settled fleet), the bytes each part held and that divided by VMS. A stack is
charged to the part of its innermost frame that names one (a Nova list made by the
cloud view's refresh is a cloud call in flight; the entries the refresh keeps are the
cloud view).

Run through hack/bench-memory.sh, which records the run.
"""

import collections
import subprocess
import sys
import tempfile

# (part, what a frame of it contains), checked innermost frame first.
PARTS = [
    ("watch caches (reflector stores, key index)", ("reflector::store", "caches::watch::")),
    ("cloud view (servers, load balancers, volumes)", ("caches::cloud_view::",)),
    # Calls only: a model type cloned into the view (`Server::clone` under
    # `ServerView::record`) is the view's, charged by the frame that called it.
    ("cloud calls in flight (bodies, parsing)",
     tuple(f"verda_operator::cloud::{m}::" for m in
           ("client", "transport", "auth", "budget", "retry", "request", "error_body"))
     + ("verda_operator::cloud::http_clients::",)),
    ("metrics (per-object series)", ("verda_operator::metrics::", "prometheus")),
    ("events (correlator, recorder)", ("runtime::events::",)),
    ("controller queues (kube-runtime scheduler)", ("kube_runtime::scheduler", "kube_runtime::controller")),
    # A reconcile's own future is polled inside the span it was spawned in.
    ("reconciles in flight (tasks, state)",
     ("verda_operator::controllers::", "verda_operator::runtime::",
      "tracing::instrument::Instrumented")),
    ("HTTP connections (read buffers)", ("hyper::proto::",)),
    ("API server calls (kube client)", ("kube_client::",)),
]
OTHER = "other (runtime, start-up)"


def readable(frame):
    """A symbol as Rust writes it: `_$LT$a..b$GT$` is `<a::b>`."""
    for code, char in (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$C$", ","),
                       ("$RF$", "&"), ("..", "::")):
        frame = frame.replace(code, char)
    return frame


def part_of(frames):
    for frame in map(readable, reversed(frames)):
        for part, marks in PARTS:
            if any(mark in frame for mark in marks):
                return part
    return OTHER


def folded(recording, cost):
    with tempfile.NamedTemporaryFile("r", suffix=".folded") as out:
        subprocess.run(["heaptrack_print", "-f", recording, "--flamegraph-cost-type", cost,
                        "-F", out.name, "-p", "0", "-a", "0", "-T", "0", "-l", "0", "-n", "0"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for line in out:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            yield stack.split(";"), int(n)


def by_part(recording, cost):
    parts = collections.Counter()
    for frames, n in folded(recording, cost):
        parts[part_of(frames)] += n
    return parts


def main():
    recording, vms = sys.argv[1], int(sys.argv[2])
    peak, held = by_part(recording, "peak"), by_part(recording, "leaked")
    print(f"| part | at peak | per VM | settled | per VM |")
    print("|---|---|---|---|---|")
    for part in [p for p, _ in PARTS] + [OTHER]:
        print(f"| {part} | {peak[part] / 1e6:.1f} MB | {peak[part] / vms:,.0f} B "
              f"| {held[part] / 1e6:.1f} MB | {held[part] / vms:,.0f} B |")
    total_peak, total_held = sum(peak.values()), sum(held.values())
    print(f"| **heap** | {total_peak / 1e6:.1f} MB | {total_peak / vms:,.0f} B "
          f"| {total_held / 1e6:.1f} MB | {total_held / vms:,.0f} B |")


if __name__ == "__main__":
    main()
