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

The script names each instance that ran twice: first by its full symbol, hash
included, so that the instances that ran are packed together at the front; then without
the hash Rust appends to a symbol, which catches every other instance of the same
generic function and every instance whose hash changed since the profile (the hash
changes with the crate's version, features, target and toolchain). A binary with the
profile's symbols thus holds in its pages only code that ran, and any other build still
has every function that ran laid out first, by name, with the other instances between
them.
A function missing from the script (a path the profiled run did not take: deletion, a
real cloud's TLS) stays in the rest of the text and costs the 64 KB around it when it
first runs.
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
RUST_HASH = re.compile(r"^(_ZN.*17h)([0-9a-f]{16}E)(\.llvm\.\d+)?$")
NUMBERED = re.compile(r"\.\d+$")
CRATE_DISAMBIGUATOR = re.compile(r"Cs[0-9A-Za-z]+_")
# Section names a function may have: LLVM prefixes some (cold, startup, hot).
PREFIXES = ["", "unlikely.", "startup.", "hot."]
HEADER = """/* The functions of verda-operator a profiled run executed, hottest first: the linker
   puts them in .text.hot ahead of the rest of the code (see build.rs). Written by
   hack/hot_code.py profile: first each instance that ran, by its full name, then every
   name again without the symbol's hash, for the instances the profile did not see. */
"""


def pattern(symbol, instance=False):
    """The pattern a symbol's section name matches: with `instance`, this one instance
    (the full symbol, any suffix LTO adds aside); else every instance of the function,
    without the symbol's hash or crate disambiguators. None for a symbol the script
    cannot name (a local label)."""
    rust = RUST_HASH.match(symbol)
    if rust:
        return rust.group(1) + (rust.group(2) if instance else "") + "*"
    if symbol.startswith((".", "(")) or " " in symbol:
        return None
    if symbol.startswith("_R") and not instance:
        symbol = CRATE_DISAMBIGUATOR.sub("Cs*_", symbol)
    return NUMBERED.sub("*", symbol)


def names_instance(name):
    """Whether a name of the script is one instance's (hash or crate disambiguators
    kept) rather than a function's: a function's name, from pattern(), has neither."""
    if name.startswith("_R"):
        return CRATE_DISAMBIGUATOR.search(name) is not None
    return RUST_HASH.match(name.removesuffix("*")) is not None


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
    hottest = [symbol for symbol, _ in sorted(cost.items(), key=lambda item: (-item[1], item[0]))]
    # The instances that ran come first, packed; then, by hash-free names, the other
    # instances of the same functions and the ones whose hash changed since the profile
    # (a new version of the crate, another target): laid out after the packed ones, so
    # that instances that never run do not share their pages.
    patterns = []
    seen = set()
    for name in [pattern(s, instance=True) for s in hottest] + [pattern(s) for s in hottest]:
        if name and name not in seen:
            seen.add(name)
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
    symbols = [line.split()[-1] for line in symbols if line.strip()]
    present = {pattern(symbol, instance) for symbol in symbols for instance in (False, True)}
    exact_names = [name for name in names if names_instance(name)]
    hash_free = [name for name in names if not names_instance(name)]
    found_exact = sum(1 for name in exact_names if name in present)
    found = sum(1 for name in hash_free if name in present)
    hot = sizes.get(".text.hot", 0)
    total = hot + sizes.get(".text", 0)
    print(f"hot code: {hot / 1e6:.1f} MB of {total / 1e6:.1f} MB laid out first; of the "
          f"functions of {os.path.relpath(SCRIPT, ROOT)}, {found} of {len(hash_free)} "
          f"by name and {found_exact} of the {len(exact_names)} profiled instances are in "
          f"{binary}")
    if not hot:
        sys.exit(f"{binary} has no .text.hot section: not a release build of this tree?")
    if found < 0.9 * len(hash_free):
        print("warning: under 90 % of the profiled functions are still in the binary; "
              "run hack/hot_code.py profile", file=sys.stderr)
    elif found_exact < 0.5 * len(exact_names):
        print("warning: under half of the profiled instances are in the binary (another "
              "version, target or toolchain): their packing is lost, the order by name "
              "holds; run hack/hot_code.py profile before a release", file=sys.stderr)


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
