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

/// The one `error:` line of a run that stopped at start, with its exit status.
fn start_error(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let output = operator(dir, &dir.join("kubeconfig"), args)
        .output()
        .expect("ran");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
    (output.status.code(), errors[0].to_owned())
}

#[test]
fn out_of_range_durations_and_counts_end_run_at_start_with_one_error_line() {
    let dir = scratch("out-of-range");
    for (flags, named) in [
        (&["--lease-duration", "0"][..], "\"0\" is out of range"),
        (
            &["--lease-duration", "1s"],
            "\"1s\" is out of range: use 2s to 10m",
        ),
        (
            &["--lease-duration", "2500ms"],
            "not a whole number of seconds",
        ),
        (
            &["--lease-duration", "3 fortnights"],
            "invalid duration \"3 fortnights\"",
        ),
        (&["--worker-threads", "0"], "0 is not in 1..=256"),
        (&["--sim-hosts", "0"], "0 is not in 1..=10000"),
    ] {
        let (code, error) = start_error(&dir, flags);
        assert_eq!(code, Some(2), "{flags:?}: {error}");
        assert!(
            error.contains(flags[0]) && error.contains(named),
            "{flags:?}: {error}"
        );
    }
    let config = dir.join("config.yaml");
    for (text, named) in [
        (
            "resyncPeriod: \"0\"\n",
            "\"0\" is out of range: use 1s to 24h",
        ),
        ("resyncPeriod: 0\n", "\"0\" is out of range"),
        ("resyncPeriod: 400d\n", "\"400d\" is out of range"),
        ("resyncPeriod: soon\n", "invalid duration \"soon\""),
        ("requestBudget: {burst: 0}\n", "burst 0 is out of range"),
        (
            "requestBudget: {requestsPerSecond: 1e12}\n",
            "requestsPerSecond 1000000000000 is out of range",
        ),
    ] {
        std::fs::write(&config, text).expect("config written");
        let (code, error) = start_error(&dir, &["--config", &config.to_string_lossy()]);
        assert_eq!(code, Some(1), "{text}: {error}");
        assert!(
            error.contains("config.yaml") && error.contains(named),
            "{text}: {error}"
        );
    }
}

/// A panic in a task of the running operator stops the process with one `error:` line,
/// instead of leaving it running without that task. The test runs itself as the child
/// (the hook the binary installs, in a process of its own) with a task that panics.
#[test]
fn a_panic_in_any_task_ends_the_process_with_one_error_line() {
    const CHILD: &str = "VERDA_TEST_PANIC_CHILD";
    if std::env::var_os(CHILD).is_some() {
        verda_operator::telemetry::exit_on_panic();
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        runtime.block_on(async {
            tokio::spawn(async { panic!("the cloud view lost its index") });
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        unreachable!("the panic ended the process");
    }
    let output = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "cli_run::a_panic_in_any_task_ends_the_process_with_one_error_line",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::null())
        .output()
        .expect("child ran");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(verda_operator::telemetry::PANIC_EXIT_CODE),
        "{stderr}"
    );
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("internal fault at tests/it/cli_run.rs")
            && errors[0].contains("the cloud view lost its index"),
        "{stderr}"
    );
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
    let vm: VirtualMachine = serde_saphyr::from_str(&sample("virtualmachine.yaml")).expect("yaml");
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
