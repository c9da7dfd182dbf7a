//! VirtualMachine behaviours over time: failures reported with a reason and a slow,
//! bounded retry; drift healed; flavor changes resized; init scripts from ConfigMaps.

use crate::support;

use std::cell::Cell;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use support::e2e::{Env, eventually, test_timing};
use verda_api::conditions::{READY, find_condition, is_true};
use verda_api::v1alpha1::VirtualMachine;
use verda_operator::sim::{Fault, FaultKind, SimConfig};

const LIMIT: Duration = Duration::from_secs(20);

fn manifest(name: &str, image: &str, extra: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\nspec:\n  image: {image}\n  flavor: n3-1vcpu-2gb\n{extra}"
    )
}

/// Waits until the VirtualMachine `name`'s Ready condition has `reason`.
async fn ready_reason(env: &Env, name: &str, reason: &str) -> Condition {
    let api = env.api::<VirtualMachine>();
    eventually(&format!("Ready=False {reason}"), LIMIT, || async {
        let vm = api.get(name).await.ok()?;
        let c = find_condition(&vm.status.as_ref()?.conditions, READY)?.clone();
        (c.reason == reason).then_some(c)
    })
    .await
}

/// A ConfigMap `name` whose key `script` holds `script`.
async fn script_config_map(env: &Env, name: &str, script: &str) {
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name}, "data": {"script": script}
    }))
    .expect("configmap");
    env.api::<ConfigMap>()
        .create(&PostParams::default(), &cm)
        .await
        .expect("configmap created");
}

#[tokio::test]
async fn an_unknown_image_is_reported_and_retried_slowly_with_bounded_cloud_calls() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachine = env
        .create_from_yaml(&manifest("broken", "no-such-image", ""))
        .await;
    let condition = ready_reason(&env, "broken", "ImageNotFound").await;
    assert_eq!(condition.status, "False");
    assert!(
        condition.message.contains("no-such-image"),
        "{}",
        condition.message
    );
    env.event_seen_within("ImageNotFound", LIMIT).await;
    // Terminal errors retry every 20 s here (2 min by default): over the next 3 s no
    // more than one further attempt may reach the cloud.
    let before = env.sim.total_requests();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = env.sim.total_requests() - before;
    assert!(
        during <= 3,
        "{during} cloud calls in 3 s for a permanently failing object"
    );
    assert!(env.sim.servers().is_empty());
}

/// Each permanent failure: its reason, its Warning event, and a bounded call rate.
#[tokio::test]
async fn flavor_quota_and_placement_failures_are_reported_and_retried_slowly() {
    let cases = [
        ("FlavorNotFound", SimConfig::fast(), "no-such-flavor"),
        (
            "QuotaExceeded",
            SimConfig {
                instance_quota: 0,
                ..SimConfig::fast()
            },
            "n3-1vcpu-2gb",
        ),
        // Every build fails on every host: Nova's MaxRetriesExceeded, a NoValidHost.
        ("NoValidHost", SimConfig::fast(), "n3-1vcpu-2gb"),
    ];
    for (reason, sim, flavor) in cases {
        let env = Env::start(sim, test_timing()).await;
        if reason == "NoValidHost" {
            env.sim.inject(Fault::new(
                "compute",
                Some("create_server"),
                FaultKind::ServerError,
            ));
        }
        let yaml = manifest("stuck", "centos79", "").replace("n3-1vcpu-2gb", flavor);
        let _: VirtualMachine = env.create_from_yaml(&yaml).await;
        let api = env.api::<VirtualMachine>();
        eventually(&format!("Ready=False {reason}"), LIMIT, || async {
            let vm = api.get("stuck").await.ok()?;
            let c = find_condition(&vm.status.as_ref()?.conditions, READY)?.clone();
            (c.reason == reason && c.status == "False").then_some(())
        })
        .await;
        env.event_seen_within(reason, LIMIT).await;
        let before = env.sim.total_requests();
        let creates_before = env.sim.requests("compute", "create_server");
        tokio::time::sleep(Duration::from_secs(3)).await;
        let during = env.sim.total_requests() - before;
        let creates = env.sim.requests("compute", "create_server") - creates_before;
        println!(
            "FAILURE {reason}: {during} cloud calls, {creates} server creates in the 3 s after the report"
        );
        if reason == "NoValidHost" {
            // Replaced after 0.5 s, then 1 s, then 2 s: at most 3 attempts in 3 s, each a
            // bounded handful of calls (delete, lookups, create, polls).
            assert!(creates <= 3, "{creates} replacements in 3 s");
            assert!(
                during <= 12 * (creates + 1),
                "{during} calls for {creates} attempts"
            );
        } else {
            // Terminal: retried every 20 s here (2 min by default), and not at the
            // wake-up its own status write causes.
            assert_eq!(creates, 0, "{reason}: {creates} server creates in 3 s");
            assert!(during <= 3, "{reason}: {during} cloud calls in 3 s");
        }
        let live = env.sim.servers().iter().filter(|s| !s.deleting).count();
        assert!(live <= 1, "{reason}: {live} servers for one VirtualMachine");
    }
}

#[tokio::test]
async fn a_server_deleted_outside_kubernetes_is_recreated_with_an_event() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachine = env
        .create_from_yaml(&manifest("drift", "centos79", ""))
        .await;
    let first = env.ready_vm("drift").await;
    let first_id = first.status.and_then(|s| s.server_id).expect("server id");
    env.sim.delete_server_out_of_band(&first_id);

    let api = env.api::<VirtualMachine>();
    let second = eventually("a new server is recorded and Ready", LIMIT, || async {
        let vm = api.get("drift").await.ok()?;
        let status = vm.status.clone()?;
        let id = status.server_id.clone()?;
        (id != first_id && is_true(&status.conditions, READY)).then_some(id)
    })
    .await;
    let live = env.sim.live_servers();
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0].id, second);
    env.event_seen_within("Recreated", LIMIT).await;
}

#[tokio::test]
async fn a_server_in_error_is_reported_then_replaced_and_never_doubled() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachine = env
        .create_from_yaml(&manifest("fragile", "centos79", ""))
        .await;
    let first = env.ready_vm("fragile").await;
    let first_id = first.status.and_then(|s| s.server_id).expect("server id");
    env.sim.set_server_error(&first_id);

    let api = env.api::<VirtualMachine>();
    let most_alive = Cell::new(0);
    let replaced = eventually(
        "the failed server is replaced by an ACTIVE one",
        LIMIT,
        || {
            let alive = env.sim.servers().iter().filter(|s| !s.deleting).count();
            most_alive.set(most_alive.get().max(alive));
            let api = &api;
            let first_id = first_id.clone();
            async move {
                let status = api.get("fragile").await.ok()?.status?;
                let ready = find_condition(&status.conditions, READY)?;
                let id = status.server_id.clone()?;
                (id != first_id && ready.status == "True").then_some(status)
            }
        },
    )
    .await;
    assert!(
        most_alive.get() <= 1,
        "{} servers alive at once",
        most_alive.get()
    );
    assert!(
        replaced.last_failure.is_none(),
        "an ACTIVE server clears the failure"
    );
    env.event_seen("Replacing").await;
    let reasons = env.event_reasons().await;
    assert_eq!(
        reasons.iter().filter(|r| *r == "ServerError").count(),
        1,
        "one Warning per failed server: {reasons:?}"
    );
}

#[tokio::test]
async fn a_flavor_change_resizes_and_confirms_and_metadata_changes_apply_in_place() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachine = env
        .create_from_yaml(&manifest("grow", "centos79", ""))
        .await;
    let vm = env.ready_vm("grow").await;
    let id = vm.status.and_then(|s| s.server_id).expect("server id");
    let patch = json!({"spec": {"flavor": "n3-2vcpu-4gb", "description": "bigger", "metadata": {"team": "web"}}});
    env.api::<VirtualMachine>()
        .patch("grow", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("edit accepted");
    let server = eventually(
        "the server runs the new flavor with the new metadata",
        LIMIT,
        || async {
            let server = env.sim.servers().into_iter().find(|s| s.id == id)?;
            let done = server.status == "ACTIVE"
                && server.flavor_name == "n3-2vcpu-4gb"
                && server.metadata.get("team").map(String::as_str) == Some("web")
                && server.description.as_deref() == Some("bigger");
            done.then_some(server)
        },
    )
    .await;
    assert!(server.metadata.contains_key("verda.linecorp.com:uid"));
    assert_eq!(env.sim.servers().len(), 1, "resized in place, not replaced");
    assert_eq!(env.sim.requests("compute", "resize_server"), 1);
    assert_eq!(env.sim.requests("compute", "confirm_resize"), 1);
}

#[tokio::test]
async fn an_init_script_from_a_configmap_key_becomes_user_data() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    script_config_map(&env, "boot", "echo hi").await;
    let extra = "  initScript:\n    configMapKeyRef: {name: boot, key: script}\n";
    let _: VirtualMachine = env
        .create_from_yaml(&manifest("scripted", "centos79", extra))
        .await;
    env.ready_vm("scripted").await;
    let servers = env.sim.servers();
    // base64("echo hi")
    assert_eq!(servers[0].user_data.as_deref(), Some("ZWNobyBoaQ=="));
}

#[tokio::test]
async fn an_init_script_too_large_for_nova_is_reported_and_nothing_is_created() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    // 49,150 bytes: one more than Nova's 65,535 characters of base64 can carry.
    script_config_map(&env, "big", &"x".repeat(49_150)).await;
    let extra = "  initScript:\n    configMapKeyRef: {name: big, key: script}\n";
    let _: VirtualMachine = env
        .create_from_yaml(&manifest("too-big", "centos79", extra))
        .await;
    let condition = ready_reason(&env, "too-big", "InitScriptTooLarge").await;
    assert!(
        condition.message.contains("49150 bytes"),
        "{}",
        condition.message
    );
    assert!(env.sim.servers().is_empty());
}
