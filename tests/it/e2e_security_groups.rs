//! SecurityGroup, applied as a user applies it: the Neutron group with its rules, an
//! address group holding the replicas of the group a rule names, kept in step through a
//! scale and a replacement without any rule written; a rule deleted by hand comes back,
//! an edited port range is one new rule and one deleted; a VirtualMachine naming it
//! waits until it is Ready and boots in it; deleting it waits (`InUse`) while the
//! VirtualMachine's port is in it, then leaves nothing in Neutron. A crash after any
//! create leaves no duplicate; `spec.import` takes over a group made by hand.

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::crash::{CrashingCloud, Tripwire};
use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{SecurityGroup, VirtualMachine, VirtualMachineGroup};
use verda_operator::cloud::model::firewall::{
    AddressGroup, CreateFirewall, CreateRule, Firewall, Remote, RuleShape,
};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(30);

const DB: &str = "apiVersion: verda.linecorp.com/v1alpha1
kind: SecurityGroup
metadata: {name: db}
spec:
  description: database tier
  rules:
    - {direction: ingress, protocol: tcp, ports: \"5432\", from: {virtualMachineGroup: web}}
    - {direction: ingress, protocol: tcp, ports: \"9100-9110\", from: {cidr: 10.0.0.0/8}}
    - {direction: ingress, protocol: tcp, ports: \"5432\", from: {securityGroup: db}}
    - {direction: ingress, protocol: icmp}
";

fn web() -> String {
    sample("virtualmachinegroup.yaml")
        .replace("virtualmachinegroup-sample", "web")
        .replace("replicas: 2", "replicas: 3")
}

fn db_vm() -> String {
    sample("virtualmachine.yaml")
        .replace("vm-sample", "db-0")
        .replace("  description:", "  securityGroups: [db]\n  description:")
}

async fn ready_group(env: &Env) -> SecurityGroup {
    eventually("the SecurityGroup is Ready", LIMIT, || async {
        let sg = env.api::<SecurityGroup>().get("db").await.ok()?;
        is_true(&sg.status.as_ref()?.conditions, READY).then_some(sg)
    })
    .await
}

async fn firewall(env: &Env, id: &str) -> Firewall {
    let firewalls = env.cloud().firewalls(None);
    firewalls.get_security_group(id).await.expect("shown")
}

async fn address_group(env: &Env) -> Option<AddressGroup> {
    let firewalls = env.cloud().firewalls(None);
    let listed = firewalls.address_groups_named("db-from-web").await.ok()?;
    listed.into_iter().next()
}

fn rule_ids(f: &Firewall) -> BTreeSet<String> {
    f.security_group_rules
        .iter()
        .map(|r| r.id.clone())
        .collect()
}

/// The addresses of the group's replicas, as their statuses report them.
async fn replica_addresses(env: &Env) -> BTreeSet<String> {
    let vms = env
        .api::<VirtualMachine>()
        .list(&Default::default())
        .await
        .expect("listed");
    vms.items
        .iter()
        .filter(|vm| {
            vm.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("web-"))
        })
        .filter_map(|vm| vm.status.as_ref()?.primary_ip.clone())
        .map(|ip| format!("{ip}/32"))
        .collect()
}

async fn addresses_follow(env: &Env, n: usize) -> BTreeSet<String> {
    eventually(
        &format!("the address group holds {n} replicas"),
        LIMIT,
        || async {
            let wanted = replica_addresses(env).await;
            let held: BTreeSet<String> = address_group(env).await?.addresses.into_iter().collect();
            (wanted.len() == n && held == wanted).then_some(held)
        },
    )
    .await
}

#[tokio::test]
async fn rules_follow_the_spec_and_the_address_group_follows_the_replicas() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachine = env.create_from_yaml(&db_vm()).await;
    let _: SecurityGroup = env.create_from_yaml(DB).await;
    let _: VirtualMachineGroup = env.create_from_yaml(&web()).await;
    let sg = ready_group(&env).await;
    let id = sg
        .status
        .as_ref()
        .and_then(|s| s.id.clone())
        .expect("an ID");
    let made = firewall(&env, &id).await;
    assert_eq!(made.name, "db");
    assert!(
        made.description.ends_with(" database tier"),
        "{}",
        made.description
    );
    // Four declared rules and Neutron's two default egress rules.
    assert_eq!(
        made.security_group_rules.len(),
        6,
        "{:?}",
        made.security_group_rules
    );
    let held = addresses_follow(&env, 3).await;
    let ag = address_group(&env).await.expect("the address group");
    assert!(
        made.security_group_rules
            .iter()
            .any(|r| r.remote_address_group_id.as_deref() == Some(ag.id.as_str()))
    );
    let status = env
        .api::<SecurityGroup>()
        .get("db")
        .await
        .expect("got")
        .status
        .expect("status");
    assert_eq!(status.rules.len(), 4, "{:?}", status.rules);
    assert!(
        status.rules.iter().all(|r| r.id.is_some()),
        "{:?}",
        status.rules
    );
    assert_eq!(status.address_groups[0].addresses.len(), held.len());

    // The VirtualMachine waited for it and boots in it.
    let _ = env.ready_vm("db-0").await;
    let firewalls = env.cloud().firewalls(None);
    assert_eq!(firewalls.ports_using(&id).await.expect("listed").len(), 1);

    // A scale to 5: addresses change, rules do not.
    let before = rule_ids(&made);
    env.scale("web", 5).await;
    addresses_follow(&env, 5).await;
    assert_eq!(rule_ids(&firewall(&env, &id).await), before);

    // A rule deleted by hand comes back (as a new rule) within a resync.
    let icmp = made
        .security_group_rules
        .iter()
        .find(|r| r.protocol.as_deref() == Some("icmp"))
        .expect("the icmp rule");
    firewalls
        .delete_rule(&icmp.id)
        .await
        .expect("deleted by hand");
    let healed = eventually("the icmp rule is back", LIMIT, || async {
        let now = firewall(&env, &id).await;
        let back = now
            .security_group_rules
            .iter()
            .any(|r| r.protocol.as_deref() == Some("icmp"));
        back.then_some(now)
    })
    .await;

    // An edited port range: one rule created, one deleted.
    let before = rule_ids(&healed);
    let patch = json!({"spec": {"rules": [
        {"direction": "ingress", "protocol": "tcp", "ports": "5432", "from": {"virtualMachineGroup": "web"}},
        {"direction": "ingress", "protocol": "tcp", "ports": "9100-9120", "from": {"cidr": "10.0.0.0/8"}},
        {"direction": "ingress", "protocol": "tcp", "ports": "5432", "from": {"securityGroup": "db"}},
        {"direction": "ingress", "protocol": "icmp"},
    ]}});
    let api = env.api::<SecurityGroup>();
    api.patch("db", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("edit accepted");
    let after = eventually("the range follows", LIMIT, || async {
        let now = firewall(&env, &id).await;
        let wide = now
            .security_group_rules
            .iter()
            .any(|r| r.port_range_max == Some(9120));
        let narrow = now
            .security_group_rules
            .iter()
            .any(|r| r.port_range_max == Some(9110));
        (wide && !narrow).then(|| rule_ids(&now))
    })
    .await;
    assert_eq!(after.difference(&before).count(), 1);
    assert_eq!(before.difference(&after).count(), 1);

    // Deleting it waits while db-0's port is in it.
    api.delete("db", &DeleteParams::default())
        .await
        .expect("delete accepted");
    env.event_seen("InUse").await;
    assert_eq!(firewall(&env, &id).await.id, id, "kept while in use");
    env.api::<VirtualMachine>()
        .delete("db-0", &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually(
        "the SecurityGroup and its address group are gone",
        LIMIT,
        || async {
            let gone = api.get_opt("db").await.ok()?.is_none();
            let neutron_gone = firewalls.get_security_group(&id).await.is_err();
            (gone && neutron_gone && address_group(&env).await.is_none()).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn a_replaced_replica_swaps_its_address_and_writes_no_rule() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: SecurityGroup = env.create_from_yaml(DB).await;
    let _: VirtualMachineGroup = env.create_from_yaml(&web()).await;
    let sg = ready_group(&env).await;
    let id = sg
        .status
        .as_ref()
        .and_then(|s| s.id.clone())
        .expect("an ID");
    let before = addresses_follow(&env, 3).await;
    let rules = rule_ids(&firewall(&env, &id).await);
    // The server of web-1 deleted in Nova: the group replaces it.
    let vm = env
        .api::<VirtualMachine>()
        .get("web-1")
        .await
        .expect("web-1");
    let server = vm
        .status
        .as_ref()
        .and_then(|s| s.server_id.clone())
        .expect("a server");
    let compute = env.cloud().compute();
    compute
        .delete_server(&verda_operator::cloud::ids::ServerId::new(server.clone()))
        .await
        .expect("deleted by hand");
    let api = env.api::<VirtualMachine>();
    eventually(
        "web-1 has a new server in the address group",
        LIMIT,
        || async {
            let vm = api.get("web-1").await.ok()?;
            let status = vm.status.as_ref()?;
            let replaced = status.server_id.as_deref().is_some_and(|id| id != server);
            let now = replica_addresses(&env).await;
            let held: BTreeSet<String> = address_group(&env).await?.addresses.into_iter().collect();
            (replaced && status.primary_ip.is_some() && now.len() == 3 && held == now).then_some(())
        },
    )
    .await;
    // The simulator gives the lowest free address: the replacement may take the same.
    assert_eq!(before.len(), 3);
    assert_eq!(rule_ids(&firewall(&env, &id).await), rules);
}

/// A crash right after each create of a SecurityGroup's (the group, its address group,
/// its first rule): after the restart there is one of each, found by its owner record.
#[tokio::test]
async fn a_crash_after_any_create_leaves_no_duplicate() {
    for (armed, create) in [
        (1, "create_security_group"),
        (2, "create_address_group"),
        (3, "create_rule"),
    ] {
        let wire = Tripwire::armed(armed);
        let mut env = Env::start_with(SimConfig::fast(), test_timing(), |client| {
            Arc::new(CrashingCloud::new(client, wire.clone()))
        })
        .await;
        let _: SecurityGroup = env.create_from_yaml(DB).await;
        assert_eq!(wire.tripped().await, create);
        env.restart().await;
        let sg = ready_group(&env).await;
        let id = sg
            .status
            .as_ref()
            .and_then(|s| s.id.clone())
            .expect("an ID");
        let firewalls = env.cloud().firewalls(None);
        let named = firewalls.security_groups_named("db").await.expect("listed");
        assert_eq!(named.len(), 1, "one group after a crash at {create}");
        let groups = firewalls
            .address_groups_named("db-from-web")
            .await
            .expect("listed");
        assert_eq!(
            groups.len(),
            1,
            "one address group after a crash at {create}"
        );
        let rules = firewall(&env, &id).await.security_group_rules;
        assert_eq!(
            rules.len(),
            6,
            "no rule twice after a crash at {create}: {rules:?}"
        );
    }
}

/// `spec.import` takes over a group made by hand: it gets the owner record, its rules
/// become the declared ones (the hand-made rule goes, Neutron's default egress stays),
/// and no second group is made.
#[tokio::test]
async fn an_imported_group_gets_the_record_and_the_declared_rules() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let firewalls = env.cloud().firewalls(None);
    let by_hand = CreateFirewall {
        name: "legacy".into(),
        description: "made by hand".into(),
        stateful: None,
    };
    let made = firewalls
        .create_security_group(&by_hand)
        .await
        .expect("made by hand");
    let ssh = CreateRule {
        security_group_id: made.id.clone(),
        shape: RuleShape {
            direction: "ingress".into(),
            ethertype: "IPv4".into(),
            protocol: Some("tcp".into()),
            ports: Some((22, 22)),
            remote: Remote::Anyone,
        },
        description: None,
    };
    firewalls.create_rule(&ssh).await.expect("a rule by hand");
    let manifest = format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: SecurityGroup\nmetadata: {{name: legacy}}\nspec:\n  import: {{id: {}}}\n  rules:\n    - {{direction: ingress, protocol: icmp}}\n",
        made.id
    );
    let _: SecurityGroup = env.create_from_yaml(&manifest).await;
    let sg = eventually("the imported SecurityGroup is Ready", LIMIT, || async {
        let sg = env.api::<SecurityGroup>().get("legacy").await.ok()?;
        is_true(&sg.status.as_ref()?.conditions, READY).then_some(sg)
    })
    .await;
    assert_eq!(sg.status.and_then(|s| s.id), Some(made.id.clone()));
    let taken = firewall(&env, &made.id).await;
    assert!(
        taken.description.starts_with("verda-uid-"),
        "{}",
        taken.description
    );
    let shapes: Vec<_> = taken
        .security_group_rules
        .iter()
        .map(|r| r.shape())
        .collect();
    assert_eq!(
        shapes.len(),
        3,
        "icmp and the two default egress: {shapes:?}"
    );
    assert!(
        shapes.iter().all(|s| s.ports != Some((22, 22))),
        "{shapes:?}"
    );
    let named = firewalls
        .security_groups_named("legacy")
        .await
        .expect("listed");
    assert_eq!(named.len(), 1, "no second group");
    env.event_seen("Imported").await;
}
