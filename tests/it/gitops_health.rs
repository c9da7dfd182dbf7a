//! The Argo CD health check as Argo CD would run it, on the captured objects of
//! `config/argocd/health_test.yaml` (Argo CD's own test format), and the argocd-cm
//! snippet we publish carrying exactly that check for each kind.

use crate::support;

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};
use support::gitops::{HEALTH_LUA, KStatus, argo_health, kstatus};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/config/argocd");

#[derive(Deserialize)]
struct HealthTests {
    tests: Vec<HealthTest>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HealthTest {
    health_status: Expected,
    input_path: String,
}

#[derive(Deserialize)]
struct Expected {
    status: String,
    message: Option<String>,
}

fn read_yaml<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn captured_objects_get_the_health_argo_cd_should_show() {
    let cases: HealthTests = read_yaml(&Path::new(DIR).join("health_test.yaml"));
    assert!(cases.tests.len() >= 8, "every captured stage is listed");
    for case in &cases.tests {
        let obj: Value = read_yaml(&Path::new(DIR).join(&case.input_path));
        let health = argo_health(&obj);
        assert_eq!(
            health.status, case.health_status.status,
            "{}",
            case.input_path
        );
        if let Some(message) = &case.health_status.message {
            assert_eq!(&health.message, message, "{}", case.input_path);
        }
        // kstatus agrees on what is settled and what is not.
        let expected = match health.status.as_str() {
            "Healthy" | "Suspended" => KStatus::Current,
            "Degraded" => KStatus::Failed,
            _ => KStatus::InProgress,
        };
        assert_eq!(kstatus(&obj), expected, "{}", case.input_path);
    }
}

#[test]
fn an_object_being_deleted_or_not_yet_observed_is_progressing() {
    let ready: Value = read_yaml(&Path::new(DIR).join("testdata/virtualmachine-ready.yaml"));
    assert_eq!(argo_health(&ready).status, "Healthy");

    let mut deleting = ready.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(argo_health(&deleting).status, "Progressing");
    assert_eq!(kstatus(&deleting), KStatus::Terminating);

    let mut edited = ready.clone();
    edited["metadata"]["generation"] = json!(2);
    let health = argo_health(&edited);
    assert_eq!(
        (health.status.as_str(), health.message.as_str()),
        (
            "Progressing",
            "Waiting for the operator to observe generation 2"
        )
    );
    assert_eq!(kstatus(&edited), KStatus::InProgress);

    let mut fresh = ready;
    fresh.as_object_mut().expect("object").remove("status");
    assert_eq!(argo_health(&fresh).status, "Progressing");
}

#[test]
fn the_argocd_cm_snippet_carries_the_check_for_each_kind() {
    let cm: Value = read_yaml(&Path::new(DIR).join("argocd-cm.yaml"));
    for kind in [
        "VirtualMachine",
        "VirtualMachineGroup",
        "LoadBalancer",
        "DNSZone",
    ] {
        let key = format!("resource.customizations.health.verda.linecorp.com_{kind}");
        assert_eq!(
            cm["data"][&key].as_str(),
            Some(HEALTH_LUA),
            "{key} in config/argocd/argocd-cm.yaml must be config/argocd/health.lua verbatim"
        );
    }
}
