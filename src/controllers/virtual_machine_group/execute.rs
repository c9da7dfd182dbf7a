//! The only writes of the group controller: create VirtualMachines, mark them
//! draining, delete them. Creates use deterministic names, so a retried create meets
//! 409 AlreadyExists instead of making a second VirtualMachine.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::json;
use verda_api::v1alpha1::{
    Retention, VirtualMachine, VirtualMachineGroup, VirtualMachineSpec, annotations, finalizers,
    labels,
};

use crate::cloud::ids::ServerGroupId;
use crate::cloud::model::compute::ServerGroupPolicy;
use crate::cloud::model::volume::Volume;
use crate::cloud::owner::Owner;
use crate::cloud::{BlockStorage, Compute};
use crate::controllers::virtual_machine_group::addresses::{port_fate, replica_spec};
use crate::controllers::virtual_machine_group::plan::Plan;
use crate::runtime::ReconcileError;
use crate::runtime::object::{object_key, replica_index};
use crate::runtime::problem::Problem;

/// The VirtualMachine of `group` with index `index`.
pub fn new_vm(
    group: &VirtualMachineGroup,
    index: u32,
    hash: &str,
    server_group: Option<&ServerGroupId>,
) -> Result<VirtualMachine, ReconcileError> {
    let template = replica_spec(group, index).map_err(|message| ReconcileError::Invalid {
        object: object_key(group),
        problem: Problem::AddressesInvalid,
        message,
    })?;
    let mut annotations_map = BTreeMap::new();
    if let Some(id) = server_group {
        annotations_map.insert(annotations::SERVER_GROUP.to_owned(), id.to_string());
    }
    if let Some(policy) = group.annotations().get(annotations::RECONCILE_POLICY) {
        annotations_map.insert(annotations::RECONCILE_POLICY.to_owned(), policy.clone());
    }
    Ok(VirtualMachine {
        metadata: ObjectMeta {
            name: Some(format!("{}-{index}", group.name_any())),
            namespace: group.namespace(),
            labels: Some(BTreeMap::from([
                (labels::GROUP.to_owned(), group.name_any()),
                (labels::TEMPLATE_HASH.to_owned(), hash.to_owned()),
                (labels::INDEX.to_owned(), index.to_string()),
            ])),
            annotations: (!annotations_map.is_empty()).then_some(annotations_map),
            owner_references: group.controller_owner_ref(&()).map(|r| vec![r]),
            // Born with the VirtualMachine controller's finalizer: one write fewer per
            // replica, and no window in which it has none.
            finalizers: Some(vec![finalizers::VIRTUAL_MACHINE.to_owned()]),
            ..ObjectMeta::default()
        },
        spec: VirtualMachineSpec {
            cloud_credentials_ref: group.spec.cloud_credentials_ref.clone(),
            run_strategy: group.spec.run_strategy,
            ..template
        },
        status: None,
    })
}

/// Gives the group's VirtualMachines the group's credentials reference when it changed
/// (in place: the same project keeps its servers, another is refused by each
/// VirtualMachine as ProjectChanged). Returns how many it updated.
pub async fn align_credentials(
    client: &kube::Client,
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
) -> Result<usize, ReconcileError> {
    let wanted = &group.spec.cloud_credentials_ref;
    let stale = live_where(vms, |vm| &vm.spec.cloud_credentials_ref != wanted);
    let patch = json!({"spec": {"cloudCredentialsRef": wanted}});
    let action = "give a VirtualMachine the group's credentials";
    patch_each(client, group, &stale, &patch, action).await
}

/// Gives the group's VirtualMachines the group's run strategy where it differs (in
/// place: a change of power is no new template). Returns how many it updated.
pub async fn align_run_strategy(
    client: &kube::Client,
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
) -> Result<usize, ReconcileError> {
    let wanted = group.spec.run_strategy;
    let stale = live_where(vms, |vm| vm.spec.run_strategy != wanted);
    let patch = json!({"spec": {"runStrategy": wanted}});
    let action = "give a VirtualMachine the group's run strategy";
    patch_each(client, group, &stale, &patch, action).await
}

/// The VirtualMachines not being deleted for which `differs` holds.
fn live_where(
    vms: &[VirtualMachine],
    differs: impl Fn(&VirtualMachine) -> bool,
) -> Vec<&VirtualMachine> {
    vms.iter()
        .filter(|vm| vm.metadata.deletion_timestamp.is_none() && differs(vm))
        .collect()
}

/// Gives the group's VirtualMachines the group's reconcile policy annotation (or takes
/// it off) where it differs. Returns how many it updated.
pub async fn align_policy(
    client: &kube::Client,
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
) -> Result<usize, ReconcileError> {
    let wanted = group.annotations().get(annotations::RECONCILE_POLICY);
    let stale: Vec<&VirtualMachine> = vms
        .iter()
        .filter(|vm| vm.annotations().get(annotations::RECONCILE_POLICY) != wanted)
        .collect();
    let patch = json!({"metadata": {"annotations": {annotations::RECONCILE_POLICY: wanted}}});
    patch_each(
        client,
        group,
        &stale,
        &patch,
        "give a VirtualMachine the group's reconcile policy",
    )
    .await
}

/// Labels each of the group's VirtualMachines that lacks it (made by an earlier
/// release) with its replica index, in place. Returns how many it updated.
pub async fn align_index_labels(
    client: &kube::Client,
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
) -> Result<usize, ReconcileError> {
    let mut updated = 0;
    let unlabelled = vms
        .iter()
        .filter(|vm| !vm.labels().contains_key(labels::INDEX));
    for vm in unlabelled.filter(|vm| vm.metadata.deletion_timestamp.is_none()) {
        let Some(index) = replica_index(vm, &group.name_any()) else {
            continue;
        };
        let patch = json!({"metadata": {"labels": {labels::INDEX: index.to_string()}}});
        let action = "label a VirtualMachine with its replica index";
        updated += patch_each(client, group, &[vm], &patch, action).await?;
    }
    Ok(updated)
}

/// Merge-patches each of `vms` (one already gone needs nothing); returns how many.
async fn patch_each(
    client: &kube::Client,
    group: &VirtualMachineGroup,
    vms: &[&VirtualMachine],
    patch: &serde_json::Value,
    action: &'static str,
) -> Result<usize, ReconcileError> {
    let ns = group.namespace().unwrap_or_default();
    let key = object_key(group);
    let api: Api<VirtualMachine> = Api::namespaced(client.clone(), &ns);
    for vm in vms {
        ignore_missing(
            api.patch(
                &vm.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
            .map(drop),
        )
        .map_err(ReconcileError::kube(action, &key))?;
    }
    Ok(vms.len())
}

/// Creates the group's Nova server group, named after its owner so a crash before the
/// status records it is found again (by `observe::server_group`) instead of doubled.
pub async fn create_server_group(
    compute: &dyn Compute,
    owner: &Owner,
    policy: ServerGroupPolicy,
) -> Result<ServerGroupId, ReconcileError> {
    compute
        .create_server_group(&owner.server_group_name(), policy)
        .await
        .map(|created| created.id)
        .map_err(ReconcileError::cloud(
            "create the server group",
            &owner.key(),
        ))
}

/// What a round did: its writes, and the replicas it created (not those an earlier
/// round, unseen yet by the cache, had made: their create answers 409).
#[derive(Debug, PartialEq)]
pub struct Applied {
    pub writes: usize,
    pub created: Vec<u32>,
}

impl Applied {
    /// `plan` as it was carried out, for its events: a replica an earlier round created
    /// is not announced twice.
    pub fn done(&self, plan: &Plan) -> Plan {
        Plan {
            create: self.created.clone(),
            ..plan.clone()
        }
    }
}

/// Carries out `plan`.
pub async fn run(
    client: &kube::Client,
    group: &VirtualMachineGroup,
    plan: &Plan,
    hash: &str,
    server_group: Option<&ServerGroupId>,
    vms: &[VirtualMachine],
) -> Result<Applied, ReconcileError> {
    let ns = group.namespace().unwrap_or_default();
    let key = format!("{ns}/{}", group.name_any());
    let api: Api<VirtualMachine> = Api::namespaced(client.clone(), &ns);
    let mut created = Vec::with_capacity(plan.create.len());
    for index in &plan.create {
        let vm = new_vm(group, *index, hash, server_group)?;
        match api.create(&PostParams::default(), &vm).await {
            Ok(_) => created.push(*index),
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(ReconcileError::kube("create a VirtualMachine", &key)(e)),
        }
    }
    let now = Timestamp::now().to_string();
    for name in &plan.drain {
        let patch = json!({"metadata": {"annotations": {annotations::DRAINING: now}}});
        ignore_missing(
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(drop),
        )
        .map_err(ReconcileError::kube("mark a VirtualMachine draining", &key))?;
    }
    for name in &plan.delete {
        if let Some(vm) = vms.iter().find(|vm| &vm.name_any() == name) {
            let index = replica_index(vm, &group.name_any());
            let fate = crate::controllers::virtual_machine_group::plan::volume_fate(group, index);
            set_volume_retention(&api, vm, fate, &key).await?;
            set_port_retention(&api, vm, port_fate(group, index), &key).await?;
        }
        ignore_missing(
            api.delete(name, &DeleteParams::background())
                .await
                .map(drop),
        )
        .map_err(ReconcileError::kube("delete a VirtualMachine", &key))?;
    }
    Ok(Applied {
        writes: created.len() + plan.drain.len() + plan.delete.len(),
        created,
    })
}

/// Before a VirtualMachine of the group is deleted: what becomes of its data volumes
/// goes into its spec, where its own controller reads it.
pub async fn set_volume_retention(
    api: &Api<VirtualMachine>,
    vm: &VirtualMachine,
    fate: Retention,
    key: &str,
) -> Result<(), ReconcileError> {
    let now = vm.spec.volume_retention.unwrap_or_default().when_deleted;
    let has = vm.spec.volumes.as_ref().is_some_and(|v| !v.is_empty());
    set_retention(
        api,
        vm,
        (has && now != fate).then_some(fate),
        "volumeRetention",
        key,
    )
    .await
}

/// The same for its declared ports (and floating IP).
pub async fn set_port_retention(
    api: &Api<VirtualMachine>,
    vm: &VirtualMachine,
    fate: Retention,
    key: &str,
) -> Result<(), ReconcileError> {
    let now = vm.spec.network_retention.unwrap_or_default().when_deleted;
    let has = vm.spec.ports.as_ref().is_some_and(|p| !p.is_empty());
    set_retention(
        api,
        vm,
        (has && now != fate).then_some(fate),
        "networkRetention",
        key,
    )
    .await
}

/// Writes `spec.<field>.whenDeleted` when `fate` says it must change.
async fn set_retention(
    api: &Api<VirtualMachine>,
    vm: &VirtualMachine,
    fate: Option<Retention>,
    field: &str,
    key: &str,
) -> Result<(), ReconcileError> {
    let Some(fate) = fate else {
        return Ok(());
    };
    let patch = json!({"spec": {field: {"whenDeleted": fate}}});
    let params = PatchParams::default();
    ignore_missing(
        api.patch(&vm.name_any(), &params, &Patch::Merge(&patch))
            .await
            .map(drop),
    )
    .map_err(ReconcileError::kube(
        "set what becomes of a VirtualMachine's volumes and ports",
        key,
    ))
}

/// Deletes `volumes` (one already gone counts as deleted); returns how many.
pub async fn delete_volumes(
    cinder: &dyn BlockStorage,
    volumes: &[(u32, Volume)],
    key: &str,
) -> Result<usize, ReconcileError> {
    for (_, v) in volumes {
        crate::cloud::ignore_not_found(cinder.delete_volume(&v.id).await).map_err(
            ReconcileError::cloud("delete a volume of a removed replica", key),
        )?;
    }
    Ok(volumes.len())
}

/// A VirtualMachine that is already gone needs nothing more.
pub fn ignore_missing(result: Result<(), kube::Error>) -> Result<(), kube::Error> {
    match result {
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::scripted_api::ApiServer;

    /// An API server where `<group>-0` exists already (an earlier round made it, the
    /// cache has not seen it yet): its create answers 409, every other one 201.
    fn api_server() -> ApiServer {
        ApiServer::new(|_, _, vm| {
            let name = vm["metadata"]["name"].as_str().unwrap_or_default();
            match name.ends_with("-0") {
                true => (
                    409,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "reason": "AlreadyExists", "code": 409,
                        "message": format!("virtualmachines.verda.linecorp.com \"{name}\" already exists")}),
                ),
                false => (201, vm.clone()),
            }
        })
    }

    #[tokio::test]
    async fn a_replica_an_earlier_round_created_is_neither_counted_nor_announced_again() {
        let mut group: VirtualMachineGroup =
            serde_saphyr::from_str(include_str!("../../../samples/virtualmachinegroup.yaml"))
                .expect("the published group");
        group.metadata.namespace = Some("team-a".into());
        group.metadata.uid = Some("6c1f0d4e-0000-4000-8000-000000000001".into());
        let server = api_server();
        let plan = Plan {
            create: vec![0, 1],
            ..Plan::default()
        };
        let applied = run(&server.client(), &group, &plan, "h1", None, &[])
            .await
            .expect("the round runs");
        assert_eq!(
            applied,
            Applied {
                writes: 1,
                created: vec![1]
            }
        );
        let posted: Vec<String> = server
            .seen()
            .iter()
            .filter(|s| s.method == "POST")
            .map(|s| {
                s.body["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            posted,
            [
                "virtualmachinegroup-sample-0",
                "virtualmachinegroup-sample-1"
            ]
        );
    }
}
