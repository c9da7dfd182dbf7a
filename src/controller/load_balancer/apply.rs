//! The only cloud writes of the LoadBalancer controller: carry out one planned step
//! and say what it means for status, events and the next look.

use std::time::Duration;

use kube::runtime::events::EventType;
use verda_api::conditions::Status;
use verda_api::v1alpha1::LoadBalancer;

use super::desired;
use super::plan::Step;
use super::resolve;
use crate::cloud::ids::LoadBalancerId;
use crate::cloud::model::loadbalancing::CreateLoadBalancer;
use crate::cloud::model::network::CreateFloatingIp;
use crate::cloud::owner::Owner;
use crate::cloud::{LoadBalancing, Network, ignore_not_found};
use crate::controller::{Context, ReconcileError};

/// The Ready reasons of a load balancer on its way.
pub const PROVISIONING: &str = "Provisioning";
pub const LOAD_BALANCER_ERROR: &str = "LoadBalancerError";

/// What a step did.
pub struct Outcome {
    /// The load balancer status should record: `Some(Some(id))` a new one,
    /// `Some(None)` none any more, `None` unchanged.
    pub recorded: Option<Option<LoadBalancerId>>,
    pub ready: (Status, &'static str, String),
    pub event: Option<(EventType, &'static str, String)>,
    pub requeue: Duration,
}

fn busy(message: String, poll: Duration) -> Outcome {
    Outcome {
        recorded: None,
        ready: (Status::False, PROVISIONING, message),
        event: None,
        requeue: poll,
    }
}

fn wrote(
    message: String,
    event: Option<(EventType, &'static str, String)>,
    poll: Duration,
) -> Outcome {
    Outcome {
        event,
        ..busy(message, poll)
    }
}

/// What a paused object reports instead of carrying out `step`.
pub fn paused(step: &Step, resync: Duration) -> Outcome {
    Outcome {
        recorded: None,
        ready: (
            Status::False,
            crate::controller::lifecycle::PAUSED_READY,
            crate::controller::lifecycle::paused_message(&step.describe()),
        ),
        event: None,
        requeue: resync,
    }
}

/// Everything a step may need.
pub struct Inputs<'a> {
    pub ctx: &'a Context,
    pub octavia: &'a dyn LoadBalancing,
    pub neutron: &'a dyn Network,
    pub lb: &'a LoadBalancer,
    pub owner: &'a Owner,
}

/// Carries out `step`. Octavia's 409 while the load balancer is busy is not a failure:
/// the step is tried again on the next look.
pub async fn run(inputs: &Inputs<'_>, step: Step) -> Result<Outcome, ReconcileError> {
    let poll = inputs.ctx.timing.poll;
    match write(inputs, step).await {
        Err(ReconcileError::Cloud { source, .. }) if source.is_immutable() => Ok(busy(
            format!("Octavia is busy with an earlier change: {source}"),
            poll,
        )),
        other => other,
    }
}

async fn write(inputs: &Inputs<'_>, step: Step) -> Result<Outcome, ReconcileError> {
    let Inputs {
        ctx,
        octavia,
        neutron,
        lb,
        owner,
    } = *inputs;
    let key = format!("{}/{}", owner.namespace, owner.name);
    let poll = ctx.timing.poll;
    let port = |i: usize| &lb.spec.ports[i];
    let outcome = match step {
        Step::Create(members) => {
            let placement = resolve::placement(&ctx.config, octavia, neutron, lb).await?;
            let listeners = lb
                .spec
                .ports
                .iter()
                .zip(members)
                .map(|(port, members)| desired::listener_tree(owner, port, members))
                .collect();
            let created = octavia
                .create_load_balancer(&CreateLoadBalancer {
                    name: desired::lb_name(owner),
                    description: lb.spec.description.clone(),
                    vip_subnet_id: Some(placement.vip_subnet),
                    flavor_id: placement.flavor,
                    tags: owner.tags(),
                    listeners,
                    ..CreateLoadBalancer::default()
                })
                .await
                .map_err(ReconcileError::cloud("create the load balancer", &key))?;
            let note = format!("created load balancer {}", created.id);
            Outcome {
                recorded: Some(Some(created.id)),
                ..wrote(
                    note.clone(),
                    Some((EventType::Normal, "Created", note)),
                    poll,
                )
            }
        }
        Step::DeleteDuplicates(ids) => {
            for id in &ids {
                ignore_not_found(octavia.delete_load_balancer(id).await).map_err(
                    ReconcileError::cloud("delete a duplicate load balancer", &key),
                )?;
            }
            let note = format!(
                "deleted duplicate load balancers {}",
                crate::cloud::ids::joined(&ids)
            );
            wrote(
                note.clone(),
                Some((EventType::Warning, "DuplicateDeleted", note)),
                poll,
            )
        }
        Step::ReportError { first, retry_in } => {
            let message = format!(
                "Octavia reports the load balancer in ERROR; it is deleted and created anew in {}s",
                retry_in.as_secs()
            );
            Outcome {
                recorded: None,
                ready: (Status::False, LOAD_BALANCER_ERROR, message.clone()),
                event: first.then_some((EventType::Warning, LOAD_BALANCER_ERROR, message)),
                requeue: retry_in.max(poll),
            }
        }
        Step::DeleteErrored(id) => {
            ignore_not_found(octavia.delete_load_balancer(&id).await).map_err(
                ReconcileError::cloud("delete the failed load balancer", &key),
            )?;
            let note = format!("deleted load balancer {id}, which was in ERROR; a new one follows");
            Outcome {
                recorded: Some(None),
                ..wrote(
                    note.clone(),
                    Some((EventType::Normal, "Recreating", note)),
                    poll,
                )
            }
        }
        Step::Wait(status) => busy(
            format!(
                "Octavia is applying a change ({})",
                super::status::word(status).unwrap_or_default()
            ),
            poll,
        ),
        Step::CreateListener(i, lb_id) => {
            let l = octavia
                .create_listener(&desired::listener(owner, &lb_id, port(i)))
                .await
                .map_err(ReconcileError::cloud("create a listener", &key))?;
            wrote(
                format!("created listener {} for port {}", l.id, port(i).port),
                None,
                poll,
            )
        }
        Step::CreatePool(i, listener) => {
            let p = octavia
                .create_pool(&desired::pool(owner, &listener, port(i)))
                .await
                .map_err(ReconcileError::cloud("create a pool", &key))?;
            wrote(
                format!("created pool {} for port {}", p.id, port(i).port),
                None,
                poll,
            )
        }
        Step::CreateMonitor(i, pool, settings) => {
            octavia
                .create_health_monitor(&desired::create_monitor(owner, &pool, port(i), &settings))
                .await
                .map_err(ReconcileError::cloud("create a health monitor", &key))?;
            wrote(
                format!("created the health monitor of port {}", port(i).port),
                None,
                poll,
            )
        }
        Step::UpdateMonitor(i, id, settings) => {
            octavia
                .update_health_monitor(&id, &desired::update_monitor(&settings))
                .await
                .map_err(ReconcileError::cloud("update a health monitor", &key))?;
            wrote(
                format!("updated the health monitor of port {}", port(i).port),
                None,
                poll,
            )
        }
        Step::DeleteMonitor(id) => {
            ignore_not_found(octavia.delete_health_monitor(&id).await)
                .map_err(ReconcileError::cloud("delete a health monitor", &key))?;
            wrote(format!("deleted health monitor {id}"), None, poll)
        }
        Step::DeletePool(id) => {
            ignore_not_found(octavia.delete_pool(&id).await)
                .map_err(ReconcileError::cloud("delete a pool", &key))?;
            wrote(format!("deleted pool {id}"), None, poll)
        }
        Step::DeleteListener(id) => {
            ignore_not_found(octavia.delete_listener(&id).await)
                .map_err(ReconcileError::cloud("delete a listener", &key))?;
            wrote(format!("deleted listener {id}"), None, poll)
        }
        Step::ReplaceMembers(i, pool, members) => {
            octavia
                .replace_members(&pool, &members)
                .await
                .map_err(ReconcileError::cloud("update the pool members", &key))?;
            let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
            let note = format!(
                "port {}: {} members ({})",
                port(i).port,
                members.len(),
                names.join(", ")
            );
            wrote(
                note.clone(),
                Some((EventType::Normal, "MembersUpdated", note)),
                poll,
            )
        }
        Step::CreateFloatingIp(vip_port) => {
            let network = resolve::floating_network(&ctx.config, neutron, &key).await?;
            let fip = neutron
                .create_floating_ip(&CreateFloatingIp {
                    floating_network: network,
                    port: Some(vip_port),
                    description: Some(owner.tag()),
                })
                .await
                .map_err(ReconcileError::cloud("allocate a floating IP", &key))?;
            let note = format!("floating IP {} points at the VIP", fip.floating_ip_address);
            wrote(
                note.clone(),
                Some((EventType::Normal, "FloatingIPAllocated", note)),
                poll,
            )
        }
        Step::AssociateFloatingIp(id, vip_port) => {
            neutron
                .update_floating_ip(&id, Some(&vip_port))
                .await
                .map_err(ReconcileError::cloud("associate the floating IP", &key))?;
            wrote(
                format!("associated floating IP {id} with the VIP"),
                None,
                poll,
            )
        }
        Step::DeleteFloatingIp(id) => {
            ignore_not_found(neutron.delete_floating_ip(&id).await)
                .map_err(ReconcileError::cloud("release a floating IP", &key))?;
            let note = format!("released floating IP {id}");
            wrote(
                note.clone(),
                Some((EventType::Normal, "FloatingIPReleased", note)),
                poll,
            )
        }
        Step::HoldMembers(starting) => busy(
            format!(
                "{starting} VirtualMachines of the group are still starting; they join the pools \
                 together once Ready"
            ),
            poll,
        ),
        Step::Converged => Outcome {
            recorded: None,
            ready: (
                Status::True,
                "Active",
                "the load balancer serves every port".into(),
            ),
            event: None,
            requeue: ctx.timing.resync,
        },
    };
    Ok(outcome)
}
