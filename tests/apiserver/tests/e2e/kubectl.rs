//! kubectl against the server: the published manifests apply unchanged, `get/scale/wait/delete` work, and
//! `get events` prints the columns it prints on a real cluster. Skipped (with a message) when kubectl is not
//! on PATH.

use std::process::Command;

use k8s_openapi::api::core::v1::Event as CoreEvent;
use kube::api::{Api, PostParams};
use serde_json::json;
use verda_test_apiserver::ApiServer;

use crate::support::{NS, fixtures};

fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> (bool, String) {
    // Discovery is cached beside the kubeconfig: kubectl's own cache is keyed by host and
    // port, and a test server on a port an earlier one used (with other CRDs) would be
    // read from it ("the server doesn't have a resource type").
    let cache = kubeconfig.with_file_name("cache");
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .output()
        .expect("kubectl runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn have_kubectl() -> bool {
    Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A kubeconfig for kubectl to reach `server`, in a directory removed when dropped.
struct KubeconfigDir(std::path::PathBuf);

impl KubeconfigDir {
    fn for_server(server: &ApiServer) -> Self {
        let dir = std::env::temp_dir().join(format!("verda-kubectl-{}", server.addr().port()));
        server.write_kubeconfig(dir.join("kubeconfig")).unwrap();
        Self(dir)
    }

    fn kubeconfig(&self) -> std::path::PathBuf {
        self.0.join("kubeconfig")
    }
}

impl Drop for KubeconfigDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn manifests() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/verda-manifests")
}

async fn exercise(server: &ApiServer) {
    let dir = KubeconfigDir::for_server(server);
    let kc = dir.kubeconfig();
    let m = manifests();
    let m = m.to_str().unwrap();
    let (ok, out) = tokio::task::spawn_blocking({
        let kc = kc.clone();
        let m = m.to_string();
        move || {
            let mut log = String::new();
            let mut all = true;
            for args in [
                vec!["apply", "-f", m.as_str()],
                vec!["apply", "-f", m.as_str()],
                vec!["apply", "--server-side", "-f", m.as_str()],
                vec!["get", "verda"],
                vec!["scale", "vmg/virtualmachinegroup-sample", "--replicas=3"],
                vec![
                    "wait",
                    "--for=jsonpath={.spec.replicas}=3",
                    "vmg/virtualmachinegroup-sample",
                    "--timeout=10s",
                ],
                vec!["delete", "vm/vm-sample", "--wait=false"],
                vec![
                    "get",
                    "vm",
                    "vm-sample",
                    "-o",
                    "jsonpath={.metadata.deletionTimestamp}",
                ],
            ] {
                let (ok, out) = kubectl(&kc, &args);
                log.push_str(&format!("$ kubectl {}\n{out}\n", args.join(" ")));
                all &= ok;
            }
            (all, log)
        }
    })
    .await
    .unwrap();
    assert!(ok, "{out}");
    assert!(
        out.contains("virtualmachinegroup.verda.linecorp.com/virtualmachinegroup-sample scaled"),
        "{out}"
    );
    assert!(out.contains("condition met"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_applies_the_published_manifests_and_scales_with_the_kube_wire_crds() {
    if !have_kubectl() || !manifests().exists() {
        eprintln!("skipped: kubectl or the published manifests are not available");
        return;
    }
    let server = ApiServer::builder()
        .crd_dir(fixtures())
        .start()
        .await
        .unwrap();
    exercise(&server).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_applies_the_published_manifests_with_the_generated_crds() {
    if !have_kubectl() || !manifests().exists() || !verda_test_apiserver::default_crd_dir().exists()
    {
        eprintln!(
            "skipped: kubectl, the published manifests or config/crd/bases are not available"
        );
        return;
    }
    let server = ApiServer::start().await.unwrap();
    exercise(&server).await;
}

/// One event through each API: events.k8s.io/v1 as the operator's recorder writes it, core/v1 as client-go's.
async fn record_events(client: kube::Client) {
    crate::support::publish_server_creating(&client, None, 1).await;
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let legacy: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "vm-b.legacy"}, "type": "Warning", "reason": "ServerError", "message": "server went to ERROR",
        "involvedObject": {"kind": "VirtualMachine", "name": "vm-b"}, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    }))
    .unwrap();
    Api::<CoreEvent>::namespaced(client, NS)
        .create(&PostParams::default(), &legacy)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_get_events_prints_the_columns_of_a_real_cluster() {
    if !have_kubectl() {
        eprintln!("skipped: kubectl is not on PATH");
        return;
    }
    let server = ApiServer::builder()
        .crd_dir(fixtures())
        .start()
        .await
        .unwrap();
    record_events(server.client().unwrap()).await;
    let dir = KubeconfigDir::for_server(&server);
    let kc = dir.kubeconfig();
    let [plain, wide, v1, sorted] = tokio::task::spawn_blocking(move || {
        [
            vec!["get", "events"],
            vec!["get", "events", "-o", "wide"],
            vec!["get", "events.v1.events.k8s.io"],
            // Sorting by a field that is no column needs whole objects in the Table's rows.
            vec!["get", "events", "--sort-by=.lastTimestamp"],
        ]
        .map(|args| kubectl(&kc, &args))
    })
    .await
    .unwrap();
    let header = |out: &str| -> Vec<String> {
        let first = out.lines().next().unwrap_or_default();
        first.split_whitespace().map(String::from).collect()
    };
    let columns = ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"];
    for (ok, out) in [&plain, &v1, &sorted] {
        assert!(ok, "{out}");
        assert_eq!(header(out), columns, "{out}");
        assert!(out.contains("virtualmachine/vm-a"), "{out}");
        assert!(out.contains("server went to ERROR"), "{out}");
    }
    let (ok, out) = &wide;
    assert!(ok, "{out}");
    assert_eq!(
        header(out),
        [
            "LAST",
            "SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST",
            "SEEN",
            "COUNT",
            "NAME"
        ],
        "{out}"
    );
    assert!(out.contains("verda-operator, pod-1"), "{out}");
}
