//! The generated CRDs: names, short names, category, printer columns, subresources, and
//! the committed `config/crd/bases` matching what the types generate.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use verda_operator::crdgen;

fn crd(kind: &str) -> CustomResourceDefinition {
    crdgen::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD for {kind}"))
}

fn columns(crd: &CustomResourceDefinition) -> Vec<(String, String)> {
    crd.spec.versions[0]
        .additional_printer_columns
        .iter()
        .flatten()
        .filter(|c| c.priority.unwrap_or(0) == 0)
        .map(|c| (c.name.to_uppercase(), c.json_path.clone()))
        .collect()
}

#[test]
fn every_kind_is_namespaced_in_the_verda_group_with_short_name_and_category() {
    for (kind, plural, short) in [
        ("VirtualMachine", "virtualmachines", "vm"),
        ("VirtualMachineGroup", "virtualmachinegroups", "vmg"),
        ("LoadBalancer", "loadbalancers", "lb"),
    ] {
        let c = crd(kind);
        assert_eq!(
            c.metadata.name.as_deref(),
            Some(&*format!("{plural}.verda.linecorp.com"))
        );
        assert_eq!(c.spec.group, "verda.linecorp.com");
        assert_eq!(c.spec.scope, "Namespaced");
        assert_eq!(c.spec.names.plural, plural);
        assert_eq!(c.spec.names.short_names, Some(vec![short.to_owned()]));
        assert_eq!(c.spec.names.categories, Some(vec!["verda".to_owned()]));
        let version = &c.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        assert!(version.served && version.storage);
        let subresources = version.subresources.as_ref().expect("subresources");
        assert!(
            subresources.status.is_some(),
            "{kind} lacks the status subresource"
        );
    }
}

/// The Ready condition's status: the READY column of every kind.
const READY: &str = ".status.conditions[?(@.type==\"Ready\")].status";

#[test]
fn printer_columns_show_what_kubectl_get_users_look_for() {
    let expect = |kind: &str, want: &[(&str, &str)]| {
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, p)| ((*n).to_owned(), (*p).to_owned()))
            .collect();
        assert_eq!(columns(&crd(kind)), want, "{kind}");
    };
    expect(
        "VirtualMachine",
        &[
            ("READY", READY),
            ("STATE", ".status.state"),
            ("IP", ".status.primaryIP"),
            ("FLAVOR", ".spec.flavor"),
            ("IMAGE", ".spec.image"),
            ("VOLUMES", ".status.volumesAttached"),
            ("AGE", ".metadata.creationTimestamp"),
        ],
    );
    expect(
        "VirtualMachineGroup",
        &[
            ("READY", READY),
            ("DESIRED", ".spec.replicas"),
            ("CURRENT", ".status.replicas"),
            ("UP-TO-DATE", ".status.updatedReplicas"),
            ("AVAILABLE", ".status.availableReplicas"),
            ("POLICY", ".spec.haPolicy"),
            ("RETAINED", ".status.retainedVolumes"),
            ("AGE", ".metadata.creationTimestamp"),
        ],
    );
    expect(
        "LoadBalancer",
        &[
            ("READY", READY),
            ("VIP", ".status.vip"),
            ("STATUS", ".status.provisioningStatus"),
            ("MEMBERS", ".status.members"),
            ("SPLIT", ".status.split"),
            ("AGE", ".metadata.creationTimestamp"),
        ],
    );
}

#[test]
fn wide_output_adds_the_ready_reason_to_every_kind() {
    for kind in ["VirtualMachine", "VirtualMachineGroup", "LoadBalancer"] {
        let c = crd(kind);
        let reason = c.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .find(|c| c.name == "Reason")
            .unwrap_or_else(|| panic!("{kind} has a Reason column"));
        assert_eq!(reason.priority, Some(1), "{kind}: in -o wide only");
        assert_eq!(
            reason.json_path,
            READY
                .replace(".status", ".reason")
                .replacen(".reason", ".status", 1)
        );
    }
}

#[test]
fn group_has_the_scale_subresource_on_replicas_and_selector() {
    let c = crd("VirtualMachineGroup");
    let scale = c.spec.versions[0]
        .subresources
        .as_ref()
        .and_then(|s| s.scale.as_ref())
        .expect("scale subresource");
    assert_eq!(scale.spec_replicas_path, ".spec.replicas");
    assert_eq!(scale.status_replicas_path, ".status.replicas");
    assert_eq!(
        scale.label_selector_path.as_deref(),
        Some(".status.selector")
    );
    for kind in ["VirtualMachine", "LoadBalancer"] {
        let sub = crd(kind).spec.versions[0]
            .subresources
            .clone()
            .expect("subresources");
        assert!(sub.scale.is_none(), "{kind} must not be scalable");
    }
}

#[test]
fn every_schema_field_has_a_description_for_kubectl_explain() {
    fn walk(path: &str, node: &serde_json::Value, missing: &mut Vec<String>) {
        if let Some(props) = node.get("properties").and_then(|p| p.as_object()) {
            for (name, child) in props {
                let here = format!("{path}.{name}");
                // Condition is Kubernetes' own type, documented upstream.
                if !here.contains(".conditions.") && child.get("description").is_none() {
                    missing.push(here.clone());
                }
                walk(&here, child, missing);
            }
        }
        if let Some(items) = node.get("items") {
            walk(path, items, missing);
        }
    }
    let mut missing = Vec::new();
    for c in crdgen::crds() {
        let schema = serde_json::to_value(&c.spec.versions[0].schema).expect("schema");
        let root = &schema["openAPIV3Schema"];
        walk(
            &c.spec.names.kind,
            &root["properties"]["spec"],
            &mut missing,
        );
        walk(
            &c.spec.names.kind,
            &root["properties"]["status"],
            &mut missing,
        );
    }
    assert!(
        missing.is_empty(),
        "fields without a description: {missing:#?}"
    );
}

#[test]
fn committed_crds_match_what_the_types_generate() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/crd/bases");
    for c in crdgen::crds() {
        let path = dir.join(crdgen::file_name(&c));
        let committed = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!("{} is missing: run `verda-operator crdgen`", path.display())
        });
        assert_eq!(
            committed,
            crdgen::render(&c).expect("render"),
            "{} is stale: run `cargo run -- crdgen`",
            path.display()
        );
    }
}
