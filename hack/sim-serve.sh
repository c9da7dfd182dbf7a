#!/usr/bin/env bash
# Serves the OpenStack simulator for manual clients (openstack CLI, curl) and writes a
# clouds.yaml for it. Env: SIM_LISTEN (127.0.0.1:8999), SIM_SERVE_SECS (600),
# SIM_CLOUDS_YAML (/tmp/verda-sim-clouds.yaml). Then, for example:
#   OS_CLIENT_CONFIG_FILE=/tmp/verda-sim-clouds.yaml openstack --os-cloud verda-sim server list
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test -p verda-operator --test it -- --ignored --nocapture sim_serve::
