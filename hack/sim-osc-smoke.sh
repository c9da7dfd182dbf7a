#!/usr/bin/env bash
# Drives the python-openstackclient (with the octavia plugin) against a running
# simulator (start it with hack/sim-serve.sh). Needs `openstack` on PATH, e.g.
#   python3 -m venv /tmp/osc && /tmp/osc/bin/pip install python-openstackclient python-octaviaclient
set -euo pipefail
export OS_CLIENT_CONFIG_FILE="${SIM_CLOUDS_YAML:-/tmp/verda-sim-clouds.yaml}"
o() { openstack --os-cloud verda-sim "$@"; }
o flavor list
o image list
o network list
o subnet list
o server group create --policy anti-affinity smoke-grp -f value -c id
o server create --image centos79 --flavor n3-1vcpu-2gb --network private --tag k8s \
  --property owner=smoke --wait smoke-vm -f value -c status
o server list
o server set --property k=v --description smoke smoke-vm
o server resize --flavor n3-2vcpu-4gb --wait smoke-vm
o server resize confirm smoke-vm
o loadbalancer create --name smoke-lb --vip-subnet-id private-subnet --wait -f value -c vip_address
o loadbalancer listener create --name smoke-l80 --protocol HTTP --protocol-port 80 --wait smoke-lb -f value -c id
o loadbalancer pool create --name smoke-p80 --listener smoke-l80 --protocol HTTP --lb-algorithm ROUND_ROBIN --wait -f value -c id
o loadbalancer healthmonitor create --delay 5 --timeout 3 --max-retries 3 --type HTTP --url-path /health --wait smoke-p80 -f value -c id
addr=$(o server show smoke-vm -f json -c addresses | python3 -c 'import json,sys; print(json.load(sys.stdin)["addresses"]["private"][0])')
o loadbalancer member create --address "$addr" --protocol-port 80 --wait smoke-p80 -f value -c id
o loadbalancer status show smoke-lb
fip=$(o floating ip create public -f value -c id)
o floating ip set --port "$(o loadbalancer show smoke-lb -f value -c vip_port_id)" "$fip"
o floating ip list
o floating ip delete "$fip"
o loadbalancer delete --cascade --wait smoke-lb
o server delete --wait smoke-vm
o server group delete smoke-grp
echo "openstack CLI smoke test passed"
