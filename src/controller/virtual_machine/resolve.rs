//! What a VirtualMachine refers to: its servers (found by owner UID, one call), the
//! flavor when it may differ, and — only when creating — image, flavor, networks, user
//! data and the server group.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::Api;
use verda_api::v1alpha1::{InitScript, KeySelector, VirtualMachine, annotations};

use super::plan::{FlavorCheck, keeper};
use crate::cloud::Compute;
use crate::cloud::ids::{NetworkId, ServerGroupId};
use crate::cloud::model::compute::{CreateServer, Server, UserData};
use crate::cloud::owner::Owner;
use crate::controller::cloud_view::ServerView;
use crate::controller::object::object_key;
use crate::controller::tenancy::Tenant;
use crate::controller::{Context, ReconcileError};

/// The cloud as this VirtualMachine sees it.
pub struct Observed {
    pub servers: Vec<Server>,
    pub flavor: FlavorCheck,
    /// Whether the servers come from the shared cloud view rather than from Nova now.
    pub from_view: bool,
}

/// The owner's servers — from the cloud view when `use_view` and it answers for them,
/// else listed from Nova and recorded — and, when the kept server's flavor name differs
/// from the spec, the spec's flavor resolved (it may be an ID) to tell a real difference.
pub async fn observe(
    ctx: &Context,
    view: &ServerView,
    compute: &dyn Compute,
    vm: &VirtualMachine,
    owner: &Owner,
    use_view: bool,
) -> Result<Observed, ReconcileError> {
    let key = owner.key();
    let cached = use_view
        .then(|| view.settled(&owner.uid, ctx.view_max_age()))
        .flatten();
    let from_view = cached.is_some();
    let servers = match cached {
        Some(servers) => servers,
        None => {
            let servers = compute
                .list_servers(&owner.uid)
                .await
                .map_err(ReconcileError::cloud("list servers", &key))?;
            if !servers.is_empty() {
                view.record(owner, &servers);
            }
            servers
        }
    };
    let flavor = match keeper(vm, &servers).and_then(|s| s.flavor.clone()) {
        Some(current) if current != vm.spec.flavor => {
            let wanted = compute
                .find_flavor(&vm.spec.flavor)
                .await
                .map_err(ReconcileError::cloud("look up the flavor", &key))?;
            if wanted.is_named_by(&current) {
                FlavorCheck::Matches
            } else {
                FlavorCheck::Differs(wanted.id)
            }
        }
        _ => FlavorCheck::Matches,
    };
    Ok(Observed {
        servers,
        flavor,
        from_view,
    })
}

/// Everything `create_server` needs, resolved by name.
pub async fn create_request(
    ctx: &Context,
    tenant: &Tenant,
    vm: &VirtualMachine,
    owner: &Owner,
) -> Result<CreateServer, ReconcileError> {
    let key = owner.key();
    let spec = &vm.spec;
    let compute = tenant.ports.compute();
    let image = compute
        .find_image(&spec.image)
        .await
        .map_err(ReconcileError::cloud("look up the image", &key))?;
    let flavor = compute
        .find_flavor(&spec.flavor)
        .await
        .map_err(ReconcileError::cloud("look up the flavor", &key))?;
    let network_names = spec
        .networks
        .clone()
        .unwrap_or_else(|| ctx.config.defaults.networks.clone());
    let network = tenant.ports.network(None);
    let mut networks: Vec<NetworkId> = Vec::with_capacity(network_names.len());
    for name in &network_names {
        let found = network
            .find_network(name)
            .await
            .map_err(ReconcileError::cloud("look up the network", &key))?;
        networks.push(found.id);
    }
    Ok(CreateServer {
        name: owner.name.clone(),
        image: image.id,
        flavor: flavor.id,
        networks,
        user_data: user_data(ctx, vm).await?,
        key_name: spec.key_name.clone(),
        security_groups: spec.security_groups.clone().unwrap_or_default(),
        availability_zone: spec.availability_zone.clone(),
        metadata: super::plan::desired_metadata(vm, owner),
        tags: owner.tags(),
        description: spec.description.clone(),
        server_group: vm
            .annotations()
            .get(annotations::SERVER_GROUP)
            .map(|id| ServerGroupId::new(id.clone())),
    })
}

/// The init script's text. Read at creation only: a later edit of the ConfigMap or
/// Secret does not reach a running server.
async fn user_data(ctx: &Context, vm: &VirtualMachine) -> Result<Option<UserData>, ReconcileError> {
    let Some(script) = &vm.spec.init_script else {
        return Ok(None);
    };
    let key = object_key(vm);
    let text = match script {
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
    if text.len() > MAX_USER_DATA_BYTES {
        return Err(ReconcileError::Invalid {
            object: key,
            reason: "InitScriptTooLarge",
            message: format!(
                "the init script has {} bytes; Nova takes at most {MAX_USER_DATA_BYTES} \
                 (65,535 characters of base64): shorten it or have it fetch the rest",
                text.len()
            ),
        });
    }
    Ok(Some(UserData(text)))
}

/// The init script is missing: `what` says where it was looked for.
fn script_missing(vm: &VirtualMachine, what: String) -> ReconcileError {
    ReconcileError::Invalid {
        object: object_key(vm),
        reason: "InitScriptNotFound",
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
        reason: "InitScriptInvalid",
        message: format!("Secret {} key {} is not UTF-8 text", r.name, r.key),
    })
}

/// Nova takes user data as at most 65,535 characters of base64: 3 bytes per 4 characters.
const MAX_USER_DATA_BYTES: usize = 65_535 / 4 * 3;
