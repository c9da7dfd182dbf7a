"""Another OpenStack project ("tenant") on the real OpenStack of ../shared/real-systems:
`team-b` for the multi-tenant tests, and a project for each lane of real-cloud tests run
side by side (`--as-demo`); run by hack/real-systems.sh. On a running OpenStack started
by openstack/start.sh (fresh or not) it makes (for team-b, and the same for another name)

  - project `team-b` (domain Default) and user `team-b` with a random password, holding
    on team-b exactly the roles the demo user holds on demo;
  - as team-b: network `private` with subnet `private-subnet` (10.1.0.0/24), so that the
    operator's default configuration (networks [private], VIP subnet private-subnet)
    works unchanged for both projects;
  - compute quotas like demo's (100 instances, 100 server groups, 100 members per group)
    when they are below 20 / 10 / 20; Octavia's load balancer quota raised to 100 only
    when a limit below 10 is set;
  - application credential `verda-team-b` of team-b (made anew on every run: its secret
    cannot be read back; the password is made anew too, which revokes team-b's tokens);

and writes OUT (mode 600) with clouds `team-b` (password) and `team-b-appcred`
(v3applicationcredential), copied from the osh-demo entry of the clouds.yaml in
OS_CLIENT_CONFIG_FILE. With --as-demo, OUT has instead `osh-demo` (the project, by
password) and `osh-admin` (copied): the tests, the operator and hack/real_purge.py, given
OUT in place of the demo clouds.yaml, act in the project as they would in demo.
Passwords and secrets never reach the log or a command line.

The shared network: start.sh makes `private`/`private-subnet` in the admin project,
shared with every project (a wildcard access_as_shared RBAC policy). With team-b's own
`private` beside it, team-b would see two networks named `private`, and name lookups
would be ambiguous. So the wildcard policy is replaced by one that shares the network
with demo only: demo keeps seeing exactly the network it always saw.

One Python process with openstacksdk in place of some 30 `openstack` CLI calls (1.5-3 s
of start-up each): about 60 s became a few.

Usage: python3 hack/real_tenant.py OUT_CLOUDS_YAML [PROJECT CIDR [--as-demo]]
       (default: team-b 10.1.0.0/24)
"""

import copy
import os
import secrets
import sys
import time

import openstack
import yaml


PROJECT = "team-b"
CIDR = "10.1.0.0/24"


def log(message):
    print(f"[real-systems] {message}", file=sys.stderr)


def fail(message):
    log(message)
    sys.exit(1)


def write_clouds(demo_entry, out, password, appcred=None, admin_entry=None):
    """OUT gets PROJECT (and PROJECT-appcred once there is one), from osh-demo's entry;
    with admin_entry, `osh-demo` (PROJECT by password) and `osh-admin` instead."""
    pw = copy.deepcopy(demo_entry)
    pw["auth"].update(username=PROJECT, password=password, project_name=PROJECT,
                      user_domain_name="Default", project_domain_name="Default")
    for key in ("project_id", "tenant_id", "tenant_name", "user_id"):
        pw["auth"].pop(key, None)
    pw.setdefault("region_name", "RegionOne")
    pw.setdefault("interface", "public")
    pw.setdefault("identity_api_version", 3)
    clouds = {PROJECT: pw}
    if appcred is not None:
        ac = {k: copy.deepcopy(v) for k, v in demo_entry.items() if k not in ("auth", "auth_type")}
        ac["auth_type"] = "v3applicationcredential"
        ac["auth"] = {"auth_url": demo_entry["auth"]["auth_url"],
                      "application_credential_id": appcred[0],
                      "application_credential_secret": appcred[1]}
        ac.setdefault("region_name", "RegionOne")
        clouds[f"{PROJECT}-appcred"] = ac
    if admin_entry is not None:
        clouds = {"osh-demo": pw, "osh-admin": copy.deepcopy(admin_entry)}
    tmp = out + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump({"clouds": clouds}, f, default_flow_style=False, sort_keys=False)
    os.chmod(tmp, 0o600)
    os.replace(tmp, out)


def connect(path, cloud):
    # The loader reads the file OS_CLIENT_CONFIG_FILE names before any other it is given.
    os.environ["OS_CLIENT_CONFIG_FILE"] = path
    return openstack.connect(cloud=cloud)


def project_and_user(admin):
    """Step 1: project, user (a new password every run), roles as demo has on demo."""
    identity = admin.identity
    domain = identity.find_domain("Default", ignore_missing=False)
    demo = identity.find_project("demo", domain_id=domain.id, ignore_missing=False)
    project = identity.find_project(PROJECT, domain_id=domain.id) or identity.create_project(
        name=PROJECT, domain_id=domain.id,
        description="another tenant for verda's real-cloud tests")
    password = secrets.token_urlsafe(24)
    user = identity.find_user(PROJECT, domain_id=domain.id)
    if user is None:
        user = identity.create_user(name=PROJECT, domain_id=domain.id,
                                    default_project_id=project.id, password=password)
    else:
        identity.update_user(user, password=password)
    demo_user = identity.find_user("demo", domain_id=domain.id, ignore_missing=False)

    def roles_of(user_id, project_id):
        return {a.role["id"] for a in identity.role_assignments(
            user_id=user_id, scope_project_id=project_id)}

    wanted = roles_of(demo_user.id, demo.id)
    if not wanted:
        fail("the demo user has no roles on demo")
    for role_id in wanted - roles_of(user.id, project.id):
        identity.assign_project_role_to_user(project, user, role_id)
    names = sorted(identity.get_role(r).name for r in wanted)
    log(f"{PROJECT}: project and user ready, roles: {' '.join(names)}")
    return demo, project, password


def share_private_with_demo_only(admin, tenant, demo_conn, demo, project):
    """Step 2a: a network named `private` that the project sees but does not own is shared
    with demo only (see the top of this file)."""
    for net in tenant.network.networks(name="private"):
        if net.project_id == project.id:
            continue
        for rbac in admin.network.rbac_policies(object_type="network", object_id=net.id,
                                                action="access_as_shared"):
            if rbac.target_project_id != "*":
                continue
            demo_policy = list(admin.network.rbac_policies(
                object_type="network", object_id=net.id, action="access_as_shared",
                target_project_id=demo.id))
            if net.project_id != demo.id and not demo_policy:
                admin.network.create_rbac_policy(object_type="network", object_id=net.id,
                                                 action="access_as_shared",
                                                 target_project_id=demo.id)
            admin.network.delete_rbac_policy(rbac)
            log(f"network private {net.id} (project {net.project_id}) was shared with every "
                "project; now with demo only")
    foreign = [n.id for n in tenant.network.networks(name="private") if n.project_id != project.id]
    if foreign:
        fail(f"{PROJECT} still sees another network named private: {' '.join(foreign)}")
    seen = (len(list(demo_conn.network.networks(name="private"))),
            len(list(demo_conn.network.subnets(name="private-subnet"))))
    if seen != (1, 1):
        fail("demo does not see exactly one network private and one subnet private-subnet")


def own_network(tenant):
    """Step 2b: the project's own network and subnet, and the flavor and image it boots."""
    nets = list(tenant.network.networks(name="private"))
    if len(nets) > 1:
        fail(f"{PROJECT} has several networks named private")
    net = nets[0] if nets else tenant.network.create_network(name="private")
    subnets = list(tenant.network.subnets(name="private-subnet"))
    if len(subnets) > 1:
        fail(f"{PROJECT} has several subnets named private-subnet")
    if not subnets:
        gateway = CIDR.rsplit(".", 1)[0] + ".1"
        tenant.network.create_subnet(name="private-subnet", network_id=net.id, ip_version=4,
                                    cidr=CIDR, gateway_ip=gateway)
    if tenant.compute.find_flavor("m1.tiny") is None:
        fail(f"{PROJECT} cannot see flavor m1.tiny")
    if tenant.image.find_image("cirros") is None:
        fail(f"{PROJECT} cannot see image cirros")
    return net


def quotas(admin, project):
    """Step 2c: at least 20 instances (cores and RAM to match), 10 server groups, 10 LBs."""
    q = admin.compute.get_quota_set(project.id)
    instances, groups, members = q.instances, q.server_groups, q.server_group_members

    def below(limit, floor):
        return 0 <= limit < floor

    if below(instances, 20) or below(groups, 10) or below(members, 20):
        admin.compute.update_quota_set(project.id, instances=100, cores=400, ram=1024000,
                                       server_groups=100, server_group_members=100)
        log(f"{PROJECT} compute quotas raised from {instances} instances / {groups} server "
            f"groups / {members} members to 100 / 100 / 100")
    lbs = admin.load_balancer.get_quota(project.id).load_balancers
    if lbs is not None and 0 <= lbs < 10:
        admin.load_balancer.update_quota(project.id, load_balancers=100)
        log(f"{PROJECT} load balancer quota raised from {lbs} to 100")


def application_credential(tenant):
    """Step 3: made anew (its secret is shown only when it is made)."""
    user_id = tenant.current_user_id
    old = tenant.identity.find_application_credential(user_id, f"verda-{PROJECT}")
    if old is not None:
        tenant.identity.delete_application_credential(user_id, old)
    made = tenant.identity.create_application_credential(
        user_id, f"verda-{PROJECT}", description="verda operator, real-cloud tests")
    if not made.id or not made.secret:
        fail("application credential: no id/secret")
    return made.id, made.secret


def main():
    global PROJECT, CIDR
    args = sys.argv[1:]
    as_demo = "--as-demo" in args
    args = [a for a in args if a != "--as-demo"]
    if len(args) not in (1, 3):
        fail("usage: real_tenant.py OUT_CLOUDS_YAML [PROJECT CIDR [--as-demo]]")
    out = args[0]
    if len(args) == 3:
        PROJECT, CIDR = args[1], args[2]
    src = os.environ.get("OS_CLIENT_CONFIG_FILE", "/opt/osharness/run/clouds.yaml")
    started = time.monotonic()
    with open(src) as f:
        clouds = yaml.safe_load(f)["clouds"]
    demo_entry = clouds["osh-demo"]
    admin = connect(src, "osh-admin")
    demo_conn = connect(src, "osh-demo")
    demo, project, password = project_and_user(admin)
    write_clouds(demo_entry, out, password)
    tenant = connect(out, PROJECT)
    share_private_with_demo_only(admin, tenant, demo_conn, demo, project)
    net = own_network(tenant)
    quotas(admin, project)
    if as_demo:
        write_clouds(demo_entry, out, password, admin_entry=clouds["osh-admin"])
        made = f"clouds osh-demo ({PROJECT}) and osh-admin"
    else:
        write_clouds(demo_entry, out, password, application_credential(tenant))
        made = f"clouds {PROJECT} and {PROJECT}-appcred"
    log(f"{PROJECT} ready in {time.monotonic() - started:.0f} s: project {PROJECT} {project.id} "
        f"(network private {net.id}), project demo {demo.id}; {made} in {out}")


if __name__ == "__main__":
    main()
