#!/usr/bin/env bash
# The current `openstack` CLI against `verda-operator simulate`, as a new user meets the
# embedded cloud: servers booted from an image and from a volume, a server group, a data
# volume attached and detached, a load balancer with a listener, pool, member and
# monitor, a Barbican secret serving a TERMINATED_HTTPS listener; everything deleted, and
# nothing left. Fails on the first command the simulator refuses.
# Env: VERDA_BIN (target/debug/verda-operator), VERDA_OPENSTACK_CLI (the real systems'
# /opt/osharness/venv/bin/openstack: python-openstackclient with the octavia and barbican
# plugins).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VERDA_BIN:-target/debug/verda-operator}
OSC=${VERDA_OPENSTACK_CLI:-/opt/osharness/venv/bin/openstack}
work=$(mktemp -d)
# port 0: the simulator binds a port itself and writes it into the clouds.yaml
"$BIN" simulate --listen 127.0.0.1:0 --delay 1s >"$work/clouds.yaml" 2>"$work/simulator.log" &
sim=$!
trap 'status=$?; kill $sim 2>/dev/null || true; [[ $status == 0 ]] || grep -m3 -A4 panicked "$work/simulator.log" >&2; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  grep -q 'verda-sim' "$work/clouds.yaml" 2>/dev/null && break
  sleep 0.1
done
export OS_CLIENT_CONFIG_FILE="$work/clouds.yaml"
t0=$(date +%s)
o() { echo "$*" >>"$work/commands"; "$OSC" --os-cloud verda-sim "$@"; }
value() { o "$@" -f value; }
# Waits until `openstack $kind show $name -c status` says $want.
until_status() {
  local kind=$1 name=$2 want=$3 now=""
  for _ in $(seq 60); do
    now=$(value "$kind" show "$name" -c status)
    [[ $now == "$want" ]] && return 0
    sleep 0.5
  done
  echo "$kind $name is $now, not $want" >&2
  return 1
}
expect() { [[ $1 == "$2" ]] || { echo "expected $2, got $1 ($3)" >&2; exit 1; }; }

value flavor list -c Name >/dev/null
value image list -c Name >/dev/null
group=$(value server group create --policy anti-affinity cli-group -c id)
expect "$(value server create --image centos79 --flavor n3-1vcpu-2gb --network private \
  --hint "group=$group" --wait cli-image -c status)" ACTIVE "server booted from an image"
expect "$(value server create --image centos79 --flavor n3-1vcpu-2gb --network private \
  --boot-from-volume 10 --wait cli-volume -c status)" ACTIVE "server booted from a volume"
expect "$(value server list -c Name | sort | tr '\n' ' ')" "cli-image cli-volume " "server list"
value volume create --size 1 cli-data -c id >/dev/null
until_status volume cli-data available
o server add volume cli-image cli-data >/dev/null
until_status volume cli-data in-use
o server remove volume cli-image cli-data
until_status volume cli-data available

value loadbalancer create --name cli-lb --vip-subnet-id private-subnet --wait -c id >/dev/null
value loadbalancer listener create --name cli-80 --protocol HTTP --protocol-port 80 --wait cli-lb -c id >/dev/null
value loadbalancer pool create --name cli-pool --listener cli-80 --protocol HTTP \
  --lb-algorithm ROUND_ROBIN --wait -c id >/dev/null
address=$(o server show cli-image -f json -c addresses |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["addresses"]["private"][0])')
value loadbalancer member create --address "$address" --protocol-port 80 --wait cli-pool -c id >/dev/null
value loadbalancer healthmonitor create --delay 5 --timeout 3 --max-retries 3 --type HTTP \
  --url-path /health --wait cli-pool -c id >/dev/null
openssl pkcs12 -export -in tests/fixtures/tls/web.crt -inkey tests/fixtures/tls/web.key \
  -passout pass: -out "$work/web.p12"
href=$(value secret store --name cli-web --payload-content-type application/octet-stream \
  --payload-content-encoding base64 --payload "$(base64 -w0 <"$work/web.p12")" -c 'Secret href')
value loadbalancer listener create --name cli-443 --protocol TERMINATED_HTTPS --protocol-port 443 \
  --default-tls-container-ref "$href" --wait cli-lb -c id >/dev/null
expect "$(value loadbalancer listener show cli-443 -c default_tls_container_ref)" "$href" "TLS listener"

o loadbalancer delete --cascade --wait cli-lb
o secret delete "$href"
o server delete --wait cli-image cli-volume
o server group delete cli-group
for v in $(value volume list -c ID); do o volume delete "$v"; done
for kind in "server" "loadbalancer" "volume" "secret"; do
  left=$(value $kind list | wc -l)
  expect "$left" 0 "$kind list after deleting everything"
done
echo "openstack CLI against verda-operator simulate: $(wc -l <"$work/commands") commands in $(($(date +%s) - t0)) s, nothing left"
