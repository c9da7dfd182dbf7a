//! The metrics a Prometheus scrape sees after the published group converged:
//! reconciles by controller and result, cloud requests by service/operation/code,
//! managed objects by kind and state, group desired and ready replicas.

mod support;

use std::time::Duration;

use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::v1alpha1::VirtualMachineGroup;
use verda_operator::sim::SimConfig;

#[tokio::test]
async fn metrics_describe_reconciles_cloud_calls_objects_and_replicas() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let api = env.api::<VirtualMachineGroup>();
    eventually("the group is ready", Duration::from_secs(30), || async {
        let s = api.get("virtualmachinegroup-sample").await.ok()?.status?;
        (s.ready_replicas == 2).then_some(())
    })
    .await;
    let text = eventually(
        "the ready gauge reached 2",
        Duration::from_secs(10),
        || async {
            let text = env.ctx.metrics.encode();
            text.contains(&format!(
            "verda_group_ready_replicas{{namespace=\"{}\",name=\"virtualmachinegroup-sample\"}} 2",
            env.ns
        ))
        .then_some(text)
        },
    )
    .await;
    for expected in [
        r#"verda_reconciles_total{controller="virtualmachine",result="success"}"#,
        r#"verda_reconciles_total{controller="virtualmachinegroup",result="success"}"#,
        r#"verda_reconcile_duration_seconds_count{controller="virtualmachine"}"#,
        r#"verda_cloud_requests_total{service="compute",operation="create_server",code="202"} 2"#,
        r#"verda_cloud_requests_total{service="compute",operation="create_server_group",code="200"} 1"#,
        r#"verda_managed_objects{kind="virtualmachine",state="Active"} 2"#,
        r#"verda_managed_objects{kind="virtualmachinegroup",state="AllReplicasReady"} 1"#,
        "verda_group_desired_replicas{",
    ] {
        assert!(text.contains(expected), "missing {expected} in\n{text}");
    }
    // Nothing secret reaches the metrics.
    let password = env.sim.credentials().password;
    assert!(!text.contains(&password));
}
