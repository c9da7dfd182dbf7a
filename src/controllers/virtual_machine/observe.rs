//! The observe step of a VirtualMachine, its server side: its servers (found by owner
//! UID, one call), the flavor when it may differ, and — only when creating — image,
//! flavor, networks, user data and the server group, resolved from their names and built
//! into the finished create request. The declared ports and the volumes are observed in
//! `network_ports` and `volumes`.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::Api;
use verda_api::v1alpha1::{
    InitScript, KeySelector, Resolution, ResolvedReferences, VirtualMachine, annotations,
};

use crate::caches::cloud_view::ProjectView;
use crate::cloud::ids::{FlavorId, ImageId, NetworkId, ServerGroupId};
use crate::cloud::model::compute::{CreateServer, Server, UserData};
use crate::cloud::model::volume::BootVolumeRequest;
use crate::cloud::owner::Owner;
use crate::cloud::{Compute, Network};
use crate::controllers::virtual_machine::plan::{FlavorCheck, keeper};
use crate::controllers::virtual_machine::{references, security_groups};
use crate::runtime::object::{first_create, group_replica, object_key};
use crate::runtime::problem::Problem;
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;

/// The cloud as this VirtualMachine sees it.
pub struct Observed {
    pub servers: Vec<Server>,
    pub flavor: FlavorCheck,
    /// Whether the servers come from the shared cloud view's settled entries rather than
    /// from Nova now (a vouched "none" is as good as a lookup: see [`ServerView`]).
    ///
    /// [`ServerView`]: crate::caches::cloud_view::ServerView
    pub from_view: bool,
    /// The references to record in status, when they differ from what it records.
    pub resolved: Option<ResolvedReferences>,
    /// The finished create request, when the object has no server, imports none and
    /// is not paused.
    pub create: Option<CreateServer>,
    /// The data volumes and the boot volume, when the object has any.
    pub volumes: Option<crate::controllers::virtual_machine::volumes::Look>,
    /// Some load balancer lists the VirtualMachine in a pool (its status says so).
    pub in_pools: bool,
    /// The declared ports, when the object has any.
    pub ports: Option<crate::controllers::virtual_machine::network_ports::Look>,
    /// The record sets of `spec.dns` (and of names removed from it); none read when
    /// there are none. An error of Designate's leaves the rest of the round to run.
    pub dns: Result<Vec<crate::controllers::dns_records::Seen>, crate::cloud::CloudError>,
}

/// Where a VirtualMachine looks: Nova, Neutron (networks, only to create) and the
/// project's view of its servers.
pub struct Sources<'a> {
    pub ctx: &'a Context,
    pub tenant: &'a Tenant,
    pub view: &'a ProjectView,
    pub compute: &'a dyn Compute,
    pub network: &'a dyn Network,
    pub vm: &'a VirtualMachine,
    pub owner: &'a Owner,
    /// Whether a create may follow (not while paused): only then is it prepared.
    pub creates: bool,
}

/// The owner's servers — from the cloud view when `use_view` and it answers for them
/// (settled servers, or none on the word of this term's listing), else listed from
/// Nova and recorded — then, when the kept server's flavor name
/// differs from the spec, the spec's flavor (it may be an ID) to tell a real
/// difference; when there is no server (and the object is not paused), everything a
/// create needs.
pub async fn servers(from: &Sources<'_>, use_view: bool) -> Result<Observed, ReconcileError> {
    let (servers, from_view) = find_servers(from, use_view).await?;
    let Sources {
        compute, vm, owner, ..
    } = *from;
    let key = owner.key();
    let recorded = references::recorded(vm);
    let mut observed = Observed {
        flavor: FlavorCheck::Matches,
        from_view,
        resolved: None,
        create: None,
        volumes: None,
        in_pools: false,
        ports: None,
        dns: Ok(Vec::new()),
        servers,
    };
    match keeper(vm, &observed.servers).map(|s| s.flavor.clone()) {
        Some(Some(current)) if current != vm.spec.flavor => {
            let recorded_flavor = recorded.and_then(|r| r.flavor.as_ref());
            let wanted =
                references::flavor(compute, recorded_flavor, &vm.spec.flavor, &key).await?;
            observed.flavor = if wanted.name.as_deref() == Some(&current) || wanted.id == current {
                FlavorCheck::Matches
            } else {
                FlavorCheck::Differs(FlavorId::new(wanted.id.clone()))
            };
            let mut refs = references::written(vm).cloned().unwrap_or_default();
            refs.flavor = Some(wanted);
            observed.resolved = (Some(&refs) != references::written(vm)).then_some(refs);
        }
        Some(_) => {}
        None if vm.spec.import.is_some() || !from.creates => {}
        None => {
            let refs = references::all(from.ctx, compute, from.network, vm, &key).await?;
            boot_volume_fits(compute, vm, &refs, &key).await?;
            let user_data = user_data(from.ctx, vm).await?;
            let mut create = create_request(vm, owner, &refs, user_data);
            create.security_groups =
                security_groups::declared(from.ctx, vm, &create.security_groups, &key).await?;
            observed.create = Some(create);
            observed.resolved = (Some(&refs) != references::written(vm)).then_some(refs);
        }
    }
    Ok(observed)
}

/// The owner's servers, and whether they came from the view.
async fn find_servers(
    from: &Sources<'_>,
    use_view: bool,
) -> Result<(Vec<Server>, bool), ReconcileError> {
    let Sources {
        ctx,
        view,
        compute,
        owner,
        ..
    } = *from;
    if use_view {
        if let Some(servers) = view.servers.settled(&owner.uid, ctx.view_max_age()) {
            return Ok((servers, true));
        }
        if vouched_none(from).await {
            return Ok((Vec::new(), false));
        }
    }
    let servers = compute
        .list_servers(&owner.uid)
        .await
        .map_err(ReconcileError::cloud("list servers", &owner.key()))?;
    if !servers.is_empty() {
        view.servers.record(owner, &servers);
    }
    Ok((servers, false))
}

/// Whether the owner is about to be created on the view's word that it has no server.
/// Only for an object that has never recorded one (an earlier release's server may
/// lack the `verda-managed` tag the listing filters on until it is found by its owner's)
/// and that would create rather than import.
async fn vouched_none(from: &Sources<'_>) -> bool {
    let Sources {
        ctx,
        tenant,
        view,
        vm,
        owner,
        ..
    } = *from;
    if !first_create(vm, from.creates) {
        return false;
    }
    let since = ctx.reach.assignment.since(&owner.namespace);
    ctx.view
        .servers_listed(ctx.surroundings(), tenant, view, since)
        .await
        && view.servers.vouches_none(&owner.uid, since)
}

/// A boot volume must hold the image: at least its `min_disk` (Nova refuses less).
/// The image lookup is remembered, so this costs no call of its own.
async fn boot_volume_fits(
    compute: &dyn Compute,
    vm: &VirtualMachine,
    refs: &ResolvedReferences,
    key: &str,
) -> Result<(), ReconcileError> {
    let (Some(boot), Some(image)) = (&vm.spec.boot_volume, &refs.image) else {
        return Ok(());
    };
    let found = compute
        .find_image(&image.id)
        .await
        .map_err(ReconcileError::cloud("read the image", key))?;
    let min = found.min_disk.unwrap_or(0);
    if u64::try_from(boot.size).unwrap_or(0) >= min {
        return Ok(());
    }
    Err(ReconcileError::Invalid {
        object: key.to_owned(),
        problem: Problem::BootVolumeTooSmall,
        message: format!(
            "spec.bootVolume.size is {} GiB, but image {} needs at least {min} GiB (its min_disk): make the boot volume larger",
            boot.size, vm.spec.image
        ),
    })
}

/// The `create_server` request, from resolved references.
fn create_request(
    vm: &VirtualMachine,
    owner: &Owner,
    refs: &ResolvedReferences,
    user_data: Option<UserData>,
) -> CreateServer {
    let spec = &vm.spec;
    let id = |r: &Option<Resolution>| r.as_ref().map(|r| r.id.clone()).unwrap_or_default();
    CreateServer {
        name: owner.name.clone(),
        image: ImageId::new(id(&refs.image)),
        flavor: FlavorId::new(id(&refs.flavor)),
        networks: refs
            .networks
            .iter()
            .map(|n| NetworkId::new(n.id.clone()))
            .collect(),
        // Filled once the declared ports are known (`network_ports`).
        ports: Vec::new(),
        user_data,
        key_name: spec.key_name.clone(),
        security_groups: spec.security_groups.clone().unwrap_or_default(),
        availability_zone: spec.availability_zone.clone(),
        metadata: crate::controllers::virtual_machine::plan::desired_metadata(vm, owner),
        tags: owner.tags(),
        description: spec.description.clone(),
        server_group: vm
            .annotations()
            .get(annotations::SERVER_GROUP)
            .map(|id| ServerGroupId::new(id.clone())),
        boot_volume: spec.boot_volume.as_ref().map(|b| BootVolumeRequest {
            size: b.size,
            volume_type: b.type_.clone(),
        }),
    }
}

async fn user_data(ctx: &Context, vm: &VirtualMachine) -> Result<Option<UserData>, ReconcileError> {
    let Some(script) = &vm.spec.init_script else {
        return Ok(None);
    };
    let key = object_key(vm);
    let text = match &**script {
        InitScript { value: Some(v), .. } => v.clone(),
        InitScript {
            config_map_key_ref: Some(r),
            ..
        } => script_in_config_map(ctx, vm, r).await?,
        InitScript {
            secret_key_ref: Some(r),
            ..
        } => script_in_secret(ctx, vm, r).await?,
        InitScript { .. } => return Ok(None),
    };
    let index = group_replica(vm).map(|(_, i)| i.to_string());
    let text = personalised(&text, &vm.name_any(), index.as_deref().unwrap_or_default());
    if text.len() > MAX_USER_DATA_BYTES {
        return Err(ReconcileError::Invalid {
            object: key,
            problem: Problem::InitScriptTooLarge,
            message: format!(
                "the init script has {} bytes; Nova takes at most {MAX_USER_DATA_BYTES} \
                 (65,535 characters of base64): shorten it or have it fetch the rest",
                text.len()
            ),
        });
    }
    Ok(Some(UserData(text)))
}

/// The placeholders of an init script, and the escape that keeps a literal `${`
/// (written with escapes: a brace in a string would read as a block to tools).
const NAME_VAR: &str = "$\u{7b}VERDA_NAME\u{7d}";
const INDEX_VAR: &str = "$\u{7b}VERDA_INDEX\u{7d}";
const ESCAPED: &str = "$$\u{7b}";

/// The script with the replica's identity in place of `${VERDA_NAME}` and
/// `${VERDA_INDEX}`; `$${` stays a literal `${` (shell scripts use `${...}` too).
pub fn personalised(script: &str, name: &str, index: &str) -> String {
    let mut out = String::with_capacity(script.len());
    let mut rest = script;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let (put, skip) = if rest.starts_with(ESCAPED) {
            (&ESCAPED[1..], ESCAPED.len())
        } else if rest.starts_with(NAME_VAR) {
            (name, NAME_VAR.len())
        } else if rest.starts_with(INDEX_VAR) {
            (index, INDEX_VAR.len())
        } else {
            ("$", 1)
        };
        out.push_str(put);
        rest = &rest[skip..];
    }
    out.push_str(rest);
    out
}

/// The init script is missing: `what` says where it was looked for.
fn script_missing(vm: &VirtualMachine, what: String) -> ReconcileError {
    ReconcileError::Invalid {
        object: object_key(vm),
        problem: Problem::InitScriptNotFound,
        message: format!("{what}; create it or fix spec.initScript"),
    }
}

async fn script_in_config_map(
    ctx: &Context,
    vm: &VirtualMachine,
    r: &KeySelector,
) -> Result<String, ReconcileError> {
    let api: Api<ConfigMap> =
        Api::namespaced(ctx.client.clone(), &vm.namespace().unwrap_or_default());
    let cm = api
        .get_opt(&r.name)
        .await
        .map_err(ReconcileError::kube(
            "read the init script ConfigMap",
            &object_key(vm),
        ))?
        .ok_or_else(|| script_missing(vm, format!("ConfigMap {} not found", r.name)))?;
    cm.data
        .and_then(|d| d.get(&r.key).cloned())
        .ok_or_else(|| script_missing(vm, format!("ConfigMap {} has no key {}", r.name, r.key)))
}

async fn script_in_secret(
    ctx: &Context,
    vm: &VirtualMachine,
    r: &KeySelector,
) -> Result<String, ReconcileError> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &vm.namespace().unwrap_or_default());
    let secret = api
        .get_opt(&r.name)
        .await
        .map_err(ReconcileError::kube(
            "read the init script Secret",
            &object_key(vm),
        ))?
        .ok_or_else(|| script_missing(vm, format!("Secret {} not found", r.name)))?;
    // `stringData` is folded into `data` by the API server; read both anyway.
    let bytes = secret
        .data
        .and_then(|d| d.get(&r.key).cloned())
        .or_else(|| {
            secret.string_data.and_then(|d| {
                d.get(&r.key)
                    .map(|s| k8s_openapi::ByteString(s.clone().into_bytes()))
            })
        })
        .ok_or_else(|| script_missing(vm, format!("Secret {} has no key {}", r.name, r.key)))?;
    String::from_utf8(bytes.0).map_err(|_| ReconcileError::Invalid {
        object: object_key(vm),
        problem: Problem::InitScriptInvalid,
        message: format!("Secret {} key {} is not UTF-8 text", r.name, r.key),
    })
}

/// Nova takes user data as at most 65,535 characters of base64: 3 bytes per 4 characters.
const MAX_USER_DATA_BYTES: usize = 65_535 / 4 * 3;

#[cfg(test)]
mod tests {
    use super::personalised;

    #[test]
    fn a_replica_reads_its_name_and_index_and_the_rest_of_the_script_is_left_alone() {
        let script = "#!/bin/sh\nhostname ${VERDA_NAME}\nid=${VERDA_INDEX}\necho $HOME ${USER} $${VERDA_NAME} $5\n";
        assert_eq!(
            personalised(script, "db-2", "2"),
            "#!/bin/sh\nhostname db-2\nid=2\necho $HOME ${USER} ${VERDA_NAME} $5\n"
        );
        assert_eq!(personalised("i=${VERDA_INDEX};$", "web", ""), "i=;$");
    }
}
