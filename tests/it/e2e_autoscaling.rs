//! Groups that size themselves (`spec.autoscaling`), driven as `kubectl apply` would:
//! Octavia's listener statistics (set through the simulator) grow a group at once and
//! shrink it one drained replica at a time after the window; a PromQL metric does the
//! same and, its Prometheus gone, holds the size and says why; a schedule raises the
//! floor; a `kubectl scale` is set back.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use kube::ResourceExt;
use serde_json::{Value, json};
use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::conditions::find_condition;
use verda_api::v1alpha1::{
    AUTOSCALER_FIELD_MANAGER, LoadBalancer, VirtualMachineGroup, VirtualMachineGroupStatus,
};
use verda_operator::config::Config;
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(40);
const GROUP: &str = "virtualmachinegroup-sample";

/// The published group with `spec.autoscaling` set to `autoscaling` (YAML, indented
/// under it).
fn autoscaled(replicas: i32, autoscaling: &str) -> String {
    let block: String = autoscaling.lines().map(|l| format!("    {l}\n")).collect();
    sample("virtualmachinegroup.yaml").replace(
        "  replicas: 2\n",
        &format!("  replicas: {replicas}\n  autoscaling:\n{block}"),
    )
}

async fn group(env: &Env) -> VirtualMachineGroup {
    env.api::<VirtualMachineGroup>()
        .get(GROUP)
        .await
        .expect("group")
}

fn status(g: &VirtualMachineGroup) -> VirtualMachineGroupStatus {
    g.status.clone().unwrap_or_default()
}

/// Waits for `spec.replicas` to be `n`, recording every size seen on the way.
async fn sized(env: &Env, n: i32, seen: &mut Vec<i32>) {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let r = group(env).await.spec.replicas;
        if seen.last() != Some(&r) {
            seen.push(r);
        }
        if r == n {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "spec.replicas never reached {n}: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The listener ID of `port` of the LoadBalancer `name`.
async fn listener(env: &Env, name: &str, port: i32) -> String {
    let lb = env.api::<LoadBalancer>().get(name).await.expect("lb");
    lb.status
        .expect("status")
        .ports
        .into_iter()
        .find(|p| p.port == port)
        .and_then(|p| p.listener_id)
        .expect("a listener")
}

fn condition(g: &VirtualMachineGroup, type_: &str) -> (String, String, String) {
    let s = status(g);
    let c = find_condition(&s.conditions, type_).expect(type_);
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

#[tokio::test]
async fn a_group_grows_with_its_listeners_connections_and_shrinks_one_drained_replica_at_a_time() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let spec = "minReplicas: 2\nmaxReplicas: 6\nmetrics:\n  - loadBalancer:\n      name: loadbalancer-sample\n      port: 80\n      target: {activeConnectionsPerReplica: 100}\nbehavior:\n  scaleDown: {stabilizationWindow: 6s, maxStep: 1}\n";
    let _: VirtualMachineGroup = env.create_from_yaml(&autoscaled(2, spec)).await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready("loadbalancer-sample", "4/4").await;
    let id = listener(&env, "loadbalancer-sample", 80).await;

    assert!(env.sim.set_listener_stats(&id, 450, 1000));
    let mut seen = Vec::new();
    sized(&env, 5, &mut seen).await;
    assert_eq!(seen.first(), Some(&2));
    assert_eq!(seen.last(), Some(&5), "one step of 3: {seen:?}");
    env.load_balancer_ready("loadbalancer-sample", "10/10")
        .await;
    env.event_seen("Scaled").await;
    let notes = scaled_notes(&env).await;
    assert!(
        notes.iter().any(|n| n
            == "scaled from 2 to 5: loadBalancer/loadbalancer-sample:80 is 225 per replica, target 100"),
        "{notes:?}"
    );
    let g = group(&env).await;
    let a = status(&g).autoscaling.expect("status.autoscaling");
    assert_eq!(a.desired_replicas, 5);
    assert_eq!(a.metrics[0].name, "loadBalancer/loadbalancer-sample:80");
    assert_eq!(a.metrics[0].target, "100");
    assert!(a.last_scale_time.is_some());
    assert_eq!(condition(&g, "ScalingActive").1, "ValidMetricFound");

    // The load goes: down to 2 after the window, one replica per step, each out of the
    // pools before the next step.
    assert!(env.sim.set_listener_stats(&id, 50, 1100));
    let mut seen = Vec::new();
    sized(&env, 2, &mut seen).await;
    assert_eq!(seen, vec![5, 4, 3, 2], "one replica per step");
    eventually("held at the floor", LIMIT, || async {
        let (_, reason, _) = condition(&group(&env).await, "ScalingLimited");
        (reason == "TooFewReplicas").then_some(())
    })
    .await;
    env.load_balancer_ready("loadbalancer-sample", "4/4").await;
}

#[tokio::test]
async fn a_noisy_metric_changes_the_size_once_per_window() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    // The floor at 3: before the test writes any count the listener reads 0, and a slow
    // start must not shrink the group then; 250 still proposes 3, below 350's 4.
    let spec = "minReplicas: 3\nmaxReplicas: 6\nmetrics:\n  - loadBalancer:\n      name: loadbalancer-sample\n      port: 80\n      target: {activeConnectionsPerReplica: 100}\nbehavior:\n  scaleDown: {stabilizationWindow: 30s}\n";
    let _: VirtualMachineGroup = env.create_from_yaml(&autoscaled(3, spec)).await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready("loadbalancer-sample", "6/6").await;
    let id = listener(&env, "loadbalancer-sample", 80).await;
    // 250 and 350 in turn, each for a resync (2 s), for 20 s.
    let mut sizes = vec![group(&env).await.spec.replicas];
    for i in 0..10 {
        let active = if i % 2 == 0 { 350 } else { 250 };
        env.sim.set_listener_stats(&id, active, 0);
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = group(&env).await.spec.replicas;
        if sizes.last() != Some(&now) {
            sizes.push(now);
        }
    }
    assert_eq!(
        sizes,
        vec![3, 4],
        "grown once, never back within the window"
    );
}

#[tokio::test]
async fn kubectl_scale_on_an_autoscaled_group_is_set_back_with_a_warning() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&autoscaled(2, "minReplicas: 2\nmaxReplicas: 4\n"))
        .await;
    eventually("the autoscaler reports", LIMIT, || async {
        status(&group(&env).await).autoscaling.map(|_| ())
    })
    .await;
    assert_eq!(
        condition(&group(&env).await, "ScalingActive").1,
        "NoMetrics"
    );

    env.scale(GROUP, 4).await;
    let mut seen = Vec::new();
    sized(&env, 2, &mut seen).await;
    env.event_seen("ScaleReverted").await;
    let g = group(&env).await;
    let manager = g
        .managed_fields()
        .iter()
        .filter(|e| {
            e.fields_v1
                .as_ref()
                .is_some_and(|f| f.0["f:spec"].get("f:replicas").is_some())
        })
        .filter_map(|e| e.manager.clone())
        .collect::<Vec<_>>();
    assert_eq!(manager, vec![AUTOSCALER_FIELD_MANAGER.to_owned()]);
    assert!(
        env.sim.live_servers().len() <= 4,
        "never more than the manual size"
    );
    eventually("2 servers again", LIMIT, || async {
        (env.sim.live_servers().len() == 2).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_schedule_holding_now_raises_the_floor_and_its_removal_lowers_it() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let spec = "minReplicas: 1\nmaxReplicas: 5\nbehavior:\n  scaleDown: {stabilizationWindow: 0s, maxStep: 5}\nschedules:\n  - {cron: '* * * * *', timeZone: Asia/Tokyo, minReplicas: 3, duration: 1m}\n";
    let _: VirtualMachineGroup = env.create_from_yaml(&autoscaled(1, spec)).await;
    let mut seen = Vec::new();
    sized(&env, 3, &mut seen).await;
    env.event_seen("Scaled").await;
    let notes = scaled_notes(&env).await;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("from 1 to 3") && n.contains("raises the floor to 3")),
        "{notes:?}"
    );

    let patch = json!({"spec": {"autoscaling": {"schedules": null}}});
    env.api::<VirtualMachineGroup>()
        .patch(GROUP, &Default::default(), &kube::api::Patch::Merge(&patch))
        .await
        .expect("edit accepted");
    sized(&env, 1, &mut seen).await;

    // A schedule that can never hold is said, and the rest still applies.
    let patch = json!({"spec": {"autoscaling": {"schedules": [
        {"cron": "61 9 * * *", "minReplicas": 2, "duration": "1h"}]}}});
    env.api::<VirtualMachineGroup>()
        .patch(GROUP, &Default::default(), &kube::api::Patch::Merge(&patch))
        .await
        .expect("edit accepted");
    eventually("InvalidSchedule", LIMIT, || async {
        let (_, reason, message) = condition(&group(&env).await, "ScalingActive");
        (reason == "InvalidSchedule" && message.contains("outside 0-59")).then_some(())
    })
    .await;
    assert_eq!(group(&env).await.spec.replicas, 1);
}

/// The notes of the `Scaled` events.
async fn scaled_notes(env: &Env) -> Vec<String> {
    let events: kube::Api<k8s_openapi::api::core::v1::Event> = env.api();
    let list = events.list(&Default::default()).await.expect("events");
    list.items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Scaled"))
        .filter_map(|e| e.message)
        .collect()
}

/// A Prometheus HTTP API whose instant queries answer `value` (no sample when `None`).
async fn prometheus(value: Arc<Mutex<Option<f64>>>) -> (String, tokio::task::JoinHandle<()>) {
    async fn query(State(value): State<Arc<Mutex<Option<f64>>>>) -> axum::Json<Value> {
        let v = *value.lock().expect("lock");
        let result: Vec<Value> = v
            .map(|v| json!({"metric": {}, "value": [1.0, v.to_string()]}))
            .into_iter()
            .collect();
        axum::Json(json!({"status": "success", "data": {"resultType": "vector", "result": result}}))
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let app = Router::new()
        .route("/api/v1/query", get(query))
        .with_state(value);
    let server = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("serve");
    });
    (url, server)
}

#[tokio::test]
async fn a_promql_metric_sizes_the_group_and_without_prometheus_the_size_holds() {
    let value = Arc::new(Mutex::new(Some(120.0)));
    let (url, server) = prometheus(value.clone()).await;
    let config = Config::parse(&format!("prometheus: {{url: '{url}'}}")).expect("config");
    let env = Env::start_configured(SimConfig::fast(), test_timing(), config).await;
    let spec = "minReplicas: 1\nmaxReplicas: 6\nmetrics:\n  - prometheus:\n      query: sum(rate(http_requests_total{service=\"web\"}[2m]))\n      targetPerReplica: 50\n";
    let _: VirtualMachineGroup = env.create_from_yaml(&autoscaled(1, spec)).await;
    let mut seen = Vec::new();
    sized(&env, 3, &mut seen).await;
    let g = group(&env).await;
    assert_eq!(
        status(&g).autoscaling.expect("status").metrics[0].name,
        "prometheus/0"
    );

    // No sample: the size holds, and the condition says why.
    *value.lock().expect("lock") = None;
    eventually("no sample reported", LIMIT, || async {
        let (state, reason, message) = condition(&group(&env).await, "ScalingActive");
        (state == "False" && reason == "FailedGetPrometheusMetric" && message.contains("no sample"))
            .then_some(())
    })
    .await;
    // Prometheus gone: the same, naming it.
    server.abort();
    let _ = server.await;
    eventually("Prometheus unreachable reported", LIMIT, || async {
        let (_, reason, message) = condition(&group(&env).await, "ScalingActive");
        (reason == "FailedGetPrometheusMetric" && message.contains("did not answer")).then_some(())
    })
    .await;
    assert_eq!(group(&env).await.spec.replicas, 3, "the size holds");
}
