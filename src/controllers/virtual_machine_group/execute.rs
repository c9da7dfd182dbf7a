//! The only writes of the group controller: create VirtualMachines, mark them
//! draining, delete them. Creates use deterministic names, so a retried create meets
//! 409 AlreadyExists instead of making a second VirtualMachine.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions};
use kube::{Resource, ResourceExt};
use serde_json::json;
use verda_api::v1alpha1::{
    Retention, VirtualMachine, VirtualMachineGroup, VirtualMachineSpec, annotations, finalizers,
    labels,
};

use crate::caches::cloud_view::ServerGroupView;
use crate::cloud::ids::ServerGroupId;
use crate::cloud::model::compute::ServerGroupPolicy;
use crate::cloud::model::volume::Volume;
use crate::cloud::owner::Owner;
use crate::cloud::{BlockStorage, Compute};
use crate::controllers::virtual_machine_group::addresses::{port_fate, replica_spec};
use crate::controllers::virtual_machine_group::names;
use crate::controllers::virtual_machine_group::plan::{Plan, volume_fate};
use crate::runtime::ReconcileError;
use crate::runtime::object::{object_key, replica_index};
use crate::runtime::problem::Problem;

/// The VirtualMachine of `group` with index `index`.
pub fn new_vm(
    group: &VirtualMachineGroup,
    index: u32,
    hash: &str,
    server_group: Option<&ServerGroupId>,
    zone: Option<&String>,
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
            availability_zone: zone.cloned().or(template.availability_zone.clone()),
            dns: names::of_replica(group, index),
            ..template
        },
        status: None,
    })
}

/// What the VirtualMachines must carry of the group (credentials, policy, run strategy,
/// index labels, DNS), aligned; how many writes that took.
pub async fn align_all(
    client: &kube::Client,
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
) -> Result<usize, ReconcileError> {
    Ok(align_credentials(client, group, vms).await?
        + align_policy(client, group, vms).await?
        + align_run_strategy(client, group, vms).await?
        + align_index_labels(client, group, vms).await?
        + align_dns(client, group, vms).await?)
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

/// Gives each of the group's VirtualMachines its own names (`perReplica`: `<name>-<n>`)
/// where they differ, in place: names are no new template. Returns how many it updated.
pub async fn align_dns(
    client: &kube::Client,
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
) -> Result<usize, ReconcileError> {
    let name = group.name_any();
    let mut updated = 0;
    for vm in live_where(vms, |_| true) {
        let Some(index) = replica_index(vm, &name) else {
            continue;
        };
        let wanted = names::of_replica(group, index);
        if vm.spec.dns == wanted {
            continue;
        }
        let patch = json!({"spec": {"dns": wanted}});
        let action = "give a VirtualMachine its replica's DNS names";
        updated += patch_each(client, group, &[vm], &patch, action).await?;
    }
    Ok(updated)
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
/// status records it is found again (by `observe::server_group`) instead of doubled;
/// the view remembers the create from before it is sent (never vouched to have none
/// again) and its answer (known until the group is removed).
pub async fn create_server_group(
    compute: &dyn Compute,
    view: &ServerGroupView,
    owner: &Owner,
    policy: ServerGroupPolicy,
) -> Result<ServerGroupId, ReconcileError> {
    view.creating(&owner.uid);
    let created = compute
        .create_server_group(&owner.server_group_name(), policy)
        .await
        .map(|created| created.id)
        .map_err(ReconcileError::cloud(
            "create the server group",
            &owner.key(),
        ))?;
    view.created(&owner.uid, &created);
    Ok(created)
}

/// What a round did: its writes, and the replicas it created, marked draining and
/// deleted (not those an earlier round, unseen yet by the cache, had: their create
/// answers 409, and a write on a VirtualMachine that changed since the cache saw it
/// too).
#[derive(Debug, Default, PartialEq)]
pub struct Applied {
    pub writes: usize,
    pub created: Vec<u32>,
    pub drained: Vec<String>,
    pub deleted: Vec<String>,
}

impl Applied {
    /// `plan` as it was carried out, for its events, metrics and status: what an
    /// earlier round did is not announced twice.
    pub fn done(&self, plan: &Plan) -> Plan {
        Plan {
            create: self.created.clone(),
            drain: self.drained.clone(),
            delete: self.deleted.clone(),
            heal: plan
                .heal
                .iter()
                .filter(|name| self.drained.contains(name))
                .cloned()
                .collect(),
        }
    }
}

/// Carries out `plan`.
pub async fn run(
    client: &kube::Client,
    group: &VirtualMachineGroup,
    plan: &Plan,
    (hash, server_group, zones): (&str, Option<&ServerGroupId>, &BTreeMap<u32, String>),
    vms: &[VirtualMachine],
) -> Result<Applied, ReconcileError> {
    let ns = group.namespace().unwrap_or_default();
    let key = format!("{ns}/{}", group.name_any());
    let api: Api<VirtualMachine> = Api::namespaced(client.clone(), &ns);
    let mut applied = Applied::default();
    for index in &plan.create {
        let vm = new_vm(group, *index, hash, server_group, zones.get(index))?;
        match api.create(&PostParams::default(), &vm).await {
            Ok(_) => applied.created.push(*index),
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(ReconcileError::kube("create a VirtualMachine", &key)(e)),
        }
    }
    let now = Timestamp::now().to_string();
    for vm in named(vms, &plan.drain) {
        // As the cache saw it: marked again, it would drain from now on.
        let patch = json!({"metadata": {
            "resourceVersion": vm.resource_version(),
            "annotations": {annotations::DRAINING: now},
        }});
        let params = PatchParams::default();
        let marked = api
            .patch(&vm.name_any(), &params, &Patch::Merge(&patch))
            .await;
        if as_seen(marked.map(drop))
            .map_err(ReconcileError::kube("mark a VirtualMachine draining", &key))?
        {
            applied.drained.push(vm.name_any());
        }
    }
    for vm in named(vms, &plan.delete) {
        let index = replica_index(vm, &group.name_any());
        let fates = (volume_fate(group, index), port_fate(group, index));
        if delete_as_seen(&api, vm, fates, &key).await? {
            applied.deleted.push(vm.name_any());
        }
    }
    applied.writes = applied.created.len() + applied.drained.len() + applied.deleted.len();
    Ok(applied)
}

/// The VirtualMachines of `vms` named in `names`.
fn named<'a>(
    vms: &'a [VirtualMachine],
    names: &'a [String],
) -> impl Iterator<Item = &'a VirtualMachine> {
    vms.iter().filter(|vm| names.contains(&vm.name_any()))
}

/// Deletes `vm` as the cache saw it, after writing what becomes of its volumes and
/// ports (`fates`); `false` when it is gone or changed since (an earlier round's
/// delete the cache has not seen yet): the next round decides again on fresh data.
pub async fn delete_as_seen(
    api: &Api<VirtualMachine>,
    vm: &VirtualMachine,
    (volumes, ports): (Retention, Retention),
    key: &str,
) -> Result<bool, ReconcileError> {
    let mut version = vm.resource_version();
    let retention = [
        ("volumeRetention", volume_retention_change(vm, volumes)),
        ("networkRetention", port_retention_change(vm, ports)),
    ];
    for (field, fate) in retention {
        let Some(fate) = fate else { continue };
        let patch = json!({"metadata": {"resourceVersion": version},
            "spec": {field: {"whenDeleted": fate}}});
        match api
            .patch(
                &vm.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(patched) => version = patched.resource_version(),
            Err(e) => {
                return unseen_or(e).map_err(ReconcileError::kube(
                    "set what becomes of a VirtualMachine's volumes and ports",
                    key,
                ));
            }
        }
    }
    let params = DeleteParams {
        preconditions: version.map(|rv| Preconditions {
            resource_version: Some(rv),
            uid: None,
        }),
        ..DeleteParams::background()
    };
    as_seen(api.delete(&vm.name_any(), &params).await.map(drop))
        .map_err(ReconcileError::kube("delete a VirtualMachine", key))
}

/// The `whenDeleted` of `vm`'s volumes to write, if it has volumes and it differs.
fn volume_retention_change(vm: &VirtualMachine, fate: Retention) -> Option<Retention> {
    let now = vm.spec.volume_retention.unwrap_or_default().when_deleted;
    let has = vm.spec.volumes.as_ref().is_some_and(|v| !v.is_empty());
    (has && now != fate).then_some(fate)
}

/// The same for its declared ports (and floating IP).
fn port_retention_change(vm: &VirtualMachine, fate: Retention) -> Option<Retention> {
    let now = vm.spec.network_retention.unwrap_or_default().when_deleted;
    let has = vm.spec.ports.as_ref().is_some_and(|p| !p.is_empty());
    (has && now != fate).then_some(fate)
}

/// A write made on the cache's copy of an object: `true` when done, `false` when the
/// object is gone or changed since the cache saw it (409 Conflict).
fn as_seen(result: Result<(), kube::Error>) -> Result<bool, kube::Error> {
    match result {
        Ok(()) => Ok(true),
        Err(e) => unseen_or(e),
    }
}

/// `Ok(false)` for a 404 or 409 answer, else the error.
fn unseen_or(e: kube::Error) -> Result<bool, kube::Error> {
    match e {
        kube::Error::Api(s) if s.code == 404 || s.code == 409 => Ok(false),
        other => Err(other),
    }
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
fn ignore_missing(result: Result<(), kube::Error>) -> Result<(), kube::Error> {
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
        let applied = run(
            &server.client(),
            &group,
            &plan,
            ("h1", None, &BTreeMap::new()),
            &[],
        )
        .await
        .expect("the round runs");
        assert_eq!(
            applied,
            Applied {
                writes: 1,
                created: vec![1],
                ..Applied::default()
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

    /// The group's VirtualMachine `name` as the cache saw it, at `version`.
    fn seen_vm(group: &VirtualMachineGroup, name: &str, version: &str) -> VirtualMachine {
        let mut vm = new_vm(group, 0, "h1", None, None).expect("a replica");
        vm.metadata.name = Some(name.to_owned());
        vm.metadata.resource_version = Some(version.to_owned());
        vm
    }

    /// An earlier round marked `-1` draining and deleted `-2`, and the cache has not
    /// seen either yet: the server holds both at version 8, the cache at 7. Writes
    /// made on the cache's copies answer 409, as a real API server's preconditions do.
    #[tokio::test]
    async fn a_replica_an_earlier_round_drained_or_deleted_is_neither_counted_nor_announced_again()
    {
        let mut group: VirtualMachineGroup =
            serde_saphyr::from_str(include_str!("../../../samples/virtualmachinegroup.yaml"))
                .expect("the published group");
        group.metadata.namespace = Some("team-a".into());
        let stored = |name: &str| match name.ends_with("-1") || name.ends_with("-2") {
            true => "8",
            false => "7",
        };
        let answer = serde_json::to_value(seen_vm(&group, "any", "9")).expect("a VM as JSON");
        let server = ApiServer::new(move |method, path, body| {
            let name = path.rsplit('/').next().unwrap_or_default().to_owned();
            let asked = match method {
                "DELETE" => body["preconditions"]["resourceVersion"].as_str(),
                _ => body["metadata"]["resourceVersion"].as_str(),
            };
            match asked == Some(stored(&name)) {
                true => {
                    let mut vm = answer.clone();
                    vm["metadata"]["name"] = json!(name);
                    (200, vm)
                }
                false => (
                    409,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "reason": "Conflict", "code": 409,
                        "message": format!("Operation cannot be fulfilled on virtualmachines.verda.linecorp.com \"{name}\": the object has been modified")}),
                ),
            }
        });
        let vms: Vec<VirtualMachine> = ["-1", "-2", "-3", "-4"]
            .iter()
            .map(|n| seen_vm(&group, &format!("{}{n}", group.name_any()), "7"))
            .collect();
        let plan = Plan {
            drain: vec![vms[0].name_any(), vms[2].name_any()],
            delete: vec![vms[1].name_any(), vms[3].name_any()],
            heal: vec![vms[0].name_any()],
            ..Plan::default()
        };
        let applied = run(
            &server.client(),
            &group,
            &plan,
            ("h1", None, &BTreeMap::new()),
            &vms,
        )
        .await
        .expect("the round runs");
        assert_eq!(
            applied.done(&plan),
            Plan {
                drain: vec![vms[2].name_any()],
                delete: vec![vms[3].name_any()],
                ..Plan::default()
            }
        );
        assert_eq!(applied.writes, 2);
        let deletes: Vec<String> = server
            .seen()
            .iter()
            .filter(|s| s.method == "DELETE")
            .map(|s| s.path.rsplit('/').next().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(deletes, [vms[1].name_any(), vms[3].name_any()]);
    }
}
