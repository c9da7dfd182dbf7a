//! Crash safety end to end: for each published scenario, the controllers are stopped
//! right after the 1st, 2nd, … create call the scenario makes — the cloud resource
//! exists, the status write that records it never happened — and fresh controllers are
//! started on the same cluster and cloud. Each time the scenario must converge with
//! exactly one cloud resource per owner, status recording it, nothing without an owner,
//! and deleting the objects must leave the cloud empty.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use kube::api::{DeleteParams, ListParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use support::crash::{CrashingCloud, Tripwire};
use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{HaPolicy, LoadBalancer, VipType, VirtualMachine, VirtualMachineGroup};
use verda_operator::cloud::owner::{META_UID, is_server_group_of, port_owner, uid_from_tags};
use verda_operator::sim::{SimConfig, Simulator};

const LIMIT: Duration = Duration::from_secs(20);
/// More creates than any scenario makes: a run that never converges untripped fails.
const MAX_CREATES: usize = 40;

/// Published manifests, applied in this order and deleted in the reverse one, each
/// passed through `edit` first.
struct Scenario {
    name: &'static str,
    samples: &'static [&'static str],
    edit: fn(String) -> String,
}

/// The Designate zone the DNS scenario names (made in the simulator before each run).
const ZONE: &str = "example.test.";

fn as_published(manifest: String) -> String {
    manifest
}

/// The published LoadBalancer with a public VIP: a floating IP joins the creates.
fn public_vip(manifest: String) -> String {
    manifest
        .replace("vipType: private", "vipType: public")
        .replace("zone: dev", "zone: dev\n  vipSubnet: private-subnet")
}

/// The published VirtualMachine with two data volumes, deleted with it.
fn with_volumes(manifest: String) -> String {
    format!(
        "{}\n  volumes: [{{name: data, size: 1}}, {{name: logs, size: 1}}]\n  volumeRetention: {{whenDeleted: Delete}}\n",
        manifest.trim_end()
    )
}

/// The published group, each replica with a data volume, deleted with the group.
fn group_with_volumes(manifest: String) -> String {
    manifest.replace(
        "  template:\n",
        "  volumeRetention: {whenDeleted: Delete}\n  template:\n    volumes: [{name: data, size: 1}]\n",
    )
}

#[tokio::test]
async fn virtual_machine_survives_a_crash_after_every_create() {
    crash_after_every_create(Scenario {
        name: "vm",
        samples: &["virtualmachine.yaml"],
        edit: as_published,
    })
    .await;
}

#[tokio::test]
async fn virtual_machine_group_survives_a_crash_after_every_create() {
    crash_after_every_create(Scenario {
        name: "group",
        samples: &["virtualmachinegroup.yaml"],
        edit: as_published,
    })
    .await;
}

#[tokio::test]
async fn virtual_machine_with_volumes_survives_a_crash_after_every_create_and_attach() {
    crash_after_every_create(Scenario {
        name: "vm-volumes",
        samples: &["virtualmachine.yaml"],
        edit: with_volumes,
    })
    .await;
}

#[tokio::test]
async fn group_with_volumes_survives_a_crash_after_every_create_and_attach() {
    crash_after_every_create(Scenario {
        name: "group-volumes",
        samples: &["virtualmachinegroup.yaml"],
        edit: group_with_volumes,
    })
    .await;
}

/// The published group, each replica on a declared port (kept per index) with a
/// floating IP, deleted with the group.
fn group_with_ports(manifest: String) -> String {
    manifest.replace(
        "  template:\n",
        "  template:\n    ports: [{network: private}]\n    floatingIP: {network: public}\n",
    )
}

#[tokio::test]
async fn group_with_ports_survives_a_crash_after_every_create() {
    crash_after_every_create(Scenario {
        name: "group-ports",
        samples: &["virtualmachinegroup.yaml"],
        edit: group_with_ports,
    })
    .await;
}

#[tokio::test]
async fn load_balancer_survives_a_crash_after_every_create() {
    crash_after_every_create(Scenario {
        name: "lb",
        samples: &["virtualmachinegroup.yaml", "loadbalancer.yaml"],
        edit: as_published,
    })
    .await;
}

/// The published group and LoadBalancer with DNS names: the LoadBalancer's VIP as
/// `www`, the group's serving replicas as `db` and each replica as `db-<n>`.
fn named(manifest: String) -> String {
    manifest
        .replace(
            "vipType: private",
            "vipType: private\n  dns: [{zone: example.test., name: www}]",
        )
        .replace(
            "  template:\n",
            "  dns: [{zone: example.test., name: db, perReplica: true}]\n  template:\n",
        )
}

#[tokio::test]
async fn named_load_balancer_and_group_survive_a_crash_after_every_create() {
    crash_after_every_create(Scenario {
        name: "dns",
        samples: &["virtualmachinegroup.yaml", "loadbalancer.yaml"],
        edit: named,
    })
    .await;
}

#[tokio::test]
async fn public_load_balancer_survives_a_crash_after_every_create() {
    crash_after_every_create(Scenario {
        name: "public-lb",
        samples: &["virtualmachinegroup.yaml", "loadbalancer.yaml"],
        edit: public_vip,
    })
    .await;
}

/// k = 1, 2, … until a run converges before its `k`th create.
async fn crash_after_every_create(scenario: Scenario) {
    for k in 1..=MAX_CREATES {
        if !crash_after(&scenario, k).await {
            return;
        }
    }
    panic!(
        "{}: still creating after {MAX_CREATES} creates",
        scenario.name
    );
}

/// One run crashed after the `k`th create; false when the scenario converged first.
async fn crash_after(scenario: &Scenario, k: usize) -> bool {
    let wire = Tripwire::armed(k);
    let mut env = Env::start_with(SimConfig::fast(), test_timing(), |client| {
        Arc::new(CrashingCloud::new(client, wire.clone()))
    })
    .await;
    env.sim.add_dns_zone(ZONE);
    for name in scenario.samples {
        apply(&env, &(scenario.edit)(sample(name))).await;
    }
    // Converged with fewer than k creates made: nothing left to crash after. A
    // LoadBalancer is Ready as soon as its pools hold the members it knows of, which can
    // be before the group's servers are up: only pools holding every VirtualMachine mean
    // no member update (a create here) is still to come.
    let untripped = async {
        eventually("converged or tripped", LIMIT, || async {
            let objects = Objects::load(&env).await;
            (wire.creates().len() < k && objects.all_ready() && objects.pools_hold_every_vm())
                .then_some(())
        })
        .await
    };
    let tripped = tokio::select! {
        op = wire.tripped() => Some(op),
        () = untripped => None,
    };
    if tripped.is_some() {
        env.restart().await;
    }
    let objects = wait_consistent(&env, scenario, k, tripped).await;
    let made = creates_made(&env.sim, &objects, &format!("{} k={k}", scenario.name));
    let summary = format!(
        "{}, {}, {}, {}; creates: {made}",
        counted(live_servers(&env.sim).len(), "server"),
        counted(env.sim.server_groups().len(), "server group"),
        counted(env.sim.load_balancers().len(), "load balancer"),
        counted(env.sim.floating_ips().len(), "floating IP"),
    ) + &format!(", {}", counted(env.sim.volumes().len(), "volume"));
    delete_all(&env, scenario).await;
    match tripped {
        Some(op) => println!(
            "CRASH {} k={k} after {op}: converged, {summary}; deleted, nothing left",
            scenario.name
        ),
        None => println!(
            "CRASH {} k={k}: converged after {} without a crash, {summary}; deleted, nothing left",
            scenario.name,
            counted(wire.creates().len(), "create")
        ),
    }
    tripped.is_some()
}

fn counted(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Creates the object of a published manifest, by its kind.
async fn apply(env: &Env, yaml: &str) {
    let doc: serde_json::Value = serde_saphyr::from_str(yaml).expect("valid manifest");
    match doc["kind"].as_str() {
        Some("VirtualMachine") => drop(env.create_from_yaml::<VirtualMachine>(yaml).await),
        Some("VirtualMachineGroup") => {
            drop(env.create_from_yaml::<VirtualMachineGroup>(yaml).await)
        }
        Some("LoadBalancer") => drop(env.create_from_yaml::<LoadBalancer>(yaml).await),
        other => panic!("no scenario support for kind {other:?}"),
    }
}

/// Every object of the namespace (those being deleted left out).
struct Objects {
    vms: Vec<VirtualMachine>,
    groups: Vec<VirtualMachineGroup>,
    lbs: Vec<LoadBalancer>,
}

async fn list<K>(env: &Env) -> Vec<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned,
{
    env.api::<K>()
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter(|o| o.meta().deletion_timestamp.is_none())
        .collect()
}

impl Objects {
    async fn load(env: &Env) -> Self {
        Self {
            vms: list(env).await,
            groups: list(env).await,
            lbs: list(env).await,
        }
    }

    /// Every pool of every LoadBalancer lists every VirtualMachine (the scenarios'
    /// LoadBalancers draw all their ports from the one group).
    fn pools_hold_every_vm(&self) -> bool {
        self.lbs.iter().all(|lb| {
            lb.status
                .as_ref()
                .is_some_and(|s| s.ports.iter().all(|p| p.members.len() == self.vms.len()))
        })
    }

    fn all_ready(&self) -> bool {
        let ready = |c: Option<&Vec<_>>| c.is_some_and(|c| is_true(c, READY));
        !(self.vms.is_empty() && self.groups.is_empty() && self.lbs.is_empty())
            && self
                .vms
                .iter()
                .all(|o| ready(o.status.as_ref().map(|s| &s.conditions)))
            && self
                .groups
                .iter()
                .all(|o| ready(o.status.as_ref().map(|s| &s.conditions)))
            && self
                .lbs
                .iter()
                .all(|o| ready(o.status.as_ref().map(|s| &s.conditions)))
    }
}

fn live_servers(sim: &Simulator) -> Vec<verda_operator::sim::SimServer> {
    sim.live_servers()
}

/// Waits until every object is Ready and the cloud holds exactly what they own.
async fn wait_consistent(
    env: &Env,
    scenario: &Scenario,
    k: usize,
    tripped: Option<&str>,
) -> Objects {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let objects = Objects::load(env).await;
        let mut problems = inconsistencies(&objects, &env.sim);
        if !objects.all_ready() {
            problems.push("not every object is Ready".into());
        }
        if problems.is_empty() {
            return objects;
        }
        if tokio::time::Instant::now() > deadline {
            panic!(
                "{} k={k} (crash after {tripped:?}): after {LIMIT:?}: {problems:#?}",
                scenario.name
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Duplicates, orphans and unrecorded resources, one line each.
fn inconsistencies(objects: &Objects, sim: &Simulator) -> Vec<String> {
    let mut problems = Vec::new();
    let servers = live_servers(sim);
    let uids = |list: Vec<Option<String>>| list.into_iter().flatten().collect::<Vec<_>>();
    let vm_uids = uids(objects.vms.iter().map(|o| o.uid()).collect());
    for vm in &objects.vms {
        let uid = vm.uid().unwrap_or_default();
        let own: Vec<_> = servers
            .iter()
            .filter(|s| s.metadata.get(META_UID) == Some(&uid))
            .collect();
        let recorded = vm.status.as_ref().and_then(|s| s.server_id.as_deref());
        match own.as_slice() {
            [one] if recorded == Some(one.id.as_str()) => {}
            [one] => problems.push(format!(
                "VirtualMachine {} records server {recorded:?}, owns {}",
                vm.name_any(),
                one.id
            )),
            _ => problems.push(format!(
                "VirtualMachine {} owns {} live servers",
                vm.name_any(),
                own.len()
            )),
        }
    }
    for s in &servers {
        if !s
            .metadata
            .get(META_UID)
            .is_some_and(|u| vm_uids.contains(u))
        {
            problems.push(format!(
                "server {} ({}) has no VirtualMachine",
                s.id, s.name
            ));
        }
    }

    let server_groups = sim.server_groups();
    let group_uids = uids(objects.groups.iter().map(|o| o.uid()).collect());
    for group in &objects.groups {
        let uid = group.uid().unwrap_or_default();
        let own: Vec<_> = server_groups
            .iter()
            .filter(|g| is_server_group_of(&g.name, &uid))
            .collect();
        let wanted = usize::from(group.spec.ha_policy != HaPolicy::None);
        let recorded = group
            .status
            .as_ref()
            .and_then(|s| s.server_group_id.as_deref());
        if own.len() != wanted {
            problems.push(format!(
                "VirtualMachineGroup {} owns {} server groups",
                group.name_any(),
                own.len()
            ));
        } else if recorded != own.first().map(|g| g.id.as_str()) {
            problems.push(format!(
                "VirtualMachineGroup {} records server group {recorded:?}",
                group.name_any()
            ));
        }
    }
    for g in &server_groups {
        if !group_uids.iter().any(|u| is_server_group_of(&g.name, u)) {
            problems.push(format!(
                "server group {} has no VirtualMachineGroup",
                g.name
            ));
        }
    }

    let lbs = sim.load_balancers();
    let lb_uids = uids(objects.lbs.iter().map(|o| o.uid()).collect());
    for lb in &objects.lbs {
        let uid = lb.uid().unwrap_or_default();
        let own: Vec<_> = lbs
            .iter()
            .filter(|l| uid_from_tags(&l.tags) == Some(uid.as_str()))
            .collect();
        let recorded = lb
            .status
            .as_ref()
            .and_then(|s| s.load_balancer_id.as_deref());
        let [one] = own.as_slice() else {
            problems.push(format!(
                "LoadBalancer {} owns {} load balancers",
                lb.name_any(),
                own.len()
            ));
            continue;
        };
        if recorded != Some(one.id.as_str()) {
            problems.push(format!(
                "LoadBalancer {} records load balancer {recorded:?}, owns {}",
                lb.name_any(),
                one.id
            ));
        }
        let ports = lb.spec.ports.len();
        if one.listeners.len() != ports || one.pools.len() != ports {
            problems.push(format!(
                "LoadBalancer {}: {} ports, {} listeners, {} pools",
                lb.name_any(),
                ports,
                one.listeners.len(),
                one.pools.len()
            ));
        }
    }
    for l in &lbs {
        if !uid_from_tags(&l.tags).is_some_and(|u| lb_uids.iter().any(|x| x == u)) {
            problems.push(format!("load balancer {} has no LoadBalancer", l.id));
        }
    }
    problems.extend(volume_inconsistencies(objects, sim));
    problems.extend(port_inconsistencies(objects, sim));
    problems.extend(dns_inconsistencies(objects, sim));
    let public = objects
        .lbs
        .iter()
        .filter(|lb| lb.spec.vip_type == VipType::Public)
        .count();
    let vms = objects
        .vms
        .iter()
        .filter(|vm| vm.spec.floating_ip.is_some());
    let public = public + vms.count();
    let fips = sim.floating_ips();
    if fips.len() != public {
        problems.push(format!(
            "{} floating IPs for {public} public LoadBalancers and VirtualMachines",
            fips.len()
        ));
    }
    problems
}

/// Each declared data volume exactly once, attached to its VirtualMachine's recorded
/// server; no volume whose owner (VirtualMachine, or group for a replica) is gone.
fn volume_inconsistencies(objects: &Objects, sim: &Simulator) -> Vec<String> {
    let mut problems = Vec::new();
    let volumes: Vec<_> = sim.volumes().into_iter().filter(|v| !v.bootable).collect();
    let mut owners: Vec<String> = objects.vms.iter().filter_map(|o| o.uid()).collect();
    owners.extend(objects.groups.iter().filter_map(|o| o.uid()));
    for vm in &objects.vms {
        let server = vm.status.as_ref().and_then(|s| s.server_id.clone());
        for spec in vm.spec.volumes.iter().flatten() {
            let name = format!("{}-{}", vm.name_any(), spec.name);
            let own: Vec<_> = volumes.iter().filter(|v| v.name == name).collect();
            match own.as_slice() {
                [one] if one.attached_to.as_ref().map(|a| &a.0) == server.as_ref() => {}
                [one] => problems.push(format!(
                    "volume {name} is attached to {:?}, not {server:?}",
                    one.attached_to
                )),
                _ => problems.push(format!("{} volumes named {name}", own.len())),
            }
        }
    }
    for v in &volumes {
        if !v.metadata.get(META_UID).is_some_and(|u| owners.contains(u)) {
            problems.push(format!("volume {} ({}) has no owner", v.id, v.name));
        }
    }
    problems
}

/// Each declared port exactly once, bound to its VirtualMachine's recorded server; no
/// port recording an owner (a group's replica index) that is gone.
fn port_inconsistencies(objects: &Objects, sim: &Simulator) -> Vec<String> {
    let mut problems = Vec::new();
    let ports: Vec<_> = sim
        .ports()
        .into_iter()
        .filter(|p| p.description.starts_with("verda-uid-"))
        .collect();
    for vm in objects.vms.iter().filter(|vm| vm.spec.ports.is_some()) {
        let server = vm.status.as_ref().and_then(|s| s.server_id.clone());
        let group = vm.owner_references().first().map(|r| r.uid.clone());
        let index = vm
            .name_any()
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok());
        let owner = group.or(vm.uid()).unwrap_or_default();
        let record = (owner.as_str(), index);
        let own: Vec<_> = ports
            .iter()
            .filter(|p| port_owner(&p.description).is_some_and(|(u, i, _)| (u, i) == record))
            .collect();
        match own.as_slice() {
            [one] if Some(&one.device_id) == server.as_ref() => {}
            [one] => problems.push(format!(
                "port {} of {} is bound to {:?}, not {server:?}",
                one.id,
                vm.name_any(),
                one.device_id
            )),
            _ => problems.push(format!("{} ports record {record:?}", own.len())),
        }
        if vm.spec.floating_ip.is_some() {
            let fips = sim.floating_ips();
            let on: Vec<_> = fips
                .iter()
                .filter(|f| {
                    own.iter()
                        .any(|p| f.port_id.as_deref() == Some(p.id.as_str()))
                })
                .collect();
            if on.len() != 1 || fips.iter().any(|f| f.port_id.is_none()) {
                problems.push(format!(
                    "{} floating IPs on the port of {}",
                    on.len(),
                    vm.name_any()
                ));
            }
        }
    }
    let mut owners: Vec<String> = objects.vms.iter().filter_map(|o| o.uid()).collect();
    owners.extend(objects.groups.iter().filter_map(|o| o.uid()));
    for p in &ports {
        let owner = port_owner(&p.description).map(|(u, _, _)| u.to_owned());
        if !owner.is_some_and(|u| owners.contains(&u)) {
            problems.push(format!("port {} ({}) has no owner", p.id, p.description));
        }
    }
    problems
}

/// Every name asked for has exactly one record set of its owner holding what it should
/// have, and every record set recording an owner has one.
fn dns_inconsistencies(objects: &Objects, sim: &Simulator) -> Vec<String> {
    let mut problems = Vec::new();
    let sets = sim.dns_records(ZONE);
    let ours: Vec<_> = sets
        .iter()
        .filter_map(|(name, type_, _, d)| Some((name, type_, port_owner(d.as_deref()?)?)))
        .collect();
    let mut owners: Vec<String> = Vec::new();
    owners.extend(objects.vms.iter().filter_map(|o| o.uid()));
    owners.extend(objects.groups.iter().filter_map(|o| o.uid()));
    owners.extend(objects.lbs.iter().filter_map(|o| o.uid()));
    for (name, type_, (uid, _, _)) in &ours {
        if !owners.iter().any(|o| o == uid) {
            problems.push(format!("record set {name} {type_} has no owner ({uid})"));
        }
    }
    let wanted = dns_names(objects);
    for name in &wanted {
        let n = ours.iter().filter(|(set, _, _)| *set == name).count();
        if n != 1 {
            problems.push(format!("{name}: {n} record sets of ours"));
        }
    }
    if ours.len() > wanted.len() {
        problems.push(format!(
            "{} record sets for {} names",
            ours.len(),
            wanted.len()
        ));
    }
    problems
}

/// The fully qualified names the objects ask for.
fn dns_names(objects: &Objects) -> Vec<String> {
    let vms = objects
        .vms
        .iter()
        .flat_map(|o| o.spec.dns.iter().map(|n| n.fqdn()));
    let groups = objects
        .groups
        .iter()
        .flat_map(|o| o.spec.dns.iter().map(|n| n.shared().fqdn()));
    let lbs = objects
        .lbs
        .iter()
        .flat_map(|o| o.spec.dns.iter().map(|n| n.fqdn()));
    vms.chain(groups).chain(lbs).collect()
}

/// The create requests the cloud received for each kind of resource, checked against
/// one per owner: a duplicate made and later removed counts too.
fn creates_made(sim: &Simulator, objects: &Objects, run: &str) -> String {
    let volumes: usize = objects
        .vms
        .iter()
        .map(|vm| vm.spec.volumes.as_ref().map_or(0, Vec::len))
        .sum();
    let ports: usize = objects
        .vms
        .iter()
        .map(|vm| vm.spec.ports.as_ref().map_or(0, Vec::len))
        .sum();
    let counts = [
        ("network", "create_port", ports),
        ("compute", "create_server", objects.vms.len()),
        ("compute", "create_server_group", objects.groups.len()),
        ("load-balancer", "create_load_balancer", objects.lbs.len()),
        ("block-storage", "create_volume", volumes),
        ("dns", "create_record_set", dns_names(objects).len()),
    ];
    let mut made = Vec::new();
    for (service, op, owners) in counts {
        let n = sim.requests(service, op);
        assert_eq!(
            n as usize, owners,
            "{run}: {op}: {n} requests for {owners} owners"
        );
        if n > 0 {
            made.push(format!("{op}×{n}"));
        }
    }
    made.join(" ")
}

/// Deletes the scenario's objects and waits until they and every cloud resource are gone.
async fn delete_all(env: &Env, scenario: &Scenario) {
    for name in scenario.samples.iter().rev() {
        let doc: serde_json::Value = serde_saphyr::from_str(&sample(name)).expect("valid manifest");
        let object = doc["metadata"]["name"].as_str().expect("a name");
        match doc["kind"].as_str() {
            Some("VirtualMachine") => delete::<VirtualMachine>(env, object).await,
            Some("VirtualMachineGroup") => delete::<VirtualMachineGroup>(env, object).await,
            Some("LoadBalancer") => delete::<LoadBalancer>(env, object).await,
            other => panic!("no scenario support for kind {other:?}"),
        }
    }
    eventually("every object is gone", LIMIT, || async {
        let left = env
            .api::<VirtualMachine>()
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .len()
            + env
                .api::<VirtualMachineGroup>()
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .len()
            + env
                .api::<LoadBalancer>()
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .len();
        (left == 0).then_some(())
    })
    .await;
    eventually("the cloud is empty", LIMIT, || async {
        (env.sim.servers().is_empty()
            && env.sim.volumes().is_empty()
            && env.sim.server_groups().is_empty()
            && env.sim.load_balancers().is_empty()
            && env.sim.floating_ips().is_empty()
            && env.sim.dns_records(ZONE).len() == 2
            && env
                .sim
                .ports()
                .iter()
                .all(|p| !p.description.starts_with("verda-uid-")))
        .then_some(())
    })
    .await;
}

async fn delete<K>(env: &Env, name: &str)
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned,
{
    env.api::<K>()
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete accepted");
}
