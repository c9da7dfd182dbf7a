#!/usr/bin/env python3
"""The operator's hot code, laid out first in release builds (build.rs, link/hot-code.ld).

A process maps the pages of the code it runs, and the kernel maps a binary's pages
64 KB at a time around each page touched: with the functions a replica runs scattered
over the whole text, every replica held all of it. `link/hot-code.ld` names the
functions a profiled run executed; the linker puts them in one section, `.text.hot`,
ahead of the rest.

  hack/hot_code.py profile   runs hack/shards_memory.py at 300 VMs (one replica, then
                             three shards) with the single replica and the first shard
                             under valgrind's callgrind, and writes link/hot-code.ld
                             from every function of verda-operator they executed,
                             hottest first. Needs valgrind and release binaries
                             (cargo build --release --locked -p verda-operator
                             -p verda-test-apiserver --bins); about 5 minutes.
  hack/hot_code.py check [BINARY]
                             how much of BINARY (default target/release/verda-operator)
                             is laid out first, and how many of the script's functions
                             it still has (renamed or removed ones are not moved);
                             exits 1 when the binary has no hot section.

Functions are named without the hash Rust appends to a symbol (it changes with the
crate's version, features and target), so every instance of a generic function that
ran is laid out first, and the script outlives releases. A function missing from the
script (a path the profiled run did not take: deletion, a real cloud's TLS) stays in
the rest of the text and costs the 64 KB around it when it first runs.
"""

import collections
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "link", "hot-code.ld")
BINARY = os.path.join(ROOT, "target", "release", "verda-operator")
# A Rust symbol's hash: `17h` and 16 hex digits before the closing `E`, and a suffix
# LTO may add (`.llvm.NNN`); other symbols may carry a numbered suffix (`.NNN`). The
# standard library's symbols (v0 mangling) name each crate with a disambiguator
# (`Cs<base62>_`) that differs between targets.
RUST_HASH = re.compile(r"^(_ZN.*17h)[0-9a-f]{16}E(\.llvm\.\d+)?$")
NUMBERED = re.compile(r"\.\d+$")
CRATE_DISAMBIGUATOR = re.compile(r"Cs[0-9A-Za-z]+_")
# Section names a function may have: LLVM prefixes some (cold, startup, hot).
PREFIXES = ["", "unlikely.", "startup.", "hot."]
HEADER = """/* The functions of verda-operator a profiled run executed, hottest first: the linker
   puts them in .text.hot ahead of the rest of the code (see build.rs). Written by
   hack/hot_code.py profile; every name is a pattern without the symbol's hash. */
"""


def pattern(symbol):
    """The hash-free pattern a symbol's section name matches, or None for a symbol the
    script cannot name (a local label)."""
    rust = RUST_HASH.match(symbol)
    if rust:
        return rust.group(1) + "*"
    if symbol.startswith((".", "(")) or " " in symbol:
        return None
    if symbol.startswith("_R"):
        symbol = CRATE_DISAMBIGUATOR.sub("Cs*_", symbol)
    return NUMBERED.sub("*", symbol)


def executed(dumps, binary_name):
    """Every function of `binary_name` the callgrind dumps executed, with its cost."""
    cost = collections.Counter()
    for path in dumps:
        obj = function = None
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("ob="):
                    obj = line[3:].strip()
                elif line.startswith("fn="):
                    # valgrind names no object for code it mapped from a binary whose
                    # hot section comes first ("???"); its functions are named still.
                    mine = obj is not None and os.path.basename(obj) in (binary_name, "???")
                    function = line[3:].strip() if mine else None
                    if function:
                        cost[function] += 0
                elif function and line[:1] in "0123456789+-*":
                    fields = line.split()
                    if len(fields) >= 2 and fields[1].isdigit():
                        cost[function] += int(fields[1])
    return cost


def write_script(cost):
    patterns = []
    for symbol, _ in sorted(cost.items(), key=lambda item: (-item[1], item[0])):
        name = pattern(symbol)
        if name and name not in patterns:
            patterns.append(name)
    lines = [HEADER, "SECTIONS", "{", "  .text.hot : {"]
    for name in patterns:
        sections = " ".join(f".text.{prefix}{name}" for prefix in PREFIXES)
        lines.append(f"    *({sections})")
    lines += ["  }", "}", "INSERT BEFORE .text;", ""]
    os.makedirs(os.path.dirname(SCRIPT), exist_ok=True)
    with open(SCRIPT, "w") as f:
        f.write("\n".join(lines))
    return len(patterns)


def profile():
    dumps = tempfile.mkdtemp(prefix="verda-hot-code-")
    wrap = (f"valgrind --tool=callgrind --callgrind-out-file={dumps}/cg.%p "
            "--dump-instr=no --compress-strings=no --demangle=no")
    env = dict(os.environ, VERDA_BENCH_OPERATOR_WRAP=wrap)
    bench = subprocess.Popen([sys.executable, os.path.join(ROOT, "hack", "shards_memory.py"), "30", "6"],
                             env=env, stdout=subprocess.PIPE, text=True)
    done = threading.Event()

    def dump_often():
        # A process killed outright writes nothing: dump what ran so far every 10 s.
        while not done.wait(10):
            subprocess.run(["callgrind_control", "--dump"], capture_output=True)

    threading.Thread(target=dump_often, daemon=True).start()
    measured = 0
    for line in bench.stdout:
        sys.stdout.write(line)
        if line.startswith("MEMORY"):
            measured += 1
            # Converged and measured: stop the profiled process gracefully, so that
            # callgrind writes its last part (the bench would kill it outright).
            subprocess.run(["callgrind_control", "--dump"], capture_output=True)
            subprocess.run(["pkill", "-TERM", "-x", "callgrind-amd64"])
    bench.wait()
    done.set()
    if measured < 2:
        sys.exit(f"the profiled bench measured {measured} of its 2 runs; see its output above")
    cost = executed(glob.glob(os.path.join(dumps, "cg.*")), "verda-operator")
    if not cost:
        sys.exit(f"callgrind recorded no function of verda-operator (dumps in {dumps})")
    count = write_script(cost)
    subprocess.run(["rm", "-rf", dumps])
    print(f"{SCRIPT}: {count} functions ({len(cost)} symbols executed); "
          "rebuild the release binary to lay them out")


def sections(binary):
    out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    sizes = {}
    for line in out.splitlines():
        fields = line.replace("[ ", "[").split()
        if len(fields) > 6 and fields[1].startswith(".text"):
            sizes[fields[1]] = int(fields[5], 16)
    return sizes


def check(binary):
    sizes = sections(binary)
    with open(SCRIPT) as f:
        names = re.findall(r"\*\(\.text\.(\S+)", f.read())
    symbols = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True,
                             check=True).stdout.split("\n")
    present = {pattern(line.split()[-1]) for line in symbols if line.strip()}
    found = sum(1 for name in names if name in present)
    hot = sizes.get(".text.hot", 0)
    total = hot + sizes.get(".text", 0)
    print(f"hot code: {hot / 1e6:.1f} MB of {total / 1e6:.1f} MB laid out first; "
          f"{found} of the {len(names)} functions of {os.path.relpath(SCRIPT, ROOT)} are in {binary}")
    if not hot:
        sys.exit(f"{binary} has no .text.hot section: not a release build of this tree?")
    if found < 0.9 * len(names):
        print("warning: under 90 % of the profiled functions are still in the binary; "
              "run hack/hot_code.py profile", file=sys.stderr)


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "profile":
        profile()
    elif command == "check":
        check(sys.argv[2] if len(sys.argv) > 2 else BINARY)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    main()
