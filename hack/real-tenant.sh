# shellcheck shell=bash
# A second OpenStack project ("tenant") on the real OpenStack of ../shared/real-systems,
# for multi-tenant end-to-end tests. Sourced by hack/real-systems.sh; defines
#
#   make_tenant OUT_CLOUDS_YAML
#
# which, on a running OpenStack started by openstack/start.sh (fresh or not), makes
#   - project `team-b` (domain Default) and user `team-b` with a random password, holding
#     on team-b exactly the roles the demo user holds on demo (member, reader,
#     load-balancer_member);
#   - as team-b: network `private` with subnet `private-subnet` (10.1.0.0/24), so that the
#     operator's default configuration (networks [private], VIP subnet private-subnet)
#     works unchanged for both projects;
#   - compute quotas like demo's (100 instances, 100 server groups, 100 members per group)
#     when they are below 20 / 10 / 20 (Nova's defaults are 10 / 10 / 10); Octavia's
#     default is unlimited load balancers, raised to 100 only if a limit below 10 is set;
#   - application credential `verda-team-b` of team-b (recreated on every call: its
#     secret cannot be read back; the password is regenerated on every call too, which
#     revokes team-b's existing password tokens);
# and writes OUT_CLOUDS_YAML (mode 600) with clouds `team-b` (password) and
# `team-b-appcred` (v3applicationcredential). Passwords and secrets never reach the log.
#
# The shared network. start.sh creates `private`/`private-subnet` in the *admin* project
# with shared=True (a wildcard access_as_shared RBAC policy), so every project sees it.
# With team-b's own `private` next to it, team-b would see two networks named `private`
# and two subnets named `private-subnet`, and name lookups would be ambiguous. So the
# wildcard policy is replaced by one that shares the network with demo only: demo keeps
# seeing exactly the network it always saw (still `shared: true` for demo), team-b sees
# only its own.
#
# Uses OSC, CLOUDS and log from hack/real-systems.sh when they are set. About 70 s on a
# fresh OpenStack, 40 s again (each openstack CLI call costs 1.5-3 s of start-up).
# The password and secret travel in environment variables to the Python that writes the
# file; only `user create/set --password` puts the password on a command line (briefly
# visible in ps, acceptable on this single-user test machine).

# _rt_os CLOUDS_FILE CLOUD ARGS...: one openstack CLI call against one cloud.
_rt_os() {
  local file=$1 cloud=$2; shift 2
  env -u OS_CLOUD -u OS_AUTH_URL -u OS_USERNAME -u OS_PASSWORD -u OS_PROJECT_NAME \
    -u OS_PROJECT_ID -u OS_TOKEN -u OS_AUTH_TYPE \
    OS_CLIENT_CONFIG_FILE="$file" \
    "${OSC:-/opt/osharness/venv/bin/openstack}" --os-cloud "$cloud" "$@"
}

# _rt_write_clouds SRC OUT: OUT gets cloud `team-b` (password auth) and, when
# RT_APPCRED_ID is set, cloud `team-b-appcred`, both copied from the osh-demo entry of
# SRC (auth_url and every other key it has: region_name, interface, cacert, verify, ...).
# Secrets come in through the environment (RT_PASSWORD, RT_APPCRED_*), never argv.
_rt_write_clouds() {
  local src=$1 out=$2 py
  py="$(dirname "${OSC:-/opt/osharness/venv/bin/openstack}")/python3"
  (umask 077; RT_SRC=$src RT_OUT=$out "$py" - <<'EOF'
import copy, os, yaml
with open(os.environ["RT_SRC"]) as f:
    demo = yaml.safe_load(f)["clouds"]["osh-demo"]
pw = copy.deepcopy(demo)
pw["auth"].update(username="team-b", password=os.environ["RT_PASSWORD"],
                  project_name="team-b", user_domain_name="Default",
                  project_domain_name="Default")
for k in ("project_id", "tenant_id", "tenant_name", "user_id"):
    pw["auth"].pop(k, None)
pw.setdefault("region_name", "RegionOne")
pw.setdefault("interface", "public")
pw.setdefault("identity_api_version", 3)
clouds = {"team-b": pw}
if os.environ.get("RT_APPCRED_ID"):
    ac = {k: copy.deepcopy(v) for k, v in demo.items() if k not in ("auth", "auth_type")}
    ac["auth_type"] = "v3applicationcredential"
    ac["auth"] = {"auth_url": demo["auth"]["auth_url"],
                  "application_credential_id": os.environ["RT_APPCRED_ID"],
                  "application_credential_secret": os.environ["RT_APPCRED_SECRET"]}
    ac.setdefault("region_name", "RegionOne")
    clouds["team-b-appcred"] = ac
tmp = os.environ["RT_OUT"] + ".tmp"
fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
with os.fdopen(fd, "w") as f:
    yaml.safe_dump({"clouds": clouds}, f, default_flow_style=False, sort_keys=False)
os.chmod(tmp, 0o600)
os.replace(tmp, os.environ["RT_OUT"])
EOF
  )
}

make_tenant() {
  local out=${1:?usage: make_tenant OUT_CLOUDS_YAML}
  local src=${CLOUDS:-/opt/osharness/run/clouds.yaml}
  declare -F log >/dev/null || log() { echo "[real-tenant] $*" >&2; }
  local t0=$SECONDS
  # (bash functions are global: prefixed names, they read make_tenant's locals)
  _rt_admin() { _rt_os "$src" osh-admin "$@"; }
  _rt_teamb() { _rt_os "$out" team-b "$@"; }

  # 1. project, user (fresh random password on every call), roles as demo has on demo
  local demo_id project_id user_id
  demo_id=$(_rt_admin project show demo --domain Default -f value -c id)
  project_id=$(_rt_admin project show team-b --domain Default -f value -c id 2>/dev/null) ||
    project_id=$(_rt_admin project create team-b --domain Default \
      --description "second tenant for verda multi-tenant tests" -f value -c id)
  local RT_PASSWORD
  RT_PASSWORD=$(head -c 48 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | cut -c1-32)
  export RT_PASSWORD
  if user_id=$(_rt_admin user show team-b --domain Default -f value -c id 2>/dev/null); then
    _rt_admin user set --password "$RT_PASSWORD" "$user_id" >/dev/null
  else
    user_id=$(_rt_admin user create team-b --domain Default --project "$project_id" \
      --password "$RT_PASSWORD" -f value -c id)
  fi
  local roles role have
  roles=$(_rt_admin role assignment list --names --user demo --user-domain Default \
    --project demo --project-domain Default -f value -c Role)
  [[ -n $roles ]] || { log "the demo user has no roles on demo"; return 1; }
  have=" $(_rt_admin role assignment list --names --user "$user_id" --project "$project_id" \
    -f value -c Role | tr '\n' ' ') "
  for role in $roles; do
    [[ $have == *" $role "* ]] ||
      _rt_admin role add --user "$user_id" --project "$project_id" "$role" >/dev/null
  done
  log "team-b: project and user ready, roles: $(echo $roles)"
  _rt_write_clouds "$src" "$out"

  # 2. networking. A network named `private` that team-b sees but does not own is shared
  # with every project (start.sh's, owned by admin): share it with demo only instead
  # (see the top of this file).
  local foreign net_id owner rbac
  foreign=$(_rt_teamb network list --long --name private -f value -c ID -c Project |
    awk -v p="$project_id" '$2 != p')
  while read -r net_id owner; do
    [[ -n $net_id ]] || continue
    for rbac in $(_rt_admin network rbac list --type network --action access_as_shared \
        -f value -c ID -c "Object ID" | awk -v n="$net_id" '$2 == n {print $1}'); do
      [[ $(_rt_admin network rbac show "$rbac" -f value -c target_project_id) == "*" ]] || continue
      if [[ $owner != "$demo_id" ]] && ! _rt_admin network rbac list --type network \
          --action access_as_shared --target-project "$demo_id" -f value -c "Object ID" |
          grep -qx "$net_id"; then
        _rt_admin network rbac create --type network --action access_as_shared \
          --target-project "$demo_id" "$net_id" -f value -c id >/dev/null
      fi
      _rt_admin network rbac delete "$rbac"
      log "network private $net_id (project $owner) was shared with every project; now with demo only"
    done
  done <<<"$foreign"
  if [[ -n $foreign ]]; then
    foreign=$(_rt_teamb network list --long --name private -f value -c ID -c Project |
      awk -v p="$project_id" '$2 != p {print $1}')
    [[ -z $foreign ]] || { log "team-b still sees another network named private: $foreign"; return 1; }
    [[ $(_rt_os "$src" osh-demo network list --name private -f value -c ID | wc -l) == 1 &&
       $(_rt_os "$src" osh-demo subnet list --name private-subnet -f value -c ID | wc -l) == 1 ]] ||
      { log "demo does not see exactly one network private and one subnet private-subnet"; return 1; }
  fi
  local subnets
  net_id=$(_rt_teamb network list --name private -f value -c ID)
  [[ -n $net_id ]] || net_id=$(_rt_teamb network create private -f value -c id)
  [[ $net_id != *[[:space:]]* ]] || { log "team-b has several networks named private"; return 1; }
  subnets=$(_rt_teamb subnet list --name private-subnet -f value -c ID)
  [[ -n $subnets ]] || _rt_teamb subnet create private-subnet --network "$net_id" \
    --subnet-range 10.1.0.0/24 --gateway 10.1.0.1 -f value -c id >/dev/null
  [[ $subnets != *[[:space:]]* ]] || { log "team-b has several subnets named private-subnet"; return 1; }
  _rt_teamb flavor show m1.tiny -f value -c id >/dev/null || { log "team-b cannot see flavor m1.tiny"; return 1; }
  _rt_teamb image show cirros -f value -c id >/dev/null || { log "team-b cannot see image cirros"; return 1; }

  # quotas: at least 20 instances (cores/RAM to match), 10 server groups, 10 LBs
  local instances groups members lbs
  read -r instances groups members < <(_rt_admin quota show --compute "$project_id" \
    -f value -c Resource -c Limit | awk '$1=="instances"{i=$2} $1=="server-groups"{g=$2}
      $1=="server-group-members"{m=$2} END {print i, g, m}')
  [[ $instances =~ ^-?[0-9]+$ && $groups =~ ^-?[0-9]+$ && $members =~ ^-?[0-9]+$ ]] ||
    { log "team-b compute quotas unreadable: '$instances' '$groups' '$members'"; return 1; }
  if (( instances >= 0 && instances < 20 || groups >= 0 && groups < 10 || members >= 0 && members < 20 )); then
    _rt_admin quota set --instances 100 --cores 400 --ram 1024000 --server-groups 100 \
      --server-group-members 100 "$project_id"
    log "team-b compute quotas raised from $instances instances / $groups server groups / $members members to 100 / 100 / 100"
  fi
  lbs=$(_rt_admin loadbalancer quota show "$project_id" -f value -c load_balancer)
  if [[ $lbs != -1 && $lbs != None ]] && (( lbs < 10 )); then
    _rt_admin loadbalancer quota set --loadbalancer 100 "$project_id" >/dev/null
    log "team-b load balancer quota raised from $lbs to 100"
  fi

  # 3. application credential (its secret is only shown at creation: recreate it)
  local appcred RT_APPCRED_ID RT_APPCRED_SECRET
  _rt_teamb application credential delete verda-team-b >/dev/null 2>&1 || true
  # -f shell prints rt_id="..." and rt_secret="..." (the secret is URL-safe base64)
  appcred=$(_rt_teamb application credential create verda-team-b \
    --description "verda operator, multi-tenant tests" -f shell --prefix rt_ -c id -c secret)
  RT_APPCRED_ID=$(sed -n 's/^rt_id="\(.*\)"$/\1/p' <<<"$appcred")
  RT_APPCRED_SECRET=$(sed -n 's/^rt_secret="\(.*\)"$/\1/p' <<<"$appcred")
  appcred=
  [[ -n $RT_APPCRED_ID && -n $RT_APPCRED_SECRET ]] || { log "application credential: no id/secret"; return 1; }
  export RT_APPCRED_ID RT_APPCRED_SECRET

  # 4. the clouds file
  _rt_write_clouds "$src" "$out"
  unset RT_PASSWORD RT_APPCRED_ID RT_APPCRED_SECRET

  # 5. who is who
  log "team-b ready in $((SECONDS - t0)) s: project team-b $project_id (network private $net_id), project demo $demo_id; clouds team-b and team-b-appcred in $out"
}
