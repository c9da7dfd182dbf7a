//! A LoadBalancer's `spec.dns`, applied as a user applies it: the name holds the VIP
//! (its floating IP when public) in Designate and is reported ACTIVE; a record set
//! deleted behind the operator's back is put back; an entry removed from the spec takes
//! its record set along; a name someone else holds is reported and left alone; a zone
//! the project lacks is reported; deleting the LoadBalancer deletes its names first.
//! A VirtualMachine's name holds its server's address through a replacement, is put
//! back when changed by hand, and goes with it. A group's replica whose server fails
//! leaves the group's name before that server is deleted and comes back with its
//! declared address.

use crate::support;

use std::collections::HashSet;
use std::time::Duration;

use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::v1alpha1::{DnsRecordStatus, LoadBalancer, VirtualMachine, VirtualMachineGroup};
use verda_operator::cloud::ids::DnsZoneId;
use verda_operator::cloud::model::dns::{CreateRecordSet, UpdateRecordSet};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(30);
const LB: &str = "loadbalancer-sample";
const ZONE: &str = "example.test.";

/// The published LoadBalancer on literal addresses, with `dns` (YAML flow style).
fn manifest(vip_type: &str, dns: &str) -> String {
    sample("loadbalancer.yaml")
        .replace(
            "vipType: private",
            &format!("vipType: {vip_type}\n  dns: {dns}"),
        )
        .replace(
            "virtualMachineGroupRef: virtualmachinegroup-sample",
            "addresses: [\"10.0.0.5\"]",
        )
        .replace("zone: dev", "zone: dev\n  vipSubnet: private-subnet")
}

async fn dns_rows(
    env: &Env,
    what: &str,
    check: impl Fn(&[DnsRecordStatus]) -> bool,
) -> LoadBalancer {
    let api = env.api::<LoadBalancer>();
    eventually(what, LIMIT, || async {
        let lb = api.get(LB).await.ok()?;
        let rows = lb
            .status
            .as_ref()
            .map(|s| s.dns.clone())
            .unwrap_or_default();
        check(&rows).then_some(lb)
    })
    .await
}

/// Deletes `name` and waits until it is gone (its finalizer let go).
async fn deleted<K>(api: &Api<K>, name: &str)
where
    K: Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    api.delete(name, &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually(&format!("{name} is gone"), LIMIT, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

/// The A record sets of `name` in the zone, as (records, description).
fn a_records(env: &Env, name: &str) -> Vec<(Vec<String>, Option<String>)> {
    env.sim
        .dns_records(ZONE)
        .into_iter()
        .filter(|(n, t, _, _)| n == name && t == "A")
        .map(|(_, _, records, description)| (records, description))
        .collect()
}

#[tokio::test]
async fn a_name_holds_the_floating_ip_is_put_back_and_goes_with_its_entry_and_object() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.sim.add_dns_zone(ZONE);
    let dns = "[{zone: example.test., name: www, ttl: 300}, {zone: example.test., name: api}]";
    let _: LoadBalancer = env.create_from_yaml(&manifest("public", dns)).await;
    let lb = dns_rows(&env, "both names ACTIVE", |rows| {
        rows.len() == 2 && rows.iter().all(|r| r.status == "ACTIVE")
    })
    .await;
    let status = lb.status.expect("status");
    let fip = status.floating_ip.clone().expect("a floating IP");
    assert_eq!(status.dns[0].name, "www.example.test.");
    assert_eq!(status.dns[0].type_.as_deref(), Some("A"));
    assert_eq!(status.dns[0].records, std::slice::from_ref(&fip));
    let uid = lb.metadata.uid.expect("uid");
    let www = a_records(&env, "www.example.test.");
    assert_eq!(www.len(), 1, "one record set, no duplicate: {www:?}");
    assert_eq!(www[0].0, std::slice::from_ref(&fip));
    let record = www[0].1.clone().expect("the owner record");
    assert!(
        record.starts_with(&format!("verda-uid-{uid} verda-cluster-")),
        "{record}"
    );

    // Deleted by hand: put back within a resync.
    let designate = env.cloud().dns(None);
    let zone = designate.find_zone(ZONE).await.expect("zone");
    let sets = named(designate.as_ref(), &zone.id, "api.example.test.").await;
    designate
        .delete_record_set(&zone.id, &sets[0].id)
        .await
        .expect("deleted by hand");
    eventually("api.example.test. put back", LIMIT, || async {
        (a_records(&env, "api.example.test.").len() == 1).then_some(())
    })
    .await;
    env.event_seen("DNSRecordCreated").await;

    // An entry removed from the spec takes its record set along.
    let patch = json!({"spec": {"dns": [{"zone": ZONE, "name": "www", "ttl": 300}]}});
    env.api::<LoadBalancer>()
        .patch(LB, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patched");
    dns_rows(&env, "only www reported", |rows| rows.len() == 1).await;
    assert!(
        a_records(&env, "api.example.test.").is_empty(),
        "api.example.test. deleted"
    );
    env.event_seen("DNSRecordDeleted").await;

    // The object deleted: its names first, then the load balancer; the zone stays.
    deleted(&env.api::<LoadBalancer>(), LB).await;
    assert!(
        a_records(&env, "www.example.test.").is_empty(),
        "www deleted with its object"
    );
    let left: Vec<String> = env
        .sim
        .dns_records(ZONE)
        .into_iter()
        .map(|(_, t, _, _)| t)
        .collect();
    assert_eq!(left, ["NS", "SOA"]);
}

#[tokio::test]
async fn a_name_held_by_another_and_a_missing_zone_are_reported_and_nothing_is_changed() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let zone = DnsZoneId::new(env.sim.add_dns_zone(ZONE));
    let by_hand = CreateRecordSet {
        name: "www.example.test.".to_owned(),
        type_: "A".to_owned(),
        records: vec!["192.0.2.99".to_owned()],
        ttl: None,
        description: "made by hand".to_owned(),
    };
    env.cloud()
        .dns(None)
        .create_record_set(&zone, &by_hand)
        .await
        .expect("made by hand");
    let dns = "[{zone: example.test., name: www}, {zone: missing.test., name: www}]";
    let _: LoadBalancer = env.create_from_yaml(&manifest("private", dns)).await;
    let lb = dns_rows(&env, "both names reported", |rows| {
        rows.len() == 2
            && rows[0].status == "RecordOwnedByAnother"
            && rows[1].status == "ZoneNotFound"
    })
    .await;
    let rows = lb.status.expect("status").dns;
    let message = rows[0].message.clone().unwrap_or_default();
    assert!(
        message.contains("did not make") && message.contains("www.example.test."),
        "{message}"
    );
    assert!(
        rows[1]
            .message
            .clone()
            .unwrap_or_default()
            .contains("missing.test.")
    );
    let www = a_records(&env, "www.example.test.");
    assert_eq!(
        www,
        [(
            vec!["192.0.2.99".to_owned()],
            Some("made by hand".to_owned())
        )]
    );

    deleted(&env.api::<LoadBalancer>(), LB).await;
    assert_eq!(
        a_records(&env, "www.example.test.").len(),
        1,
        "another's record set kept"
    );
}

#[tokio::test]
async fn a_virtual_machine_name_follows_its_replacement_and_goes_with_it() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.sim.add_dns_zone(ZONE);
    let manifest = sample("virtualmachine.yaml").replace(
        "spec:\n",
        "spec:\n  dns: [{zone: example.test., name: db-admin, ttl: 60}]\n",
    );
    let _: VirtualMachine = env.create_from_yaml(&manifest).await;
    let api = env.api::<VirtualMachine>();
    let first = eventually("db-admin ACTIVE", LIMIT, || async {
        let s = api.get("vm-sample").await.ok()?.status?;
        (s.dns.len() == 1 && s.dns[0].status == "ACTIVE").then_some(s)
    })
    .await;
    let address = first.primary_ip.clone().expect("a primary address");
    assert_eq!(first.dns[0].records, std::slice::from_ref(&address));
    assert_eq!(
        a_records(&env, "db-admin.example.test.")[0].0,
        std::slice::from_ref(&address)
    );

    // The server goes behind the operator's back: the name holds the replacement's
    // address (the simulator hands the freed address out again).
    let old = first.server_id.clone().expect("a server");
    env.sim.delete_server_out_of_band(&old);
    let second = eventually(
        "db-admin holds the replacement's address",
        LIMIT,
        || async {
            let s = api.get("vm-sample").await.ok()?.status?;
            let ip = s.primary_ip.clone()?;
            let replaced = s.server_id.as_deref() != Some(old.as_str())
                && s.state.as_deref() == Some("ACTIVE");
            let records = a_records(&env, "db-admin.example.test.");
            (replaced && records.len() == 1 && records[0].0 == std::slice::from_ref(&ip))
                .then_some(ip)
        },
    )
    .await;

    // Its address changed by hand: put back.
    let designate = env.cloud().dns(None);
    let zone = designate.find_zone(ZONE).await.expect("zone");
    let sets = named(designate.as_ref(), &zone.id, "db-admin.example.test.").await;
    let wrong = UpdateRecordSet {
        records: vec!["192.0.2.1".to_owned()],
        ttl: Some(60),
    };
    designate
        .update_record_set(&zone.id, &sets[0].id, &wrong)
        .await
        .expect("changed by hand");
    eventually(
        "db-admin holds the server's address again",
        LIMIT,
        || async {
            (a_records(&env, "db-admin.example.test.")[0].0 == [second.clone()]).then_some(())
        },
    )
    .await;
    env.event_seen("DNSRecordUpdated").await;

    deleted(&api, "vm-sample").await;
    assert!(
        a_records(&env, "db-admin.example.test.").is_empty(),
        "deleted with its object"
    );
}

/// The serving replicas' record set and each replica's own: a scale-down takes the
/// replica's address out of `db` before the replica is deleted, and `db-2` goes with it.
#[tokio::test]
async fn a_group_name_holds_its_serving_replicas_and_drops_one_before_it_goes() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.sim.add_dns_zone(ZONE);
    let manifest = sample("virtualmachinegroup.yaml")
        .replace("replicas: 2", "replicas: 3")
        .replace(
            "  description: \"generated operator\"",
            "  description: \"generated operator\"\n  dns: [{zone: example.test., name: db, ttl: 30, perReplica: true}]",
        );
    let _: VirtualMachineGroup = env.create_from_yaml(&manifest).await;
    let vms = env.api::<VirtualMachine>();
    let group = "virtualmachinegroup-sample";
    let addresses = eventually("db holds the three replicas", LIMIT, || async {
        let mut ips = Vec::new();
        for i in 0..3 {
            let s = vms.get(&format!("{group}-{i}")).await.ok()?.status?;
            let ip = s.primary_ip.clone()?;
            (s.dns.len() == 1 && s.dns[0].records == std::slice::from_ref(&ip)).then_some(())?;
            ips.push(ip);
        }
        let mut held = a_records(&env, "db.example.test.").first()?.0.clone();
        held.sort();
        let mut want = ips.clone();
        want.sort();
        (held == want).then_some(ips)
    })
    .await;
    for (i, ip) in addresses.iter().enumerate() {
        let own = a_records(&env, &format!("db-{i}.example.test."));
        assert_eq!(own.len(), 1, "db-{i}: {own:?}");
        assert_eq!(own[0].0, std::slice::from_ref(ip));
    }
    let groups = env.api::<VirtualMachineGroup>();
    let reported = groups
        .get(group)
        .await
        .expect("group")
        .status
        .expect("status")
        .dns;
    assert_eq!(reported.len(), 1);
    assert_eq!(reported[0].name, "db.example.test.");

    // Idle: the group and its three replicas name one zone, which is listed once per
    // resync (2 s here) for all four, not once per object.
    let before = env.sim.request_counts();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let calls = support::e2e::calls_since(&env.sim, &before);
    let listings = calls
        .get("dns/list_record_sets")
        .copied()
        .unwrap_or_default();
    assert!(
        (1..=4).contains(&listings),
        "{listings} zone listings in 3 resyncs: {calls:?}"
    );
    let writes: u64 = [
        "create_record_set",
        "update_record_set",
        "delete_record_set",
    ]
    .iter()
    .filter_map(|op| calls.get(&format!("dns/{op}")))
    .sum();
    assert_eq!(writes, 0, "nothing changed, nothing written: {calls:?}");

    // 3 -> 2: replica 2 leaves db before it is deleted, and db-2 goes with it.
    env.scale(group, 2).await;
    let leaving = addresses[2].clone();
    eventually("replica 2 gone, db and db-2 without it", LIMIT, || async {
        let vm = vms.get_opt(&format!("{group}-2")).await.ok()?;
        let held = a_records(&env, "db.example.test.").first()?.0.clone();
        let going = vm
            .as_ref()
            .is_none_or(|vm| vm.metadata.deletion_timestamp.is_some());
        assert!(
            !(going && held.contains(&leaving)),
            "replica 2 is being deleted while db still holds its address: {held:?}"
        );
        let own_gone = a_records(&env, "db-2.example.test.").is_empty();
        (vm.is_none() && held.len() == 2 && own_gone).then_some(())
    })
    .await;

    deleted(&groups, group).await;
    let left: Vec<String> = env
        .sim
        .dns_records(ZONE)
        .into_iter()
        .map(|(_, t, _, _)| t)
        .collect();
    assert_eq!(left, ["NS", "SOA"], "every name went with the group");
}

/// A LoadBalancer deleted with `reconcile-policy: skip` leaves its name: the orphan
/// inventory finds it (and nothing else of the zone) and deletes it.
#[tokio::test]
async fn an_abandoned_name_is_an_orphan_the_inventory_deletes() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.sim.add_dns_zone(ZONE);
    let dns = "[{zone: example.test., name: www}]";
    let _: LoadBalancer = env.create_from_yaml(&manifest("private", dns)).await;
    dns_rows(&env, "www ACTIVE", |rows| {
        rows.len() == 1 && rows[0].status == "ACTIVE"
    })
    .await;
    let skip =
        json!({"metadata": {"annotations": {"verda.linecorp.com/reconcile-policy": "skip"}}});
    let lbs = env.api::<LoadBalancer>();
    lbs.patch(LB, &PatchParams::default(), &Patch::Merge(&skip))
        .await
        .expect("annotated");
    eventually("paused", LIMIT, || async {
        let s = lbs.get(LB).await.ok()?.status?;
        verda_api::conditions::find_condition(&s.conditions, "Paused").map(drop)
    })
    .await;
    deleted(&lbs, LB).await;
    assert_eq!(
        a_records(&env, "www.example.test.").len(),
        1,
        "left as it was"
    );

    let cluster = &env.ctx.cluster;
    let listing = verda_operator::orphans::list(env.cloud().as_ref(), cluster)
        .await
        .expect("listed");
    let orphans = verda_operator::orphans::classify(&listing, cluster, &HashSet::new());
    let kinds: Vec<&str> = orphans.iter().map(|o| o.kind.as_str()).collect();
    assert!(kinds.contains(&"dns-record-set"), "{orphans:?}");
    let names: Vec<&str> = orphans
        .iter()
        .filter(|o| o.kind.as_str() == "dns-record-set")
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(names.len(), 1, "only www, never NS or SOA: {names:?}");
    assert!(names[0].starts_with("www.example.test. A "), "{names:?}");
    let deleted = verda_operator::orphans::delete(env.cloud().as_ref(), &orphans).await;
    assert!(deleted.iter().all(|(_, r)| r.is_ok()), "{deleted:?}");
    assert!(
        a_records(&env, "www.example.test.").is_empty(),
        "the orphan is deleted"
    );
}

/// The record sets of this fully qualified name in `zone`, as an admin would list them.
async fn named(
    designate: &dyn verda_operator::cloud::Dns,
    zone: &verda_operator::cloud::ids::DnsZoneId,
    name: &str,
) -> Vec<verda_operator::cloud::model::dns::RecordSet> {
    let listed = designate.list_zone_record_sets(zone).await.expect("listed");
    listed.into_iter().filter(|s| s.name == name).collect()
}

#[tokio::test]
async fn a_replaced_replica_leaves_the_name_and_comes_back_with_its_declared_address() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.sim.add_dns_zone(ZONE);
    crate::e2e_addresses::own_network(&env, "db-net").await;
    let yaml = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: db}\nspec:\n  replicas: 3\n  template:\n    image: centos79\n    flavor: n3-1vcpu-2gb\n    ports: [{network: db-net}]\n  addresses: [{network: db-net, from: 10.20.0.50}]\n  dns: [{zone: example.test., name: db, ttl: 30, perReplica: true}]\n";
    let _: VirtualMachineGroup = env.create_from_yaml(yaml).await;
    let all = ["10.20.0.50", "10.20.0.51", "10.20.0.52"].map(str::to_owned);
    let holds = |want: &[String]| {
        let mut held = a_records(&env, "db.example.test.")
            .first()
            .map(|(r, _)| r.clone())
            .unwrap_or_default();
        held.sort();
        held == want
    };
    eventually("db holds the three declared addresses", LIMIT, || async {
        holds(&all).then_some(())
    })
    .await;
    let vms = env.api::<VirtualMachine>();
    let first = vms.get("db-1").await.expect("db-1").status.expect("status");
    let first = first.server_id.expect("a server");

    // db-1's server fails: replaced, and db drops .51 while it does not serve.
    env.sim.set_server_error(&first);
    let left = std::cell::Cell::new(false);
    eventually("db-1 replaced and back in db", LIMIT, || async {
        let vm = vms.get("db-1").await.ok()?;
        let status = vm.status?;
        let replaced = status.server_id.as_deref().is_some_and(|id| id != first);
        let servers = env.sim.servers();
        let old_going = servers
            .iter()
            .find(|s| s.id == first)
            .is_none_or(|s| s.deleting);
        let new_serving = servers
            .iter()
            .any(|s| s.name == "db-1" && s.id != first && !s.deleting && s.status == "ACTIVE");
        let held = a_records(&env, "db.example.test.").first()?.0.clone();
        assert!(
            !(old_going && !new_serving && held.contains(&all[1])),
            "db-1's server is being deleted while db holds its address: {held:?}"
        );
        left.set(left.get() || !held.contains(&all[1]));
        (replaced && holds(&all)).then_some(())
    })
    .await;
    assert!(
        left.get(),
        "db dropped db-1's address while it was replaced"
    );
    let own = a_records(&env, "db-1.example.test.");
    assert_eq!(own.len(), 1, "{own:?}");
    assert_eq!(
        own[0].0,
        std::slice::from_ref(&all[1]),
        "db-1 keeps its address"
    );
}
