//! What deleting a LoadBalancer does to its cloud resources, as its reconcile policy
//! says: delete them (floating IPs first, then the load balancer, whose cascade takes
//! listeners, pools, monitors and members), take the operator's records off them, or
//! leave them as they are.

use std::sync::Arc;

use verda_api::v1alpha1::LoadBalancer;
use verda_api::v1alpha1::annotations::RECONCILE_POLICY;

use crate::cloud::model::loadbalancing::{LoadBalancer as OsLoadBalancer, ProvisioningStatus};
use crate::cloud::model::network::FloatingIpFilter;
use crate::cloud::owner::{Owner, port_record, without_ownership};
use crate::cloud::{LoadBalancing, Network, ignore_not_found};
use crate::controllers::dns_records;
use crate::runtime::lifecycle::Removal;
use crate::runtime::object::{object_key, object_labels};
use crate::runtime::reconciler::Cleanup;
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;

/// Releases (or detaches) the floating IPs, then deletes (or detaches) every load
/// balancer carrying the owner tag; done when none is left.
pub async fn cleanup(
    lb: Arc<LoadBalancer>,
    ctx: Arc<Context>,
    removal: Removal,
) -> Result<Cleanup, ReconcileError> {
    let (tenant, detach) = match removal {
        Removal::Abandon => {
            let note = match recorded_id(&lb) {
                Some(id) => {
                    format!("load balancer {id} was left as it is ({RECONCILE_POLICY} skip)")
                }
                None => format!("nothing was deleted in the cloud ({RECONCILE_POLICY} skip)"),
            };
            finished(&ctx, &lb, "Abandoned", note).await;
            return Ok(Cleanup::Done);
        }
        Removal::Delete(tenant) => (tenant, false),
        Removal::Detach(tenant) => (tenant, true),
    };
    let key = object_key(&*lb);
    let owner = ctx.owner_of(&*lb);
    let region = lb.spec.region.as_deref();
    let octavia = tenant.services.load_balancing(region);
    let neutron = tenant.services.network(region);
    let project_view = ctx.view.of(&tenant);
    project_view.load_balancers.forget(&owner, region);
    project_view.lb_members.forget(&owner.uid);
    if !detach && !names_released(&tenant, &lb, &owner, &ctx, &key).await? {
        return Ok(Cleanup::Wait(ctx.timing.poll));
    }
    floating_ips(neutron.as_ref(), &owner, detach, &key).await?;
    let found = octavia
        .load_balancers_of(&owner.uid)
        .await
        .map_err(ReconcileError::cloud("list load balancers", &key))?;
    if found.is_empty() {
        if !detach {
            certificates(octavia.as_ref(), &lb, &owner, &key).await?;
        }
        project_view.load_balancers.removed(&owner.uid);
        let (reason, note) = match (detach, recorded_id(&lb)) {
            (true, Some(id)) => (
                "Detached",
                format!(
                    "load balancer {id} keeps running without the operator's tags ({RECONCILE_POLICY} detach-on-delete)"
                ),
            ),
            (true, None) => ("Detached", "no load balancer to detach".to_owned()),
            (false, _) => ("Deleted", "load balancer deleted".to_owned()),
        };
        finished(&ctx, &lb, reason, note).await;
        return Ok(Cleanup::Done);
    }
    load_balancers(octavia.as_ref(), &found, detach, &key).await?;
    Ok(Cleanup::Wait(ctx.timing.poll))
}

/// Once the load balancer is gone, the certificates it served: every Barbican secret
/// of the owner (Barbican is asked only where the owner may have any).
async fn certificates(
    octavia: &dyn LoadBalancing,
    lb: &LoadBalancer,
    owner: &Owner,
    key: &str,
) -> Result<(), ReconcileError> {
    if !super::certificates::in_use(lb, None) {
        return Ok(());
    }
    let stored = octavia
        .list_certificates(&owner.certificate_prefix())
        .await
        .map_err(ReconcileError::cloud(
            "list the certificates in Barbican",
            key,
        ))?;
    for secret in &stored {
        ignore_not_found(octavia.delete_certificate(secret).await).map_err(
            ReconcileError::cloud("delete a certificate from Barbican", key),
        )?;
    }
    Ok(())
}

/// Its DNS names first, so that nothing resolves to the VIP once it goes: `true` when
/// none of them is left.
async fn names_released(
    tenant: &Tenant,
    lb: &LoadBalancer,
    owner: &Owner,
    ctx: &Context,
    key: &str,
) -> Result<bool, ReconcileError> {
    let dns = tenant.services.dns(lb.spec.region.as_deref());
    let project = ctx.view.of(tenant);
    let designate = dns_records::Designate::new(dns.as_ref(), &project, ctx);
    let reported = lb.status.as_ref().map_or(&[][..], |s| &s.dns[..]);
    let record = port_record(&owner.uid, None, &ctx.cluster);
    dns_records::released(designate, &lb.spec.dns, reported, &record, key).await
}

fn recorded_id(lb: &LoadBalancer) -> Option<String> {
    lb.status.as_ref()?.load_balancer_id.clone()
}

/// Deletes the owner's floating IPs, or (detaching) clears the description that
/// records the owner.
async fn floating_ips(
    neutron: &dyn Network,
    owner: &Owner,
    detach: bool,
    key: &str,
) -> Result<(), ReconcileError> {
    let fips = neutron
        .list_floating_ips(&FloatingIpFilter {
            description: Some(owner.tag()),
            ..FloatingIpFilter::default()
        })
        .await
        .map_err(ReconcileError::cloud("list floating IPs", key))?;
    for fip in &fips {
        let (done, action) = if detach {
            let cleared = neutron.set_floating_ip_description(&fip.id, "").await;
            (cleared.map(drop), "detach a floating IP")
        } else {
            (
                neutron.delete_floating_ip(&fip.id).await,
                "release a floating IP",
            )
        };
        ignore_not_found(done).map_err(ReconcileError::cloud(action, key))?;
    }
    Ok(())
}

/// Deletes the load balancers, or (detaching) takes the operator's tags off them. One
/// busy with an earlier change, or already gone, is looked at again next time.
async fn load_balancers(
    octavia: &dyn LoadBalancing,
    found: &[OsLoadBalancer],
    detach: bool,
    key: &str,
) -> Result<(), ReconcileError> {
    for l in found
        .iter()
        .filter(|l| l.provisioning_status != ProvisioningStatus::PendingDelete)
    {
        let (done, action) = if detach {
            let untagged = octavia
                .set_load_balancer_tags(&l.id, &without_ownership(&l.tags))
                .await;
            (untagged.map(drop), "untag the load balancer")
        } else {
            (
                octavia.delete_load_balancer(&l.id).await,
                "delete the load balancer",
            )
        };
        match done {
            Ok(()) => {}
            Err(e) if e.is_not_found() || e.is_immutable() => {}
            Err(e) => return Err(ReconcileError::cloud(action, key)(e)),
        }
    }
    Ok(())
}

/// The last word on a LoadBalancer leaving: its gauges go, an event says what became
/// of its load balancer.
async fn finished(ctx: &Context, lb: &LoadBalancer, reason: &str, note: String) {
    let labels = object_labels(lb);
    ctx.metrics.load_balancer_members.remove(&labels);
    ctx.metrics.load_balancer_ready_members.remove(&labels);
    crate::runtime::lifecycle::removal_finished(ctx, lb, reason, note).await;
}
