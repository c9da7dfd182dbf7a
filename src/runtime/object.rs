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

/// The VirtualMachineGroup that controls `vm`, and `vm`'s replica index in it.
pub fn group_replica(
    vm: &verda_api::v1alpha1::VirtualMachine,
) -> Option<(
    &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
    u32,
)> {
    use kube::Resource;
    let group = vm.meta().owner_references.as_ref()?.iter().find(|r| {
        r.controller == Some(true) && r.kind == verda_api::v1alpha1::VirtualMachineGroup::kind(&())
    })?;
    Some((group, replica_index(vm, &group.name)?))
}

/// The replica index of `vm`, a VirtualMachine of the group `group`: its label
/// `verda.linecorp.com/index`; on one an earlier release created without it (its group
/// labels it in place), the `<index>` of its name `<group>-<index>`.
pub fn replica_index(vm: &verda_api::v1alpha1::VirtualMachine, group: &str) -> Option<u32> {
    let labels = vm.metadata.labels.as_ref();
    if let Some(label) = labels.and_then(|l| l.get(verda_api::v1alpha1::labels::INDEX)) {
        return label.parse().ok();
    }
    vm.metadata
        .name
        .as_deref()?
        .strip_prefix(group)?
        .strip_prefix('-')?
        .parse()
        .ok()
}

/// Whether the object is about to create its first server: it has never recorded one,
/// and would create (not import, not paused). Only then may a listing of the project
/// vouch that nothing of it exists yet.
pub fn first_create(vm: &verda_api::v1alpha1::VirtualMachine, creates: bool) -> bool {
    let recorded = vm.status.as_ref().and_then(|s| s.server_id.as_ref());
    creates && vm.spec.import.is_none() && recorded.is_none()
}

#[cfg(test)]
mod tests {
    use verda_api::v1alpha1::VirtualMachine;

    use super::replica_index;

    fn vm(name: &str, index_label: Option<&str>) -> VirtualMachine {
        let labels = index_label.map(|i| serde_json::json!({"verda.linecorp.com/index": i}));
        serde_json::from_value(serde_json::json!({
            "apiVersion": "verda.linecorp.com/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"image": "centos79", "flavor": "n3-1vcpu-2gb"},
        }))
        .expect("a VirtualMachine")
    }

    #[test]
    fn the_index_label_names_the_replica_whatever_the_name_says() {
        assert_eq!(replica_index(&vm("web-3", Some("7")), "web"), Some(7));
        assert_eq!(replica_index(&vm("web-3", Some("seven")), "web"), None);
    }

    #[test]
    fn an_unlabelled_replica_of_an_earlier_release_is_read_from_its_name() {
        assert_eq!(replica_index(&vm("web-3", None), "web"), Some(3));
        assert_eq!(replica_index(&vm("web-api-3", None), "web"), None);
        assert_eq!(replica_index(&vm("webx-3", None), "web"), None);
        assert_eq!(replica_index(&vm("web-", None), "web"), None);
    }
}
