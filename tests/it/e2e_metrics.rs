//! The metrics a Prometheus scrape sees after the published group converged:
//! reconciles by controller and result, cloud requests by service/operation/code,
//! managed objects by kind and state, objects by condition and since when, group
//! desired and ready replicas, load-balancer members, leadership.

use crate::support;

use std::time::Duration;

use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachineGroup};
use verda_operator::sim::SimConfig;

#[tokio::test]
async fn metrics_describe_reconciles_cloud_calls_objects_and_replicas() {
    let mut env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
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
            let ns = &env.ns;
            (text.contains(&format!(
                "verda_group_ready_replicas{{namespace=\"{ns}\",name=\"virtualmachinegroup-sample\"}} 2"
            )) && text.contains(&format!(
                "verda_load_balancer_ready_members{{namespace=\"{ns}\",name=\"loadbalancer-sample\"}} 4"
            )))
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
        r#"verda_reconciles_total{controller="loadbalancer",result="success"}"#,
        r#"verda_managed_objects{kind="loadbalancer",state="Active"} 1"#,
        r#"verda_objects_by_condition{kind="virtualmachine",condition="Ready",status="True",reason="Active"} 2"#,
        r#"verda_objects_by_condition{kind="loadbalancer",condition="Ready",status="True",reason="Active"} 1"#,
        "verda_leader 1",
        &format!(
            "verda_load_balancer_members{{namespace=\"{}\",name=\"loadbalancer-sample\"}} 4",
            env.ns
        ),
    ] {
        assert!(text.contains(expected), "missing {expected} in\n{text}");
    }
    // A Ready object has no series of its own (only one that is not Ready is read one
    // by one, for how long it has been so); the group is Ready, as counted above.
    let own = format!(
        r#"verda_condition_last_transition_timestamp_seconds{{kind="virtualmachinegroup",namespace="{}",name="virtualmachinegroup-sample""#,
        env.ns
    );
    assert!(!text.contains(&own), "the Ready group has {own} in\n{text}");
    // Calls are counted as the cloud received them. The load balancer's create waits
    // for the group's replicas and carries them, so it is one create and no member
    // batch (read from the simulator, not fixed, should a replica be late).
    let creates = env.sim.requests("load-balancer", "create_load_balancer");
    assert_eq!(creates, 1);
    let line = format!(
        r#"verda_cloud_requests_total{{service="load-balancer",operation="create_load_balancer",code="201"}} {creates}"#
    );
    assert!(text.contains(&line), "missing {line} in\n{text}");
    let batches = env.sim.requests("load-balancer", "replace_members");
    if batches > 0 {
        let line = format!(
            r#"verda_cloud_requests_total{{service="load-balancer",operation="replace_members",code="202"}} {batches}"#
        );
        assert!(text.contains(&line), "missing {line} in\n{text}");
    }
    // Octavia's PENDING_* and 409 are waits, not failed reconciles.
    assert!(
        !text.lines().any(|l| l
            .starts_with(r#"verda_reconciles_total{controller="loadbalancer",result="Conflict"}"#)),
        "{text}"
    );
    // Nothing secret reaches the metrics.
    let password = env.sim.credentials().password;
    assert!(!text.contains(&password));

    // Controllers stopped (the lease lost): this replica no longer reports the objects
    // it followed, only that it does not lead.
    let stopped = env.ctx.metrics.clone();
    env.restart().await;
    let text = stopped.encode();
    assert!(text.contains("verda_leader 0"), "{text}");
    assert!(
        !text.contains("name=\"virtualmachinegroup-sample\""),
        "{text}"
    );
}
