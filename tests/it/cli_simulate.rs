//! `verda-operator simulate` as a benchmark starts it: the binary, its tenants' clouds.yaml
//! files, each good for a token of that tenant's own project.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::real::free_port;

/// The clouds.yaml at `path` once the simulator has written it whole.
async fn written(path: &Path) -> Value {
    for _ in 0..300 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let read = serde_saphyr::from_str::<Value>(&text).ok();
        if let Some(clouds) = read.filter(|c| c["clouds"]["verda-sim-appcred"].is_object()) {
            return clouds;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} was not written within 30 s", path.display());
}

#[tokio::test]
async fn simulate_writes_a_clouds_yaml_per_tenant_that_scopes_to_its_own_project() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-simulate-tenants");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let port = free_port();
    let mut simulator = Command::new(env!("CARGO_BIN_EXE_verda-operator"))
        .args(["simulate", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--sim-tenants", "2", "--tenant-clouds"])
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the simulator starts");

    let clouds = written(&dir.join("tenant-2.yaml")).await;
    let cloud = &clouds["clouds"]["verda-sim-appcred"]["auth"];
    let auth_url = cloud["auth_url"].as_str().expect("an auth_url");
    let body = json!({"auth": {"identity": {"methods": ["application_credential"],
        "application_credential": {"id": cloud["application_credential_id"],
                                   "secret": cloud["application_credential_secret"]}}}});
    let issued = reqwest::Client::new()
        .post(format!("{auth_url}/auth/tokens"))
        .json(&body)
        .send()
        .await
        .expect("Keystone answers");
    let status = issued.status();
    let token: Value = issued.json().await.expect("a token body");
    simulator.kill().expect("the simulator stops");
    let _ = simulator.wait();

    assert_eq!(status, 201, "{token}");
    assert_eq!(token["token"]["project"]["name"], "tenant-2");
    assert!(
        dir.join("tenant-1.yaml").exists(),
        "every tenant's file is written"
    );
}
