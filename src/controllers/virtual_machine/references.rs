//! The spec's image, flavor and networks as OpenStack IDs: what status recorded while
//! the spec still names the same, looked up otherwise. Recorded before a create, so a
//! retry builds from the same IDs and a converged object looks nothing up.

use verda_api::conditions::is_true;
use verda_api::v1alpha1::{Resolution, ResolvedReferences, VirtualMachine};

use crate::cloud::services::CloudResult;
use crate::cloud::{Compute, Network};
use crate::runtime::progress::STALLED;
use crate::runtime::{Context, ReconcileError};

/// What status recorded, if anything — and nothing while the object is Stalled: a
/// create refused as terminal (an image deleted and uploaded again under its name,
/// say) is retried with the names looked up afresh, and what they give recorded only
/// if it differs.
pub fn recorded(vm: &VirtualMachine) -> Option<&ResolvedReferences> {
    let status = vm.status.as_ref()?;
    if is_true(&status.conditions, STALLED) {
        return None;
    }
    status.resolved.as_ref()
}

/// What status records, Stalled or not: the baseline a new resolution is compared to.
pub fn written(vm: &VirtualMachine) -> Option<&ResolvedReferences> {
    vm.status.as_ref()?.resolved.as_ref()
}

/// `recorded` when it resolved `requested`.
fn reuse(recorded: Option<&Resolution>, requested: &str) -> Option<Resolution> {
    recorded.filter(|r| r.requested == requested).cloned()
}

/// `recorded` when it resolved `requested`, else what `lookup` finds (ID and name; the
/// future does nothing unless awaited).
async fn resolve(
    recorded: Option<&Resolution>,
    requested: &str,
    action: &'static str,
    key: &str,
    lookup: impl Future<Output = CloudResult<(String, String)>>,
) -> Result<Resolution, ReconcileError> {
    if let Some(known) = reuse(recorded, requested) {
        return Ok(known);
    }
    let (id, name) = lookup.await.map_err(ReconcileError::cloud(action, key))?;
    Ok(Resolution {
        requested: requested.to_owned(),
        id,
        name: Some(name),
    })
}

/// The spec's flavor, recorded or looked up.
pub async fn flavor(
    compute: &dyn Compute,
    recorded: Option<&Resolution>,
    requested: &str,
    key: &str,
) -> Result<Resolution, ReconcileError> {
    let lookup =
        async { (compute.find_flavor(requested).await).map(|f| (f.id.to_string(), f.name)) };
    resolve(recorded, requested, "look up the flavor", key, lookup).await
}

/// Everything a create needs resolved: image, flavor, and the spec's networks (else
/// the operator's default ones).
pub async fn all(
    ctx: &Context,
    compute: &dyn Compute,
    network: &dyn Network,
    vm: &VirtualMachine,
    key: &str,
) -> Result<ResolvedReferences, ReconcileError> {
    let recorded = recorded(vm).cloned().unwrap_or_default();
    let spec = &vm.spec;
    let lookup =
        async { (compute.find_image(&spec.image).await).map(|i| (i.id.to_string(), i.name)) };
    let image = resolve(
        recorded.image.as_ref(),
        &spec.image,
        "look up the image",
        key,
        lookup,
    )
    .await?;
    let flavor = flavor(compute, recorded.flavor.as_ref(), &spec.flavor, key).await?;
    let networks = networks(ctx, network, vm, key).await?;
    Ok(ResolvedReferences {
        image: Some(image),
        flavor: Some(flavor),
        networks,
    })
}

/// The networks the server is on: those of `spec.ports`, else `spec.networks`, else
/// the operator's default ones; as recorded while the names are the same.
pub async fn networks(
    ctx: &Context,
    network: &dyn Network,
    vm: &VirtualMachine,
    key: &str,
) -> Result<Vec<Resolution>, ReconcileError> {
    let spec = &vm.spec;
    let names = match (&spec.ports, &spec.networks) {
        (Some(ports), _) => ports.iter().map(|p| p.network.clone()).collect(),
        (None, Some(networks)) => networks.clone(),
        (None, None) => ctx.config.defaults.networks.clone(),
    };
    let recorded = recorded(vm)
        .map(|r| r.networks.as_slice())
        .unwrap_or_default();
    let mut networks = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let lookup =
            async { (network.find_network(name).await).map(|n| (n.id.to_string(), n.name)) };
        networks.push(resolve(recorded.get(i), name, "look up the network", key, lookup).await?);
    }
    Ok(networks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(stalled: &str) -> VirtualMachine {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "verda.linecorp.com/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": "web", "namespace": "team"},
            "spec": {"image": "cirros", "flavor": "m1.small"},
            "status": {
                "resolved": {"image": {"requested": "cirros", "id": "img-1"}},
                "conditions": [{"type": "Stalled", "status": stalled, "reason": "BadRequest",
                                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            },
        }))
        .expect("a VirtualMachine")
    }

    #[test]
    fn recorded_references_are_reused_unless_the_object_is_stalled() {
        let image = |r: Option<&ResolvedReferences>| r.and_then(|r| r.image.clone()).map(|i| i.id);
        assert_eq!(image(recorded(&vm("False"))), Some("img-1".to_owned()));
        assert_eq!(image(recorded(&vm("True"))), None, "looked up afresh");
        assert_eq!(image(written(&vm("True"))), Some("img-1".to_owned()));
    }

    #[test]
    fn a_resolution_is_reused_only_for_the_name_it_resolved() {
        let known = Resolution {
            requested: "cirros".into(),
            id: "img-1".into(),
            name: None,
        };
        assert_eq!(reuse(Some(&known), "cirros"), Some(known.clone()));
        assert_eq!(reuse(Some(&known), "ubuntu"), None);
    }
}
