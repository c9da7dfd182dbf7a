//! Where an object's OpenStack credentials come from.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Secret in the object's own namespace (there is deliberately no namespace field)
/// holding the OpenStack credentials to act with: `clouds.yaml` under the key
/// `clouds.yaml`, and optionally a CA bundle (PEM) under `cacert`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloudCredentialsRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub secret_name: String,
    /// The cloud of that clouds.yaml to use; may be left out when it defines only one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub cloud_name: Option<String>,
}
