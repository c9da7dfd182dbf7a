//! The resource types the server knows: our CRDs (parsed from `CustomResourceDefinition` YAML) and the
//! built-in kinds the operator uses (Namespaces, ConfigMaps, Secrets, core and events.k8s.io Events, Leases).
//!
//! A [`ResourceType`] carries everything the handlers need (names, scope, subresources, schema, printer
//! columns) and the view conversion for resources stored once but served in two shapes (Events). It does not
//! serve discovery documents (see `discovery`), nor validate objects (see `validation`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::error::StartError;
use crate::events;

/// The `.spec.replicas`-style paths of a CRD's scale subresource.
#[derive(Debug, Clone)]
pub struct ScaleSpec {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub json_path: String,
    pub priority: i64,
    pub description: String,
}

/// How a stored object is shown for this resource (Events are stored once, served as core/v1 and events.k8s.io/v1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Plain,
    CoreEvent,
    EventsV1,
}

#[derive(Debug, Clone)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub status: bool,
    pub scale: Option<ScaleSpec>,
    /// `openAPIV3Schema` of a CRD version; `None` for built-ins (no schema validation).
    /// Shared: every request takes its own copy of the resource type.
    pub schema: Option<std::sync::Arc<Value>>,
    pub printer_columns: Vec<PrinterColumn>,
    /// Custom resource (CRD semantics: generation, no unconditional PUT, `apiVersion`/`kind` on list items).
    pub custom: bool,
    /// Storage bucket; two resource types share one when they are views of the same objects.
    pub storage: String,
    pub view: View,
    pub verbs: Vec<&'static str>,
}

const CRD_VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `virtualmachines.verda.linecorp.com`, or just `configmaps` for the core group.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Status `details` for name-level errors: `kind` is the plural resource name.
    pub fn details(&self, name: &str) -> Value {
        let mut d = json!({"name": name, "kind": self.plural});
        if !self.group.is_empty() {
            d["group"] = json!(self.group);
        }
        d
    }

    /// Converts a stored object to this resource's wire shape.
    pub fn to_view(&self, stored: &Value) -> Value {
        match self.view {
            View::Plain => stored.clone(),
            View::CoreEvent => events::core_view(stored),
            View::EventsV1 => events::events_v1_view(stored),
        }
    }

    /// Converts a wire object of this resource into the stored shape.
    pub fn to_storage(&self, view: Value) -> Value {
        match self.view {
            View::Plain if self.plural == "secrets" && self.group.is_empty() => {
                events::secret_string_data(view)
            }
            View::Plain | View::CoreEvent => view,
            View::EventsV1 => events::events_v1_to_core(view),
        }
    }

    /// Whether `generation` is maintained (custom resources; built-ins used here have none).
    pub fn has_generation(&self) -> bool {
        self.custom
    }
}

/// All resource types served.
#[derive(Debug, Clone)]
pub struct Registry {
    pub types: Vec<ResourceType>,
}

impl Registry {
    pub fn new(crds: Vec<ResourceType>) -> Self {
        let mut types = builtins();
        types.extend(crds);
        Self { types }
    }

    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// The canonical type for a storage bucket (used by the garbage collector).
    pub fn by_storage(&self, storage: &str) -> Option<&ResourceType> {
        self.types.iter().find(|t| t.storage == storage)
    }

    pub fn groups(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for t in &self.types {
            let gv = (t.group.clone(), t.version.clone());
            if !out.contains(&gv) {
                out.push(gv);
            }
        }
        out
    }
}

fn builtin(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    short: &[&str],
) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        list_kind: format!("{kind}List"),
        short_names: short.iter().map(|s| s.to_string()).collect(),
        categories: vec![],
        namespaced,
        status: false,
        scale: None,
        schema: None,
        printer_columns: vec![],
        custom: false,
        storage: format!("{group}/{plural}"),
        view: View::Plain,
        verbs: if namespaced {
            vec![
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        } else {
            vec![
                "create", "delete", "get", "list", "patch", "update", "watch",
            ]
        },
    }
}

fn builtins() -> Vec<ResourceType> {
    let mut ns = builtin("", "v1", "Namespace", "namespaces", false, &["ns"]);
    ns.status = true;
    let mut core_events = builtin("", "v1", "Event", "events", true, &["ev"]);
    core_events.view = View::CoreEvent;
    core_events.storage = "events".into();
    let mut v1_events = builtin("events.k8s.io", "v1", "Event", "events", true, &["ev"]);
    v1_events.view = View::EventsV1;
    v1_events.storage = "events".into();
    vec![
        ns,
        builtin("", "v1", "ConfigMap", "configmaps", true, &["cm"]),
        builtin("", "v1", "Secret", "secrets", true, &[]),
        core_events,
        v1_events,
        builtin("coordination.k8s.io", "v1", "Lease", "leases", true, &[]),
    ]
}

/// Reads every `*.yaml`/`*.yml` file of `dir` (sorted) and returns the served versions of the CRDs in it.
pub fn load_crd_dir(dir: &Path) -> Result<Vec<ResourceType>, StartError> {
    let entries =
        std::fs::read_dir(dir).map_err(|_| StartError::NoCrdDir(dir.display().to_string()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|source| StartError::ReadCrd {
            path: f.display().to_string(),
            source,
        })?;
        out.extend(parse_crds(&text).map_err(|message| StartError::ParseCrd {
            path: f.display().to_string(),
            message,
        })?);
    }
    Ok(out)
}

/// Parses a (multi-document) YAML text of CustomResourceDefinitions; other kinds are skipped.
pub fn parse_crds(text: &str) -> Result<Vec<ResourceType>, String> {
    let mut out = Vec::new();
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| e.to_string())?;
    for v in docs {
        if v.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
            continue;
        }
        out.extend(crd_versions(&v)?);
    }
    Ok(out)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn crd_versions(crd: &Value) -> Result<Vec<ResourceType>, String> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let group = s(&spec["group"]);
    let plural = s(&names["plural"]);
    let kind = s(&names["kind"]);
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Err("CRD without spec.group, names.plural or names.kind".into());
    }
    let mut out = Vec::new();
    for ver in spec["versions"].as_array().into_iter().flatten() {
        if ver["served"].as_bool() == Some(false) {
            continue;
        }
        let scale = ver["subresources"].get("scale").map(|sc| ScaleSpec {
            spec_replicas: s(&sc["specReplicasPath"]),
            status_replicas: s(&sc["statusReplicasPath"]),
            label_selector: sc["labelSelectorPath"].as_str().map(String::from),
        });
        let printer_columns = ver["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| PrinterColumn {
                name: s(&c["name"]),
                type_: s(&c["type"]),
                format: s(&c["format"]),
                json_path: s(&c["jsonPath"]),
                priority: c["priority"].as_i64().unwrap_or(0),
                description: c["description"]
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(|| {
                        format!(
                            "Custom resource definition column (in JSONPath format): {}",
                            s(&c["jsonPath"])
                        )
                    }),
            })
            .collect();
        out.push(ResourceType {
            group: group.clone(),
            version: s(&ver["name"]),
            kind: kind.clone(),
            plural: plural.clone(),
            singular: names["singular"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| kind.to_lowercase()),
            list_kind: names["listKind"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| format!("{kind}List")),
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            namespaced: spec["scope"].as_str() != Some("Cluster"),
            status: ver["subresources"].get("status").is_some(),
            scale,
            schema: ver["schema"]
                .get("openAPIV3Schema")
                .cloned()
                .map(std::sync::Arc::new),
            printer_columns,
            custom: true,
            storage: format!("{group}/{plural}"),
            view: View::Plain,
            verbs: CRD_VERBS.to_vec(),
        });
    }
    Ok(out)
}
