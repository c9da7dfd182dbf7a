//! What the driver and every controller know of a managed object: its kind's names,
//! where its status keeps conditions and project, its key, owner record and labels.

use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use verda_api::v1alpha1::CloudCredentialsRef;

/// A kind the operator manages.
pub trait Managed:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// Controller name: metric label and log field.
    const CONTROLLER: &'static str;
    /// The published finalizer name.
    const FINALIZER: &'static str;
    fn conditions(&self) -> &[Condition];
    /// The Secret the object's credentials come from, if it names one.
    fn credentials_ref(&self) -> Option<&CloudCredentialsRef>;
    /// The project its status records its cloud resources in.
    fn recorded_project(&self) -> Option<&str>;
    /// The generation its status was last written for.
    fn observed_generation(&self) -> Option<i64>;
}

/// Implements [`Managed`] for a kind whose spec has `cloud_credentials_ref` and whose
/// status has `conditions` and `project_id` (all three do).
macro_rules! managed_kind {
    ($kind:ty, $controller:literal, $finalizer:expr) => {
        impl $crate::runtime::object::Managed for $kind {
            const CONTROLLER: &'static str = $controller;
            const FINALIZER: &'static str = $finalizer;

            fn conditions(&self) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
                self.status
                    .as_ref()
                    .map(|s| s.conditions.as_slice())
                    .unwrap_or_default()
            }

            fn credentials_ref(&self) -> Option<&verda_api::v1alpha1::CloudCredentialsRef> {
                self.spec.cloud_credentials_ref.as_ref()
            }

            fn recorded_project(&self) -> Option<&str> {
                self.status.as_ref()?.project_id.as_deref()
            }

            fn observed_generation(&self) -> Option<i64> {
                self.status.as_ref()?.observed_generation
            }
        }
    };
}
pub(crate) use managed_kind;

/// The owner record (UID, namespace, name) of `obj`'s cloud resources.
pub fn owner_of<K: Resource>(obj: &K) -> crate::cloud::owner::Owner {
    crate::cloud::owner::Owner::new(
        obj.uid().unwrap_or_default(),
        obj.namespace().unwrap_or_default(),
        obj.name_any(),
    )
}

/// The labels of `obj`'s per-object gauges.
pub fn object_labels<K: Resource>(obj: &K) -> crate::metrics::ObjectLabels {
    crate::metrics::ObjectLabels {
        namespace: obj.namespace().unwrap_or_default(),
        name: obj.name_any(),
    }
}

/// `namespace/name` of an object.
pub fn object_key<K: Resource>(obj: &K) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}
