//! The kustomize tree renders, and the Deployment is locked down as promised: non-root,
//! read-only root filesystem, no capabilities, seccomp RuntimeDefault, probes, limits.

use crate::support;

use std::process::Command;

use serde_json::Value;
use support::crd_schema::{documents, repo_root};

/// `kubectl kustomize DIR`, or None when kubectl is not installed.
fn kustomize(dir: &str) -> Option<Vec<Value>> {
    let output = Command::new("kubectl")
        .args(["kustomize", dir])
        .current_dir(repo_root())
        .output()
        .ok()?;
    assert!(
        output.status.success(),
        "kubectl kustomize {dir} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(documents(
        &String::from_utf8(output.stdout).expect("UTF-8 YAML"),
    ))
}

#[test]
fn config_default_renders_a_hardened_deployment_with_least_privilege_rbac() {
    let Some(docs) = kustomize("config/default") else {
        eprintln!("kubectl not installed; skipped");
        return;
    };
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    for kind in [
        "CustomResourceDefinition",
        "ClusterRole",
        "Role",
        "Deployment",
        "Namespace",
        "ServiceAccount",
        "PodDisruptionBudget",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    assert!(docs.iter().all(|d| d["kind"] == "Namespace"
        || d["kind"] == "CustomResourceDefinition"
        || d["kind"] == "ClusterRole"
        || d["kind"] == "ClusterRoleBinding"
        || d["metadata"]["namespace"] == "verda-system"));

    // Every object says what it is, of which release, and who manages it.
    for doc in &docs {
        let labels = &doc["metadata"]["labels"];
        for key in ["name", "instance", "component", "part-of", "managed-by"] {
            let label = format!("app.kubernetes.io/{key}");
            assert!(
                labels[&label].is_string(),
                "{label} missing on {}",
                doc["kind"]
            );
        }
        assert_eq!(
            labels["app.kubernetes.io/version"],
            env!("CARGO_PKG_VERSION"),
            "{}",
            doc["kind"]
        );
    }
    // Two replicas on two nodes where there are, one at a time evicted.
    let pdb = docs
        .iter()
        .find(|d| d["kind"] == "PodDisruptionBudget")
        .expect("a PodDisruptionBudget");
    assert_eq!(pdb["spec"]["minAvailable"], 1);

    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let spread =
        &pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(
        spread["podAffinityTerm"]["topologyKey"],
        "kubernetes.io/hostname"
    );
    assert_eq!(
        deployment["spec"]["selector"]["matchLabels"],
        serde_json::json!({"app.kubernetes.io/name": "verda-operator"}),
        "the selector stays as earlier releases made it: it cannot change in place"
    );
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let container = &pod["containers"][0];
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    assert_eq!(
        container["securityContext"]["capabilities"]["drop"][0],
        "ALL"
    );
    // Two replicas: only the Lease holder may run the controllers.
    let args = container["args"].as_array().expect("args");
    assert!(args.iter().any(|a| a == "--leader-elect"), "{args:?}");
    // The image of this release, never a moving tag.
    assert_eq!(
        container["image"],
        format!(
            "ghcr.io/verda-operator/verda-operator:{}",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert!(container["resources"]["limits"]["memory"].is_string());
    let volumes = pod["volumes"].as_array().expect("volumes");
    assert!(
        volumes
            .iter()
            .any(|v| v["secret"]["secretName"] == "verda-cloud")
    );

    // The operator's ClusterRole: no wildcard, secrets read-only, only a group's scale
    // (the autoscaler's size), never deleted.
    let role = docs
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "verda-operator")
        .expect("operator ClusterRole");
    for rule in role["rules"].as_array().expect("rules") {
        let verbs: Vec<&str> = rule["verbs"]
            .as_array()
            .expect("verbs")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let resources: Vec<&str> = rule["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            !verbs.contains(&"*") && !resources.contains(&"*"),
            "wildcard in {rule}"
        );
        if resources.iter().any(|r| r.ends_with("/scale")) {
            assert_eq!(resources, ["virtualmachinegroups/scale"], "{rule}");
            assert_eq!(verbs, ["get", "update", "patch"], "{rule}");
        }
        if resources.contains(&"secrets") {
            assert_eq!(verbs, ["get", "list", "watch"]);
        }
    }
}

#[test]
fn the_prometheus_service_monitor_scrapes_the_metrics_port() {
    let Some(docs) = kustomize("config/prometheus") else {
        eprintln!("kubectl not installed; skipped");
        return;
    };
    let of_kind = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("config/prometheus has a {kind}"))
    };
    let monitor = of_kind("ServiceMonitor");
    assert_eq!(monitor["spec"]["endpoints"][0]["path"], "/metrics");
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], "http-metrics");
    let rules = of_kind("PrometheusRule");
    let alerts = rules["spec"]["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules"))
        .filter_map(|r| r["alert"].as_str())
        .count();
    assert!(alerts >= 10, "{alerts} alerts");
}

#[test]
fn the_grafana_dashboard_ships_as_a_labelled_config_map() {
    let Some(docs) = kustomize("config/grafana") else {
        eprintln!("kubectl not installed; skipped");
        return;
    };
    let cm = &docs[0];
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    let json = cm["data"]["verda-operator.json"]
        .as_str()
        .expect("dashboard");
    let dashboard: Value = serde_json::from_str(json).expect("dashboard JSON");
    assert!(
        dashboard["panels"]
            .as_array()
            .is_some_and(|p| p.len() >= 10)
    );
}

#[test]
fn dist_install_yaml_is_config_default_rendered() {
    let Some(docs) = kustomize("config/default") else {
        eprintln!("kubectl not installed; skipped");
        return;
    };
    let dist =
        std::fs::read_to_string(repo_root().join("dist/install.yaml")).expect("dist/install.yaml");
    assert!(
        documents(&dist) == docs,
        "dist/install.yaml differs from config/default: run hack/dist.sh"
    );
}
