//! The security groups a VirtualMachine (or one of its declared ports) names, as Nova
//! and Neutron take them: a SecurityGroup of the namespace is its Neutron ID once it is
//! Ready (the VirtualMachine waits for it until then, and is woken when it is); any
//! other name is a group of the project, left for Nova or Neutron to look up.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{SecurityGroup, VirtualMachine};

use crate::caches::watch::packed::Packed;
use crate::caches::watch::{self, Cache, index::security_group_key};
use crate::runtime::object::object_key;
use crate::runtime::problem::Problem;
use crate::runtime::{Context, ReconcileError};

/// `names` with each SecurityGroup of the namespace replaced by its ID.
pub async fn declared(
    ctx: &Context,
    vm: &VirtualMachine,
    names: &[String],
    key: &str,
) -> Result<Vec<String>, ReconcileError> {
    let namespace = vm.namespace().unwrap_or_default();
    let caches = ctx.caches.current();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let Some(group) = watch::named(&caches.security_groups, &namespace, name).await else {
            out.push(name.clone());
            continue;
        };
        match ready_id(&group) {
            Some(id) => out.push(id),
            None => {
                return Err(ReconcileError::Invalid {
                    object: key.to_owned(),
                    problem: Problem::SecurityGroupNotReady,
                    message: format!(
                        "SecurityGroup {name} is not Ready yet: the server is created in it once it is (kubectl get sg {name})"
                    ),
                });
            }
        }
    }
    Ok(out)
}

/// The Neutron ID of a Ready SecurityGroup.
pub fn ready_id(group: &SecurityGroup) -> Option<String> {
    let status = group.status.as_ref()?;
    is_true(&status.conditions, READY)
        .then(|| status.id.clone())
        .flatten()
}

/// The VirtualMachines naming `group`, when it became Ready or changed its ID since
/// last seen (`seen`): what the VirtualMachine controller wakes on.
pub fn waiting_on(
    seen: &Mutex<HashMap<String, Option<String>>>,
    vms: &Cache<Packed<VirtualMachine>>,
    group: &SecurityGroup,
) -> Vec<ObjectRef<Packed<VirtualMachine>>> {
    let now = ready_id(group);
    let key = object_key(group);
    let changed = {
        let mut seen = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match group.metadata.deletion_timestamp.is_some() {
            true => seen.remove(&key).is_some(),
            false => seen.insert(key, now.clone()) != Some(now),
        }
    };
    if !changed {
        return Vec::new();
    }
    let namespace = group.namespace().unwrap_or_default();
    let found = vms.with_key_now(&namespace, &security_group_key(&group.name_any()));
    found.iter().map(|vm| ObjectRef::from_obj(&**vm)).collect()
}
