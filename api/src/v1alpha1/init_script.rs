//! The init script of a VirtualMachine: inline, or a key of a ConfigMap or Secret.

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// Cloud-init user data for the server. Exactly one of `value`, `configMapKeyRef` or
/// `secretKeyRef` is set. The script is read once, when the server is created: editing
/// it (or the referenced key) later does not change a running server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new(
    "[has(self.value), has(self.configMapKeyRef), has(self.secretKeyRef)].filter(x, x).size() == 1"
).message("initScript needs exactly one of value, configMapKeyRef or secretKeyRef"))]
pub struct InitScript {
    /// The script itself, passed to the server as user data (for example a cloud-config
    /// document or a shell script); at most 49,149 characters, which Nova takes as 65,535
    /// characters of base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 49149))]
    pub value: Option<String>,
    /// A key of a ConfigMap in the same namespace whose value is the script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_key_ref: Option<KeySelector>,
    /// A key of a Secret in the same namespace whose value is the script. Use this when
    /// the script carries credentials: its content never appears in status or events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<KeySelector>,
}

/// Selects one key of a ConfigMap or Secret in the object's namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
pub struct KeySelector {
    /// Name of the ConfigMap or Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The key whose value is used.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}
