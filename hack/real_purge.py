"""Empties the demo project of the real OpenStack (../shared/real-systems) before a stage
of hack/real-systems.sh: whatever an interrupted earlier run or an earlier stage left
(load balancers, servers, server groups, floating IPs, volumes, and the network the
addresses test makes), so that quotas and the tests' before/after inventories start
from a clean project.

One Python process with openstacksdk (the venv of the real systems) in place of a dozen
`openstack` CLI calls, each of which paid 1.5-3 s of start-up: a stage's purge went from
about 20 s to a few.

Usage: python3 hack/real_purge.py   (OS_CLIENT_CONFIG_FILE names the clouds.yaml with
       clouds osh-demo and osh-admin). Prints one line of counts; exits non-zero when
       something could not be deleted.
"""

import sys
import time

import openstack
from keystoneauth1 import exceptions as connection
from openstack import exceptions

DEADLINE = 300  # seconds for the whole purge
NETWORK = "verda-addresses"


def wait_gone(what, find, until):
    """Polls `find()` (None once gone) until `until`."""
    while find() is not None:
        if time.monotonic() > until:
            raise SystemExit(f"[real-purge] {what} still there after {DEADLINE} s")
        time.sleep(1)


def purge_load_balancers(demo, until):
    lbs = list(demo.load_balancer.load_balancers())
    for lb in lbs:
        # A load balancer busy with a change is refused (409) until it settles.
        while True:
            try:
                demo.load_balancer.delete_load_balancer(lb, cascade=True, ignore_missing=True)
                break
            except exceptions.ConflictException:
                if time.monotonic() > until:
                    raise
                time.sleep(1)
    for lb in lbs:
        wait_gone(f"load balancer {lb.id}",
                  lambda: demo.load_balancer.find_load_balancer(lb.id, ignore_missing=True),
                  until)
    return len(lbs)


def purge_servers(demo, until):
    servers = list(demo.compute.servers())
    for server in servers:
        demo.compute.delete_server(server, ignore_missing=True)
    for server in servers:
        wait_gone(f"server {server.id}",
                  lambda: demo.compute.find_server(server.id, ignore_missing=True), until)
    groups = list(demo.compute.server_groups())
    for group in groups:
        demo.compute.delete_server_group(group, ignore_missing=True)
    return len(servers), len(groups)


def listed_volumes(demo, until):
    """The project's volumes. The volumes stage stops Cinder's API for a while, and a
    lane beside it may purge then: a refused connection is waited out until `until`."""
    while True:
        try:
            return list(demo.block_storage.volumes())
        except connection.ConnectFailure:
            if time.monotonic() > until:
                raise
            print("[real-systems] Cinder's API refuses connections (the volumes stage stops it "
                  "for a while); listing volumes again in 5 s", file=sys.stderr)
            time.sleep(5)


def purge_volumes(demo, until):
    """The servers are gone, so their volumes are detached (or on their way): each gets
    10 tries a second apart, and one that still refuses is said, not fatal (as before)."""
    volumes = listed_volumes(demo, until)
    for volume in volumes:
        for attempt in range(10):
            try:
                demo.block_storage.delete_volume(volume, ignore_missing=True)
                break
            except (exceptions.HttpException, connection.ConnectFailure) as e:
                if attempt == 9:
                    print(f"[real-systems] volume {volume.id} not deleted: {e}", file=sys.stderr)
                time.sleep(1)
    return len(volumes)


def purge_addresses_network(demo, admin):
    """The network, subnet and router the addresses test makes, with their ports."""
    router = demo.network.find_router(NETWORK, ignore_missing=True)
    subnet = demo.network.find_subnet(NETWORK, ignore_missing=True)
    if router is not None:
        if subnet is not None:
            try:
                demo.network.remove_interface_from_router(router, subnet_id=subnet.id)
            except exceptions.HttpException:
                pass  # not attached
        demo.network.delete_router(router, ignore_missing=True)
    network = demo.network.find_network(NETWORK, ignore_missing=True)
    if network is not None:
        for port in demo.network.ports(network_id=network.id):
            demo.network.delete_port(port, ignore_missing=True)
        demo.network.delete_network(network, ignore_missing=True)
    external = admin.network.find_network(NETWORK + "-ext", ignore_missing=True)
    if external is not None:
        admin.network.delete_network(external, ignore_missing=True)


def purge_security_groups(demo):
    """The SecurityGroup tests' groups (all but `default`), then their address groups
    (Neutron refuses an address group a rule still names)."""
    groups = [g for g in demo.network.security_groups() if g.name != "default"]
    for group in groups:
        try:
            demo.network.delete_security_group(group, ignore_missing=True)
        except exceptions.HttpException as e:
            print(f"[real-systems] security group {group.id} not deleted: {e}", file=sys.stderr)
    address_groups = list(demo.network.address_groups())
    for group in address_groups:
        demo.network.delete_address_group(group, ignore_missing=True)
    return len(groups), len(address_groups)


def main():
    until = time.monotonic() + DEADLINE
    demo = openstack.connect(cloud="osh-demo")
    admin = openstack.connect(cloud="osh-admin")
    lbs = purge_load_balancers(demo, until)
    servers, groups = purge_servers(demo, until)
    fips = list(demo.network.ips())
    for fip in fips:
        demo.network.delete_ip(fip, ignore_missing=True)
    volumes = purge_volumes(demo, until)
    purge_addresses_network(demo, admin)
    security_groups, address_groups = purge_security_groups(demo)
    project = demo.config.auth.get("project_name", "demo")
    print(f"[real-systems] purged project {project} (cloud osh-demo): {lbs} load balancers, {servers} servers, "
          f"{groups} server groups, {len(fips)} floating IPs, {volumes} volumes, "
          f"{security_groups} security groups, {address_groups} address groups",
          file=sys.stderr)


if __name__ == "__main__":
    main()
