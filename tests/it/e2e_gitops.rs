//! What Argo CD (our Lua health check, in Lua 5.1) and kstatus (Flux, kpt) conclude
//! from our objects at each stage of their life, read from the API server as those
//! tools read them: provisioning, ready, failing for good, paused, scaling.
//!
//! `VERDA_CAPTURE_GITOPS=1` also writes each object to `config/argocd/testdata/`, the
//! fixtures `tests/gitops_health.rs` checks without a cluster.

use crate::support;

use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use support::e2e::{Env, eventually, sample, test_timing};
use support::gitops::{KStatus, verdicts};
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(60);

/// Waits until `name`'s Ready reason is `reason` (the operator's doing), then checks
/// what Argo CD and kstatus make of the object as it is then.
async fn at_stage<K>(
    api: &Api<K>,
    name: &str,
    reason: &str,
    argo: &str,
    kstatus: KStatus,
    capture_as: &str,
) -> Value
where
    K: Resource<Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let obj = eventually(&format!("{name}: Ready reason {reason}"), LIMIT, || async {
        let obj = serde_json::to_value(api.get(name).await.ok()?).ok()?;
        let conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> =
            serde_json::from_value(obj.pointer("/status/conditions")?.clone()).ok()?;
        (find_condition(&conditions, READY)?.reason == reason).then_some(obj)
    })
    .await;
    assert_eq!(
        verdicts(&obj),
        (argo.to_owned(), kstatus),
        "{name} at {reason}: {obj:#}"
    );
    capture(capture_as, &obj);
    obj
}

/// Writes `obj` as a fixture when asked to, without what changes every run.
fn capture(file: &str, obj: &Value) {
    if std::env::var_os("VERDA_CAPTURE_GITOPS").is_none() {
        return;
    }
    let mut obj = obj.clone();
    let meta = obj["metadata"].as_object_mut().expect("metadata");
    for volatile in [
        "managedFields",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        meta.remove(volatile);
    }
    meta.insert("namespace".into(), json!("default"));
    let path = format!(
        "{}/config/argocd/testdata/{file}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::write(&path, serde_saphyr::to_string(&obj).expect("yaml")).expect("fixture written");
}

/// Servers take a while to build, so the provisioning and scaling stages can be seen.
fn slow_builds() -> SimConfig {
    SimConfig {
        build_delay: Duration::from_millis(1500),
        ..SimConfig::fast()
    }
}

fn vm(name: &str, image: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\nspec:\n  image: {image}\n  flavor: n3-1vcpu-2gb\n"
    )
}

#[tokio::test]
async fn argo_cd_and_kstatus_read_each_stage_of_a_virtual_machine() {
    let env = Env::start(slow_builds(), test_timing()).await;
    let vms = env.api::<VirtualMachine>();
    let _: VirtualMachine = env.create_from_yaml(&vm("web", "centos79")).await;
    let provisioning = at_stage(
        &vms,
        "web",
        "Provisioning",
        "Progressing",
        KStatus::InProgress,
        "virtualmachine-provisioning",
    )
    .await;
    assert_eq!(
        provisioning
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .map(|c| c
                .iter()
                .any(|c| c["type"] == "Reconciling" && c["status"] == "True")),
        Some(true),
        "kstatus reads Reconciling=True while the server builds: {provisioning:#}"
    );
    at_stage(
        &vms,
        "web",
        "Active",
        "Healthy",
        KStatus::Current,
        "virtualmachine-ready",
    )
    .await;

    let _: VirtualMachine = env.create_from_yaml(&vm("broken", "no-such-image")).await;
    let failed = at_stage(
        &vms,
        "broken",
        "ImageNotFound",
        "Degraded",
        KStatus::Failed,
        "virtualmachine-image-not-found",
    )
    .await;
    let message = support::gitops::argo_health(&failed).message;
    assert!(
        message.contains("no-such-image"),
        "Argo CD shows what to fix: {message}"
    );

    vms.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {"verda.linecorp.com/reconcile-policy": "skip"}}}),
        ),
    )
    .await
    .expect("paused");
    let paused = eventually("web is Paused", LIMIT, || async {
        let obj = serde_json::to_value(vms.get("web").await.ok()?).ok()?;
        let conditions = obj.pointer("/status/conditions")?.as_array()?.clone();
        conditions
            .iter()
            .any(|c| c["type"] == "Paused" && c["status"] == "True")
            .then_some(obj)
    })
    .await;
    assert_eq!(
        verdicts(&paused),
        ("Suspended".to_owned(), KStatus::Current),
        "{paused:#}"
    );
    capture("virtualmachine-paused", &paused);
}

#[tokio::test]
async fn argo_cd_and_kstatus_follow_a_group_scaling_and_its_load_balancer() {
    let env = Env::start(slow_builds(), test_timing()).await;
    let groups = env.api::<VirtualMachineGroup>();
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    let name = "virtualmachinegroup-sample";
    at_stage(
        &groups,
        name,
        "AllReplicasReady",
        "Healthy",
        KStatus::Current,
        "virtualmachinegroup-ready",
    )
    .await;
    let lbs = env.api::<LoadBalancer>();
    env.load_balancer_ready("loadbalancer-sample", "4/4").await;
    at_stage(
        &lbs,
        "loadbalancer-sample",
        "Active",
        "Healthy",
        KStatus::Current,
        "loadbalancer-ready",
    )
    .await;

    groups
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scaled");
    // Right after the edit the generation is ahead of what the operator observed; then
    // it scales. Either way both tools must say "in progress", never "done".
    let edited = serde_json::to_value(groups.get(name).await.expect("group")).expect("json");
    assert_eq!(
        verdicts(&edited),
        ("Progressing".to_owned(), KStatus::InProgress),
        "{edited:#}"
    );
    at_stage(
        &groups,
        name,
        "Scaling",
        "Progressing",
        KStatus::InProgress,
        "virtualmachinegroup-scaling",
    )
    .await;
    at_stage(
        &groups,
        name,
        "AllReplicasReady",
        "Healthy",
        KStatus::Current,
        "virtualmachinegroup-scaled",
    )
    .await;
}

#[tokio::test]
async fn argo_cd_and_kstatus_call_a_rollout_past_its_deadline_degraded() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let groups = env.api::<VirtualMachineGroup>();
    let manifest = sample("virtualmachinegroup.yaml")
        .replace("spec:\n", "spec:\n  progressDeadlineSeconds: 2\n");
    let _: VirtualMachineGroup = env.create_from_yaml(&manifest).await;
    let name = "virtualmachinegroup-sample";
    eventually("the group is Ready", LIMIT, || async {
        let s = groups.get(name).await.ok()?.status?;
        (s.available_replicas == 2).then_some(())
    })
    .await;
    let bad = json!({"spec": {"template": {"flavor": "no-such-flavor"}}});
    groups
        .patch(name, &PatchParams::default(), &Patch::Merge(&bad))
        .await
        .expect("edited");
    let stalled = at_stage(
        &groups,
        name,
        "ProgressDeadlineExceeded",
        "Degraded",
        KStatus::Failed,
        "virtualmachinegroup-progress-deadline",
    )
    .await;
    let message = support::gitops::argo_health(&stalled).message;
    assert!(
        message.contains("fix spec.template"),
        "Argo CD says what to do: {message}"
    );
}
