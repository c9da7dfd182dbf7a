//! The generated CRD schemas as an apiserver would apply them: OpenAPI structure checked
//! with a JSON-schema validator, then the `x-kubernetes-validations` CEL rules evaluated
//! with kube's CEL interpreter (defaults applied first, `oldSelf` for updates).

use std::path::PathBuf;

use serde_json::Value;

/// Root of the repository.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `openAPIV3Schema` of `kind`, read from the committed `config/crd/bases`.
pub fn schema_of(kind: &str) -> Value {
    let dir = repo_root().join("config/crd/bases");
    for entry in std::fs::read_dir(&dir).expect("config/crd/bases exists") {
        let path = entry.expect("readable dir entry").path();
        let text = std::fs::read_to_string(&path).expect("readable CRD");
        let crd: Value = serde_saphyr::from_str(&text).expect("CRD is YAML");
        if crd["spec"]["names"]["kind"] == kind {
            return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone();
        }
    }
    panic!("no CRD for kind {kind} in {}", dir.display());
}

/// Every document of a (multi-document) YAML text.
pub fn documents(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text)
        .expect("valid YAML documents")
        .into_iter()
        .filter(|doc| !doc.is_null())
        .collect()
}

/// Why the apiserver would refuse `object` (as an update of `old` when given): one line
/// per problem, `path: message`. Empty when it would be accepted.
pub fn refusals(object: &Value, old: Option<&Value>) -> Vec<String> {
    let kind = object["kind"].as_str().expect("object has a kind");
    let schema = schema_of(kind);
    // Kubernetes validates metadata itself; the CRD schema covers the rest.
    let mut body = object.clone();
    if let Some(map) = body.as_object_mut() {
        for key in ["apiVersion", "kind", "metadata"] {
            map.remove(key);
        }
    }
    let validator = jsonschema::validator_for(&schema).expect("CRD schema compiles");
    let mut out: Vec<String> = validator
        .iter_errors(&body)
        .map(|e| format!("{}: {}", e.instance_path(), e))
        .collect();
    if out.is_empty() {
        let old_body = old.cloned();
        if let Err(errors) =
            kube::core::cel::Validator::new().validate(&schema, object, old_body.as_ref())
        {
            out.extend(errors.iter().map(|e| e.to_string()));
        }
    }
    out
}
