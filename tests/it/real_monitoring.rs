//! Monitoring on the real systems: Debian's Prometheus scrapes the operator binary
//! while the published manifests converge on real OpenStack, with the alert rules we
//! publish. Every query of the Grafana dashboard must return series, and the not-Ready
//! alert must go pending, fire and resolve for a VirtualMachine with an unknown image
//! (the test's copy of the rules waits 5 s instead of 15 min). Argo CD's health check
//! and kstatus are read off the same real objects. Run by `hack/real-systems.sh`.

use crate::support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use serde_json::Value;
use support::gitops::{KStatus, verdicts};
use support::prometheus::{Prometheus, dashboard_queries, published_rules};
use support::real::{
    Namespace, PUBLISHED_GROUP, PUBLISHED_LB, Real, all_deleted, context, pools_hold_the_group,
    project_inventory, published_scenario, until,
};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};

const LIMIT: Duration = Duration::from_secs(300);
const NOT_READY_ALERT: &str = "VerdaObjectNotReady";

/// The published rules with the not-Ready alert's 15 minutes cut to 5 s and its `for`
/// to 2 s, so a test can see it go pending and then fire.
fn rules_for_the_test() -> Value {
    let mut rules = published_rules("1s");
    let mut shortened = 0;
    for group in rules["groups"].as_array_mut().expect("groups") {
        for rule in group["rules"].as_array_mut().expect("rules") {
            if rule["alert"] == NOT_READY_ALERT {
                let expr = rule["expr"].as_str().expect("expr").to_owned();
                assert!(
                    expr.contains("> 900"),
                    "{NOT_READY_ALERT} waits 900 s: {expr}"
                );
                rule["expr"] = Value::from(expr.replace("> 900", "> 5"));
                rule["for"] = Value::from("2s");
                shortened += 1;
            }
        }
    }
    assert_eq!(
        shortened, 1,
        "the published rules have one {NOT_READY_ALERT}"
    );
    rules
}

fn to_json(obj: impl serde::Serialize) -> Value {
    serde_json::to_value(obj).expect("the object serializes")
}

/// The state (`pending`/`firing`) of the not-Ready alert for the VirtualMachine `name`.
async fn not_ready_alert(prometheus: &Prometheus, ns: &str, name: &str) -> Option<String> {
    prometheus
        .alerts()
        .await
        .into_iter()
        .find(|a| {
            a["labels"]["alertname"] == NOT_READY_ALERT
                && a["labels"]["namespace"] == ns
                && a["labels"]["name"] == name
        })
        .map(|a| {
            assert_eq!(a["labels"]["reason"], "ImageNotFound", "{a}");
            a["state"].as_str().unwrap_or_default().to_owned()
        })
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn a_real_prometheus_sees_the_dashboard_series_and_the_not_ready_alert_fire() {
    let real = Arc::new(Real::from_env());
    let binary = PathBuf::from(std::env::var_os("VERDA_REAL_PROMETHEUS").expect(
        "VERDA_REAL_PROMETHEUS (Debian's prometheus binary) is set by hack/real-systems.sh",
    ));
    let ns = Namespace::create(real.clone(), "real-monitoring");
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let operator = real.operator("monitoring", &[], None);
    let operator_started = Instant::now();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("real-systems/prometheus");
    let prometheus = Prometheus::start(
        &binary,
        &format!("127.0.0.1:{}", operator.metrics_port),
        &rules_for_the_test(),
        &dir,
    );
    prometheus.wait_for_target().await;

    // The published scenario, and one VirtualMachine no retry can fix.
    let files = published_scenario();
    for f in &files {
        real.kubectl(&["-n", &ns.name, "apply", "-f", f]);
    }
    let broken = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {name: broken}\nspec: {image: no-such-image, flavor: n3-1vcpu-2gb}\n";
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(broken));

    // The alert: inactive, then pending for its `for`, then firing.
    let started = Instant::now();
    let seen = std::sync::Mutex::new(Vec::<String>::new());
    until(
        "the not-Ready alert fires",
        LIMIT,
        &context(&operator),
        || async {
            let state = not_ready_alert(&prometheus, &ns.name, "broken").await?;
            let mut seen = seen.lock().expect("states");
            if seen.last() != Some(&state) {
                seen.push(state.clone());
            }
            (state == "firing").then_some(())
        },
    )
    .await;
    assert_eq!(
        *seen.lock().expect("states"),
        ["pending", "firing"],
        "alert states in order"
    );
    println!(
        "REAL not-Ready alert for an unknown image: firing {:.1} s after apply",
        started.elapsed().as_secs_f64()
    );

    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    // Converged: both pools hold the group's two VirtualMachines, and the group and
    // the LoadBalancer say Ready (a LoadBalancer is Ready with empty pools while the
    // group's servers still boot, so its Ready alone says nothing of the group).
    pools_hold_the_group(&ns, &client, &operator, 2).await;
    until(
        "the group and the LoadBalancer are Ready",
        LIMIT,
        &context(&operator),
        || async {
            let lb = lbs.get(PUBLISHED_LB).await.ok()?;
            let group = groups.get(PUBLISHED_GROUP).await.ok()?;
            (is_true(&lb.status?.conditions, READY) && is_true(&group.status?.conditions, READY))
                .then_some(())
        },
    )
    .await;

    // What Argo CD and Flux make of the real objects.
    let group = to_json(groups.get(PUBLISHED_GROUP).await.expect("group"));
    let lb = to_json(lbs.get(PUBLISHED_LB).await.expect("lb"));
    let failed = to_json(vms.get("broken").await.expect("vm"));
    assert_eq!(
        verdicts(&group),
        ("Healthy".to_owned(), KStatus::Current),
        "{group:#}"
    );
    assert_eq!(
        verdicts(&lb),
        ("Healthy".to_owned(), KStatus::Current),
        "{lb:#}"
    );
    assert_eq!(
        verdicts(&failed),
        ("Degraded".to_owned(), KStatus::Failed),
        "{failed:#}"
    );

    // Every dashboard query is valid PromQL and returns series once the scenario ran
    // (a panel counts when any of its queries does).
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/grafana/verda-operator.json"
        ))
        .expect("dashboard"),
    )
    .expect("dashboard JSON");
    let queries = dashboard_queries(&dashboard);
    assert!(queries.len() >= 10, "{} queries", queries.len());
    let panels: BTreeSet<&str> = queries.iter().map(|(t, _)| t.as_str()).collect();
    let mut with_data = BTreeSet::new();
    let mut queries_with_data = 0;
    let mut without_series = Vec::new();
    // Rates need two scrapes of a change: give the last writes a few seconds; the
    // orphan gauge needs the cloud view's first refresh (30 s after the start).
    let first_refresh = Duration::from_secs(35).saturating_sub(operator_started.elapsed());
    tokio::time::sleep(first_refresh.max(Duration::from_secs(5))).await;
    for (panel, expr) in &queries {
        let result = prometheus
            .query(expr)
            .await
            .unwrap_or_else(|e| panic!("panel {panel:?}: {expr} is refused: {e}"));
        if !result.is_empty() {
            with_data.insert(panel.as_str());
            queries_with_data += 1;
        } else {
            without_series.push(expr.as_str());
        }
    }
    let empty: Vec<_> = panels.difference(&with_data).collect();
    assert!(empty.is_empty(), "panels without data: {empty:?}");
    println!(
        "REAL dashboard: {} panels, all with series; {queries_with_data} of {} queries with series",
        panels.len(),
        queries.len()
    );
    // Only the failed-calls query may be empty: on a healthy cloud no call fails (the
    // panel's description says so).
    assert!(
        without_series.iter().all(|q| q.contains(r#"code!~"2..""#)),
        "dashboard queries without series: {without_series:#?}"
    );

    // Fixed (deleted), the alert resolves.
    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "virtualmachine",
        "broken",
        "--wait=false",
    ]);
    until(
        "the not-Ready alert resolves",
        LIMIT,
        &context(&operator),
        || async {
            not_ready_alert(&prometheus, &ns.name, "broken")
                .await
                .is_none()
                .then_some(())
        },
    )
    .await;

    all_deleted(&real, &client, &ns, &operator, &files, baseline).await;
}
