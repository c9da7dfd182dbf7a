//! The operator's HTTP endpoints, over a real socket: liveness, readiness that follows
//! the process state, and metrics in the Prometheus text format.

use verda_operator::http::{self, Health};
use verda_operator::metrics::{CloudOperationLabels, CloudRequestLabels, Metrics};

#[tokio::test]
async fn probes_and_metrics_answer_over_http() {
    let metrics = Metrics::new();
    metrics
        .cloud_requests
        .get_or_create(&CloudRequestLabels {
            service: "compute",
            operation: "create_server",
            code: "202".to_owned(),
        })
        .inc();
    metrics
        .cloud_request_duration
        .get_or_create(&CloudOperationLabels {
            service: "compute",
            operation: "create_server",
        })
        .observe(0.02);
    let health = Health::new(metrics);
    let listener = http::bind("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(http::serve(listener, health.clone(), async {
        let _ = stopped.await;
    }));
    let get = |path: &str| reqwest::get(format!("{base}{path}"));

    assert_eq!(get("/healthz").await.expect("healthz").status(), 200);
    assert_eq!(get("/readyz").await.expect("readyz").status(), 503);
    health.set_ready(true);
    assert_eq!(get("/readyz").await.expect("readyz").status(), 200);

    let response = get("/metrics").await.expect("metrics");
    assert_eq!(response.status(), 200);
    let body = response.text().await.expect("body");
    assert!(
        body.contains(
            r#"verda_cloud_requests_total{service="compute",operation="create_server",code="202"} 1"#
        ),
        "{body}"
    );
    assert!(
        body.contains("# TYPE verda_cloud_request_duration_seconds histogram"),
        "{body}"
    );

    let _ = stop.send(());
    server.await.expect("server task").expect("clean shutdown");
}
