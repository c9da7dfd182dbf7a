//! kubectl against the server: the published manifests apply unchanged, and `get/scale/wait/delete` work.
//! Skipped (with a message) when kubectl is not on PATH.

use std::process::Command;

use verda_test_apiserver::ApiServer;

use crate::support::fixtures;

fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
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

fn manifests() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/verda-manifests")
}

async fn exercise(server: &ApiServer) {
    let dir = std::env::temp_dir().join(format!("verda-kubectl-{}", server.addr().port()));
    let kc = dir.join("kubeconfig");
    server.write_kubeconfig(&kc).unwrap();
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
