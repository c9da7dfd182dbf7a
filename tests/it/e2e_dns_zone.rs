//! DNSZone, applied as a user applies it: the zone is made in Designate with the
//! owner record, reported Ready with its ID, serial and name servers, its TTL put back
//! when edited; a LoadBalancer names it; deleting the DNSZone waits while the
//! LoadBalancer's name is in it and deletes the zone once it is gone and Designate has
//! published its removal. A zone made by hand is refused (`ZoneOwnedByAnother`) and
//! taken over with `spec.import`; a crash after the create leaves one zone, found again
//! by its owner record.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::crash::{CrashingCloud, Tripwire};
use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::conditions::{READY, find_condition, is_true};
use verda_api::v1alpha1::{DNSZone, LoadBalancer};
use verda_operator::cloud::model::dns::{CreateZone, DnsZone};
use verda_operator::runtime::Timing;
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(30);
const ZONE: &str = "example.test.";

fn manifest(extra: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: DNSZone\nmetadata: {{name: example}}\nspec:\n  name: {ZONE}\n  email: hostmaster@example.test\n  ttl: 600\n{extra}"
    )
}

/// The project's zones of `ZONE`, as an admin lists them.
async fn zones(env: &Env) -> Vec<DnsZone> {
    let dns = env.cloud().dns(None);
    dns.zones_named(ZONE).await.expect("listed")
}

async fn until_ready(env: &Env) -> DNSZone {
    eventually("the DNSZone is Ready", LIMIT, || async {
        let zone = env.api::<DNSZone>().get("example").await.ok()?;
        let status = zone.status.as_ref()?;
        (is_true(&status.conditions, READY) && !status.nameservers.is_empty()).then_some(zone)
    })
    .await
}

async fn ready_reason(env: &Env) -> Option<String> {
    let zone = env.api::<DNSZone>().get("example").await.ok()?;
    let ready = find_condition(&zone.status?.conditions, READY)?.clone();
    Some(ready.reason)
}

#[tokio::test]
async fn a_zone_is_made_kept_named_and_deleted_once_no_name_is_left_in_it() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: DNSZone = env.create_from_yaml(&manifest("")).await;
    let obj = until_ready(&env).await;
    let status = obj.status.clone().expect("status");
    let made = zones(&env).await;
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(status.id.as_deref(), Some(made[0].id.as_str()));
    assert_eq!(status.status.as_deref(), Some("ACTIVE"));
    assert!(status.serial.is_some());
    assert_eq!(status.nameservers, ["ns1.osharness.test."]);
    let uid = obj.metadata.uid.clone().expect("uid");
    let record = made[0].description.clone().expect("the owner record");
    assert!(record.starts_with(&format!("verda-uid-{uid} ")), "{record}");

    // Its TTL edited: Designate follows.
    let patch = json!({"spec": {"ttl": 1200}});
    let api = env.api::<DNSZone>();
    api.patch("example", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("edit accepted");
    eventually("the TTL follows", LIMIT, || async {
        (zones(&env).await.first()?.ttl == Some(1200)).then_some(())
    })
    .await;

    // A LoadBalancer's name in it holds its deletion back.
    deleted_after_its_last_name(&env).await;
}

/// A LoadBalancer named `www` in the zone; the DNSZone deleted, kept while the name is
/// in it, and gone with its zone once the LoadBalancer is deleted.
async fn deleted_after_its_last_name(env: &Env) {
    let lb = sample("loadbalancer.yaml")
        .replace(
            "vipType: private",
            "vipType: private\n  dns: [{zone: example.test., name: www}]",
        )
        .replace(
            "virtualMachineGroupRef: virtualmachinegroup-sample",
            "addresses: [\"10.0.0.5\"]",
        )
        .replace("zone: dev", "zone: dev\n  vipSubnet: private-subnet");
    let _: LoadBalancer = env.create_from_yaml(&lb).await;
    eventually("www is in the zone", LIMIT, || async {
        let names = env.sim.dns_records(ZONE);
        names
            .iter()
            .any(|(n, t, _, _)| n == "www.example.test." && t == "A")
            .then_some(())
    })
    .await;
    let api = env.api::<DNSZone>();
    api.delete("example", &DeleteParams::default())
        .await
        .expect("delete accepted");
    env.event_seen("ZoneNotEmpty").await;
    assert_eq!(zones(env).await.len(), 1, "kept while www is in it");
    env.api::<LoadBalancer>()
        .delete("loadbalancer-sample", &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually("the zone and the DNSZone are gone", LIMIT, || async {
        let gone = api.get_opt("example").await.ok()?.is_none();
        (gone && zones(env).await.is_empty()).then_some(())
    })
    .await;
}

/// Designate publishes the removal of the last name for a while (here longer than the
/// DNSZone's retries): a delete meanwhile would race it and end in ERROR, the zone kept.
/// The DNSZone waits until the zone is served again, then deletes it.
#[tokio::test]
async fn a_zone_is_deleted_once_the_removal_of_its_last_name_is_published() {
    let slow_publishing = SimConfig {
        lb_delay: Duration::from_millis(600),
        ..SimConfig::fast()
    };
    let timing = Timing {
        resync: Duration::from_millis(200),
        ..test_timing()
    };
    let env = Env::start(slow_publishing, timing).await;
    let _: DNSZone = env.create_from_yaml(&manifest("")).await;
    until_ready(&env).await;
    deleted_after_its_last_name(&env).await;
}

#[tokio::test]
async fn a_zone_made_by_hand_is_refused_then_taken_over_with_import() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let dns = env.cloud().dns(None);
    let by_hand = CreateZone {
        name: ZONE.into(),
        email: "admin@example.test".into(),
        ttl: Some(3600),
        description: "made by hand".into(),
    };
    let zone = dns.create_zone(&by_hand).await.expect("created by hand");
    let _: DNSZone = env.create_from_yaml(&manifest("")).await;
    eventually("ZoneOwnedByAnother", LIMIT, || async {
        (ready_reason(&env).await.as_deref() == Some("ZoneOwnedByAnother")).then_some(())
    })
    .await;
    let untouched = zones(&env).await;
    assert_eq!(untouched[0].description.as_deref(), Some("made by hand"));
    assert_eq!(untouched[0].email, "admin@example.test");

    let api = env.api::<DNSZone>();
    let patch = json!({"spec": {"import": {"id": zone.id.as_str()}}});
    api.patch("example", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("import accepted");
    until_ready(&env).await;
    let taken = zones(&env).await;
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].email, "hostmaster@example.test");
    assert_eq!(taken[0].ttl, Some(600));
    assert!(
        taken[0]
            .description
            .as_deref()
            .is_some_and(|d| d.starts_with("verda-uid-"))
    );
    env.event_seen("Imported").await;
}

#[tokio::test]
async fn a_crash_after_the_create_leaves_one_zone_found_by_its_owner_record() {
    let wire = Tripwire::armed(1);
    let mut env = Env::start_with(SimConfig::fast(), test_timing(), |client| {
        Arc::new(CrashingCloud::new(client, wire.clone()))
    })
    .await;
    let _: DNSZone = env.create_from_yaml(&manifest("")).await;
    assert_eq!(wire.tripped().await, "create_zone");
    env.restart().await;
    until_ready(&env).await;
    assert_eq!(zones(&env).await.len(), 1, "one zone, no duplicate");
}

#[tokio::test]
async fn an_abandoned_zone_is_an_orphan_deleted_only_once_empty() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: DNSZone = env.create_from_yaml(&manifest("")).await;
    let zone = until_ready(&env)
        .await
        .status
        .expect("status")
        .id
        .expect("id");
    let skip =
        json!({"metadata": {"annotations": {"verda.linecorp.com/reconcile-policy": "skip"}}});
    let api = env.api::<DNSZone>();
    api.patch("example", &PatchParams::default(), &Patch::Merge(&skip))
        .await
        .expect("annotated");
    eventually("paused", LIMIT, || async {
        let s = api.get("example").await.ok()?.status?;
        find_condition(&s.conditions, "Paused").map(drop)
    })
    .await;
    api.delete("example", &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually("the DNSZone is gone", LIMIT, || async {
        api.get_opt("example").await.ok()?.is_none().then_some(())
    })
    .await;
    assert_eq!(zones(&env).await.len(), 1, "left as it was");
    // Someone's record set in it: the zone is listed, but not deleted with it.
    let dns = env.cloud().dns(None);
    let by_hand = verda_operator::cloud::model::dns::CreateRecordSet {
        name: format!("mail.{ZONE}"),
        type_: "A".into(),
        records: vec!["192.0.2.25".into()],
        ttl: None,
        description: "made by hand".into(),
    };
    let id = verda_operator::cloud::ids::DnsZoneId::new(zone.clone());
    let set = dns
        .create_record_set(&id, &by_hand)
        .await
        .expect("made by hand");

    let cluster = &env.ctx.cluster;
    let orphans = || async {
        let listing = verda_operator::orphans::list(env.cloud().as_ref(), cluster)
            .await
            .expect("listed");
        verda_operator::orphans::classify(&listing, cluster, &std::collections::HashSet::new())
    };
    let found = orphans().await;
    let zone_orphans: Vec<(&str, &str)> = found
        .iter()
        .map(|o| (o.kind.as_str(), o.name.as_str()))
        .collect();
    assert_eq!(zone_orphans, [("dns-zone", ZONE)], "{found:?}");
    let refused = verda_operator::orphans::delete(env.cloud().as_ref(), &found).await;
    let message = refused[0].1.as_ref().expect_err("not deleted").to_string();
    assert!(message.contains("mail.example.test. A"), "{message}");
    assert_eq!(zones(&env).await.len(), 1, "kept with mail in it");

    dns.delete_record_set(&id, &set.id)
        .await
        .expect("deleted by hand");
    let deleted = verda_operator::orphans::delete(env.cloud().as_ref(), &orphans().await).await;
    assert!(deleted.iter().all(|(_, r)| r.is_ok()), "{deleted:?}");
    eventually("the zone is gone", LIMIT, || async {
        zones(&env).await.is_empty().then_some(())
    })
    .await;
}
