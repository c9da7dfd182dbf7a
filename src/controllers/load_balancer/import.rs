//! Taking over an existing Octavia load balancer (`spec.import.id`): checked, then
//! tagged with the owner (how every later reconcile finds it); a floating IP already on
//! its VIP is recorded as the owner's too. One another object owns, or whose VIP subnet
//! is not the spec's, is reported, never replaced.

use kube::runtime::events::EventType;
use verda_api::conditions::Status;

use crate::cloud::ids::{LoadBalancerId, SubnetId};
use crate::cloud::model::loadbalancing::LoadBalancer;
use crate::cloud::model::network::FloatingIpFilter;
use crate::cloud::owner::owned_by_another;
use crate::controllers::load_balancer::execute::{Inputs, Outcome, PROVISIONING};
use crate::controllers::load_balancer::references;
use crate::runtime::ReconcileError;
use crate::runtime::lifecycle::{PAUSED_READY, paused_message};
use crate::runtime::problem::Problem;

/// Checks the load balancer `id` and, when `writes`, takes it over.
pub async fn import(
    inputs: &Inputs<'_>,
    project: &str,
    id: &LoadBalancerId,
    writes: bool,
) -> Result<Outcome, ReconcileError> {
    let found = check(inputs, project, id).await?;
    let timing = inputs.ctx.timing;
    let waiting = |text: String| Outcome {
        recorded: None,
        ready: (Status::False, PROVISIONING, text),
        event: None,
        requeue: timing.poll,
        created: None,
        dns: None,
    };
    if !writes {
        return Ok(Outcome {
            ready: (
                Status::False,
                PAUSED_READY,
                paused_message(&format!("take over load balancer {id}")),
            ),
            requeue: timing.resync,
            ..waiting(String::new())
        });
    }
    if found.provisioning_status.is_pending() {
        return Ok(waiting(format!(
            "load balancer {id} is busy with an earlier change; it is taken over once Octavia is done"
        )));
    }
    take_over(inputs, &found).await?;
    let note = format!("took over load balancer {id}; it is managed from now on");
    Ok(Outcome {
        recorded: Some(Some(id.clone())),
        event: Some((EventType::Normal, "Imported", note.clone())),
        ..waiting(note)
    })
}

/// The load balancer `id`, when it exists, is nobody else's and sits on the spec's VIP
/// subnet; otherwise why not, for the object's condition.
async fn check(
    inputs: &Inputs<'_>,
    project: &str,
    id: &LoadBalancerId,
) -> Result<LoadBalancer, ReconcileError> {
    let Inputs {
        ctx,
        octavia,
        neutron,
        lb,
        owner,
        placement,
        ..
    } = *inputs;
    let key = owner.key();
    let refuse = |problem, message: String| ReconcileError::Invalid {
        object: key.clone(),
        problem,
        message,
    };
    let found = match octavia.get_load_balancer(id).await {
        Ok(found) => found,
        Err(e) if e.is_not_found() => {
            return Err(refuse(
                Problem::ImportNotFound,
                format!(
                    "spec.import.id: load balancer {id} does not exist in project {project}; \
                     check the ID with `openstack loadbalancer show {id}`"
                ),
            ));
        }
        Err(e) => {
            return Err(ReconcileError::cloud(
                "read the load balancer to import",
                &key,
            )(e));
        }
    };
    if let Some(other) = owned_by_another(&found.tags, &owner.uid) {
        return Err(refuse(
            Problem::ImportOwnedByAnother,
            format!(
                "spec.import.id: load balancer {id} belongs to the object with UID {other}; it is not taken over"
            ),
        ));
    }
    let vip_subnet = match placement {
        Some(known) => known.vip_subnet.clone(),
        None => {
            references::placement(&ctx.config, octavia, neutron, lb)
                .await?
                .vip_subnet
        }
    };
    same_vip_subnet(&found, &vip_subnet, &key)?;
    Ok(found)
}

/// An import is refused while the spec puts the VIP on another subnet than the found
/// load balancer's: it would be neither replaced nor what the spec says.
fn same_vip_subnet(
    found: &LoadBalancer,
    wanted: &SubnetId,
    key: &str,
) -> Result<(), ReconcileError> {
    if found.vip_subnet_id.as_ref() == Some(wanted) {
        return Ok(());
    }
    let actual = found
        .vip_subnet_id
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_else(|| "(none)".to_owned());
    Err(ReconcileError::Invalid {
        object: key.to_owned(),
        problem: Problem::ImportMismatch,
        message: format!(
            "load balancer {} has its VIP on subnet {actual}, the spec's is {wanted}; set \
             spec.vipSubnet to {actual} (it is not replaced, and not taken over until the spec matches)",
            found.id
        ),
    })
}

/// Records the owner on the floating IPs of the VIP, then tags the load balancer (last:
/// the tag is how the next reconcile finds it, after a crash too).
async fn take_over(inputs: &Inputs<'_>, found: &LoadBalancer) -> Result<(), ReconcileError> {
    let Inputs {
        octavia,
        neutron,
        owner,
        ..
    } = *inputs;
    let key = owner.key();
    if let Some(port) = &found.vip_port_id {
        let fips = neutron
            .list_floating_ips(&FloatingIpFilter {
                port_id: Some(port.clone()),
                ..FloatingIpFilter::default()
            })
            .await
            .map_err(ReconcileError::cloud("list the VIP's floating IPs", &key))?;
        for fip in fips.iter().filter(|f| f.description != owner.tag()) {
            neutron
                .set_floating_ip_description(&fip.id, &owner.tag())
                .await
                .map_err(ReconcileError::cloud(
                    "record the owner on the floating IP",
                    &key,
                ))?;
        }
    }
    octavia
        .set_load_balancer_tags(&found.id, &owner.load_balancer_tags_added_to(&found.tags))
        .await
        .map_err(ReconcileError::cloud(
            "tag the imported load balancer",
            &key,
        ))?;
    Ok(())
}
