//! `verda-operator run` as a user starts it outside a cluster: the binary, a kubeconfig
//! for the test API server, no cloud configured (so the embedded simulator).

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use kube::Api;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::VirtualMachine;
use verda_test_apiserver::ApiServer;

use support::e2e::{eventually, sample};

/// The operator binary with a clean environment: no cloud, no Pod, `dir` as home.
fn operator(dir: &Path, kubeconfig: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_verda-operator"));
    cmd.arg("run")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("KUBECONFIG", kubeconfig)
        .current_dir(dir)
        .stdin(Stdio::null());
    cmd
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-run-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[tokio::test]
async fn a_lease_namespace_that_does_not_exist_ends_run_with_one_error_line() {
    let server = ApiServer::start().await.expect("server");
    let dir = scratch("lease");
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    // On several threads, as a replica that keeps a core busy runs.
    let mut cmd = operator(
        &dir,
        &kubeconfig,
        &["--leader-elect", "--worker-threads", "2"],
    );
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::task::spawn_blocking(move || cmd.output()),
    )
    .await
    .expect("run stops at once instead of waiting for a Lease")
    .expect("joined")
    .expect("ran");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("namespaces \"verda-system\" not found")
            && errors[0].contains("kubectl create namespace verda-system")
            && !errors[0].contains("Status {"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_thread_count_out_of_range_is_refused_in_one_line() {
    let dir = scratch("threads");
    let mut cmd = operator(&dir, &dir.join("kubeconfig"), &[]);
    let output = cmd.env("VERDA_WORKER_THREADS", "0").output().expect("ran");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--worker-threads") && stderr.contains("0 is not in 1..=256"),
        "{stderr}"
    );
}

#[test]
fn a_zero_lease_or_resync_period_ends_run_at_start_with_one_error_line() {
    let dir = scratch("zero-durations");
    let mut cmd = operator(&dir, &dir.join("kubeconfig"), &["--lease-duration", "0"]);
    let output = cmd.output().expect("ran");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("--lease-duration") && errors[0].contains("\"0\""),
        "{stderr}"
    );
    let config = dir.join("config.yaml");
    std::fs::write(&config, "resyncPeriod: \"0\"\n").expect("config written");
    let config = config.to_string_lossy().into_owned();
    let output = operator(&dir, &dir.join("kubeconfig"), &["--config", &config])
        .output()
        .expect("ran");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("invalid duration \"0\""), "{stderr}");
}

#[tokio::test]
async fn outside_a_cluster_run_needs_no_flags_and_converges_the_published_vm() {
    let server = ApiServer::start().await.expect("server");
    let dir = scratch("plain");
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let log = std::fs::File::create(dir.join("operator.log")).expect("log");
    let mut child = operator(&dir, &kubeconfig, &[])
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("operator starts");

    let vms: Api<VirtualMachine> = Api::namespaced(server.client().expect("client"), "default");
    let vm: VirtualMachine = serde_yaml_ng::from_str(&sample("virtualmachine.yaml")).expect("yaml");
    vms.create(&Default::default(), &vm).await.expect("created");
    eventually(
        "vm-sample is Ready on the embedded simulator",
        Duration::from_secs(60),
        || async {
            let vm = vms.get("vm-sample").await.ok()?;
            is_true(&vm.status?.conditions, READY).then_some(())
        },
    )
    .await;

    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let status = child.wait().expect("exits");
    let text = std::fs::read_to_string(dir.join("operator.log")).expect("log");
    assert!(status.success(), "{text}");
    assert!(text.contains("leader election off"), "{text}");
    assert!(!text.contains("error:"), "{text}");
}
