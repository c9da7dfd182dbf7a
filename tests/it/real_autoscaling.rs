//! Groups that size themselves on the real systems, driven with `kubectl`: `web` (2 to 4)
//! behind a LoadBalancer follows the active connections Octavia counts on its listener
//! (written into Octavia's database, as amphorae would report them: the harness's no-op
//! drivers report none), grows in one step and shrinks one drained replica at a time
//! after its window; `promql` (1 to 3) follows a gauge a real Prometheus scrapes from
//! the test, undoes a `kubectl scale`, and holds its size with `ScalingActive=False`
//! once Prometheus is stopped; `timed` (0 to 1) is raised by a schedule starting at the
//! next minute and lowered when it ends. Run by `hack/real-systems.sh` (stage `e2e`, beside
//! the end-to-end suite, which needs only the kube-apiserver: its operator watches only
//! its own namespace).

use crate::support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use kube::Api;
use verda_api::conditions::find_condition;
use verda_api::v1alpha1::{LoadBalancer, VirtualMachineGroup};

use support::prometheus::Prometheus;
use support::real::{
    Namespace, Operator, Real, context, event_notes, nothing_left, octavia_sql, project_inventory,
    until,
};

const LIMIT: Duration = Duration::from_secs(180);

const WEB: &str = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: web}\nspec:\n  replicas: 2\n  template: {image: cirros, flavor: m1.tiny}\n  autoscaling:\n    minReplicas: 2\n    maxReplicas: 4\n    metrics:\n    - loadBalancer: {name: front, port: 80, target: {activeConnectionsPerReplica: 100}}\n    behavior:\n      scaleDown: {stabilizationWindow: 10s, maxStep: 1}\n";

const FRONT: &str = "apiVersion: verda.linecorp.com/v1alpha1\nkind: LoadBalancer\nmetadata: {name: front}\nspec:\n  region: tokyo1\n  zone: dev\n  vipType: private\n  serviceType: generic\n  ports:\n  - port: 80\n    protocol: tcp\n    realServers: {protocol: tcp, port: 80, virtualMachineGroupRef: web}\n";

const PROMQL: &str = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: promql}\nspec:\n  replicas: 1\n  template: {image: cirros, flavor: m1.tiny}\n  autoscaling:\n    minReplicas: 1\n    maxReplicas: 3\n    metrics:\n    - prometheus: {query: 'sum(verda_test_load)', targetPerReplica: 50}\n";

/// `timed`, raised to 1 by a schedule starting at minute `minute` of hour `hour` (UTC).
fn timed(minute: i8, hour: i8) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: timed}}\nspec:\n  replicas: 0\n  template: {{image: cirros, flavor: m1.tiny}}\n  autoscaling:\n    minReplicas: 0\n    maxReplicas: 1\n    behavior:\n      scaleDown: {{stabilizationWindow: 0s}}\n    schedules:\n    - {{cron: '{minute} {hour} * * *', timeZone: UTC, minReplicas: 1, duration: 1m}}\n"
    )
}

/// What amphorae would report: the listener's connections, in Octavia's database.
fn set_listener_stats(listener: &str, active: u64, total: u64) {
    let sql = format!(
        "INSERT INTO listener_statistics (listener_id, amphora_id, bytes_in, bytes_out, \
         active_connections, total_connections, request_errors) \
         VALUES ('{listener}', '{listener}', 0, 0, {active}, {total}, 0) \
         ON DUPLICATE KEY UPDATE active_connections = {active}, total_connections = {total}"
    );
    octavia_sql(&sql);
}

/// Serves `verda_test_load <value>` at `/metrics` for Prometheus to scrape; its address.
async fn gauge(value: Arc<AtomicU64>) -> String {
    async fn metrics(State(value): State<Arc<AtomicU64>>) -> String {
        format!("verda_test_load {}\n", value.load(Ordering::Relaxed))
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(value);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// Waits for `name`'s `spec.replicas` and `status.replicas` to be `n`, adding each size
/// seen on the way to `seen`.
async fn sized(
    groups: &Api<VirtualMachineGroup>,
    op: &Operator,
    name: &str,
    n: i32,
    seen: &mut Vec<i32>,
) {
    let start = Instant::now();
    loop {
        let g = groups.get(name).await.expect("group");
        let spec = g.spec.replicas;
        if seen.last() != Some(&spec) {
            seen.push(spec);
        }
        let have = g.status.as_ref().map_or(-1, |s| s.replicas);
        if spec == n && have == n {
            return;
        }
        assert!(
            start.elapsed() < LIMIT,
            "{name} never reached {n} replicas (sizes seen {seen:?}); {}",
            context(op)()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

type Sizes = Arc<std::sync::Mutex<Vec<(jiff::Timestamp, i32)>>>;

/// Samples `name`'s `spec.replicas` every 500 ms: each change, with when it was seen.
fn sample_sizes(
    groups: Api<VirtualMachineGroup>,
    name: &'static str,
) -> (Sizes, tokio::task::JoinHandle<()>) {
    let seen = Sizes::default();
    let record = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            if let Ok(g) = groups.get(name).await {
                let mut sizes = record.lock().expect("sizes");
                if sizes.last().map(|(_, n)| *n) != Some(g.spec.replicas) {
                    sizes.push((jiff::Timestamp::now(), g.spec.replicas));
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
    (seen, task)
}

/// The `(status, reason, message)` of the group's condition `type_`.
async fn condition(
    groups: &Api<VirtualMachineGroup>,
    name: &str,
    type_: &str,
) -> Option<(String, String, String)> {
    let g = groups.get(name).await.ok()?;
    let c = find_condition(&g.status?.conditions, type_)?.clone();
    Some((c.status, c.reason, c.message))
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn groups_size_themselves_on_the_real_cloud() {
    let real = Arc::new(Real::from_env());
    let binary = PathBuf::from(std::env::var_os("VERDA_REAL_PROMETHEUS").expect(
        "VERDA_REAL_PROMETHEUS (Debian's prometheus binary) is set by hack/real-systems.sh",
    ));
    let ns = Namespace::create(real.clone(), "real-autoscale");
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let load = Arc::new(AtomicU64::new(80));
    let target = gauge(load.clone()).await;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("real-systems/prometheus-autoscale");
    let prometheus = Prometheus::start(&binary, &target, &serde_json::json!({"groups": []}), &dir);
    let config = format!(
        "resyncPeriod: 10s\nprometheus: {{url: '{}'}}\n",
        prometheus.url
    );
    // Its own namespace only: the stage runs it beside the e2e suite, whose namespaces
    // are not for a real cloud.
    let operator = real.operator("autoscale", &["--namespace", &ns.name], Some(&config));
    prometheus.wait_for_target().await;
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    let started = Instant::now();
    let apply = |manifest: &str| {
        real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(manifest));
    };

    // The schedule starts at the next minute (UTC), at least 5 s from now.
    let start = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(65);
    let at = start.to_zoned(jiff::tz::TimeZone::UTC);
    apply(&timed(at.minute(), at.hour()));
    let (timed_sizes, sampler) = sample_sizes(groups.clone(), "timed");
    apply(WEB);
    apply(FRONT);
    apply(PROMQL);

    // PromQL: a load of 80 at 50 per replica is 2 replicas.
    let mut promql_sizes = Vec::new();
    sized(&groups, &operator, "promql", 2, &mut promql_sizes).await;
    println!(
        "REAL promql: 1 → 2 on a Prometheus gauge in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The listener's statistics: 350 active connections at 100 per replica is 4.
    let listener = until("front's listener", LIMIT, &context(&operator), || async {
        let lb = lbs.get("front").await.ok()?;
        let s = lb.status?;
        (s.members.as_deref() == Some("2/2")).then_some(())?;
        s.ports.first()?.listener_id.clone()
    })
    .await;
    let grow = Instant::now();
    set_listener_stats(&listener, 350, 1000);
    let mut web_sizes = Vec::new();
    sized(&groups, &operator, "web", 4, &mut web_sizes).await;
    assert_eq!(web_sizes, vec![2, 4], "one step");
    until(
        "4 members in front's pool",
        LIMIT,
        &context(&operator),
        || async {
            let s = lbs.get("front").await.ok()?.status?;
            (s.members.as_deref() == Some("4/4")).then_some(())
        },
    )
    .await;
    let scaled = event_notes(&real, &ns, "Scaled", Some("web"));
    assert!(
        scaled.iter().any(|n| n.contains("from 2 to 4")
            && n.contains("loadBalancer/front:80 is 175 per replica, target 100")),
        "{scaled:?}"
    );
    println!(
        "REAL web: 2 → 4 on Octavia's listener statistics, all in the pool, in {:.1} s",
        grow.elapsed().as_secs_f64()
    );

    // `kubectl scale` of an autoscaled group is set back.
    real.kubectl(&[
        "-n",
        &ns.name,
        "scale",
        "virtualmachinegroup",
        "promql",
        "--replicas=3",
    ]);
    until(
        "promql set back to 2",
        LIMIT,
        &context(&operator),
        || async {
            let g = groups.get("promql").await.ok()?;
            (g.spec.replicas == 2
                && !event_notes(&real, &ns, "ScaleReverted", Some("promql")).is_empty())
            .then_some(())
        },
    )
    .await;

    // Prometheus stopped: the size holds, and the group says why.
    drop(prometheus);
    load.store(500, Ordering::Relaxed);
    let (_, reason, message) = until(
        "ScalingActive=False",
        LIMIT,
        &context(&operator),
        || async {
            condition(&groups, "promql", "ScalingActive")
                .await
                .filter(|(status, _, _)| status == "False")
        },
    )
    .await;
    assert_eq!(reason, "FailedGetPrometheusMetric", "{message}");
    assert!(message.contains("did not answer"), "{message}");
    assert_eq!(groups.get("promql").await.expect("promql").spec.replicas, 2);

    // The load goes: web back to 2 after its window, one drained replica per step.
    let shrink = Instant::now();
    set_listener_stats(&listener, 50, 1100);
    let mut web_sizes = Vec::new();
    sized(&groups, &operator, "web", 2, &mut web_sizes).await;
    assert_eq!(web_sizes, vec![4, 3, 2], "one replica per step");
    until(
        "2 members in front's pool",
        LIMIT,
        &context(&operator),
        || async {
            let s = lbs.get("front").await.ok()?.status?;
            (s.members.as_deref() == Some("2/2")).then_some(())
        },
    )
    .await;
    println!(
        "REAL web: 4 → 2 one step at a time after a 10 s window in {:.1} s",
        shrink.elapsed().as_secs_f64()
    );

    // The others go while `timed` waits for its schedule to end.
    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "loadbalancer",
        "front",
        "--wait=true",
    ]);
    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "virtualmachinegroup",
        "web",
        "promql",
        "--wait=true",
        "--timeout=240s",
    ]);

    // The schedule raised `timed` at its minute and lowered it a minute later.
    until(
        "timed raised and lowered",
        LIMIT,
        &context(&operator),
        || async {
            let seen = timed_sizes.lock().expect("sizes").clone();
            (seen.len() >= 3).then_some(())
        },
    )
    .await;
    sampler.abort();
    let seen = timed_sizes.lock().expect("sizes").clone();
    let sizes: Vec<i32> = seen.iter().map(|(_, n)| *n).collect();
    assert_eq!(sizes, vec![0, 1, 0], "{seen:?}");
    let minute = jiff::Timestamp::from_second(start.as_second().div_euclid(60) * 60).expect("time");
    let (raised, lowered) = (seen[1].0, seen[2].0);
    assert!(
        raised >= minute,
        "raised at {raised}, the schedule starts at {minute}"
    );
    assert!(
        lowered >= minute + jiff::SignedDuration::from_secs(60),
        "lowered at {lowered}, the schedule holds until a minute after {minute}"
    );
    println!(
        "REAL timed: raised {:.1} s after its minute began, lowered {:.1} s after it ended",
        raised.duration_since(minute).as_secs_f64(),
        (lowered.duration_since(minute) - jiff::SignedDuration::from_secs(60)).as_secs_f64()
    );

    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "virtualmachinegroup",
        "timed",
        "--wait=true",
        "--timeout=240s",
    ]);
    nothing_left(&real, &baseline);
    let desired = operator
        .metric("verda_group_autoscaling_desired_replicas", &[])
        .await;
    assert_eq!(desired, None, "the series goes with the groups");
    println!(
        "REAL autoscaling stage in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
