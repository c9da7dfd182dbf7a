//! The only cloud writes of the LoadBalancer controller: carry out one planned step
//! and say what it means for status, events and the next look.

use std::time::Duration;

use kube::runtime::events::EventType;
use verda_api::conditions::Status;
use verda_api::v1alpha1::LoadBalancer;

use crate::cloud::ids::{
    FloatingIpId, HealthMonitorId, ListenerId, LoadBalancerId, PoolId, PortId,
};
use crate::cloud::model::key_manager::StoredSecret;
use crate::cloud::model::loadbalancing::{
    CreateLoadBalancer, ListenerTree, LoadBalancer as OctaviaLoadBalancer, MemberSpec,
};
use crate::cloud::model::network::CreateFloatingIp;
use crate::cloud::owner::Owner;
use crate::cloud::{LoadBalancing, Network, ignore_not_found};
use crate::controllers::load_balancer::certificates::{Certificates, Wanted};
use crate::controllers::load_balancer::desired::{self, MonitorSettings};
use crate::controllers::load_balancer::plan::Step;
use crate::controllers::load_balancer::real_servers::STARTING_HOLD;
use crate::controllers::load_balancer::references;
use crate::runtime::{Context, ReconcileError};

pub use crate::runtime::progress::PROVISIONING;
/// The Ready reason of a load balancer Octavia put in ERROR.
pub const LOAD_BALANCER_ERROR: &str = "LoadBalancerError";

/// What a step did.
pub struct Outcome {
    /// The load balancer status should record: `Some(Some(id))` a new one,
    /// `Some(None)` none any more, `None` unchanged.
    pub recorded: Option<Option<LoadBalancerId>>,
    pub ready: (Status, &'static str, String),
    pub event: Option<(EventType, &'static str, String)>,
    pub requeue: Duration,
    /// The load balancer a create made and the tree it asked for.
    pub created: Option<(OctaviaLoadBalancer, Vec<ListenerTree>)>,
    /// The record sets of `spec.dns` after this round; `None`: as the status reports.
    pub dns: Option<crate::controllers::dns_records::Kept>,
}

fn busy(message: String, poll: Duration) -> Outcome {
    Outcome {
        recorded: None,
        ready: (Status::False, PROVISIONING, message),
        event: None,
        requeue: poll,
        created: None,
        dns: None,
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
        ready: crate::runtime::lifecycle::paused_ready(&step.describe()),
        event: None,
        requeue: resync,
        created: None,
        dns: None,
    }
}

/// Everything a step may need.
pub struct Inputs<'a> {
    pub ctx: &'a Context,
    pub octavia: &'a dyn LoadBalancing,
    pub neutron: &'a dyn Network,
    pub lb: &'a LoadBalancer,
    pub owner: &'a Owner,
    /// Where a new load balancer goes, resolved while observing one is missing.
    pub placement: Option<&'a references::Placement>,
    pub certificates: &'a Certificates,
}

impl Inputs<'_> {
    /// The Barbican refs of port `i`'s certificates (none for a port without `tls`).
    fn tls(&self, i: usize) -> Vec<String> {
        self.certificates.refs(i).unwrap_or_default()
    }
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
    let poll = inputs.ctx.timing.poll;
    let quiet = |message: String| Ok(wrote(message, None, poll));
    match step {
        Step::Create(members) => create(inputs, members).await,
        Step::DeleteDuplicates(ids) => delete_duplicates(inputs, &ids).await,
        Step::ReportError { first, retry_in } => Ok(in_error(first, retry_in, poll)),
        Step::ReplaceErrored(id) => delete_errored(inputs, &id).await,
        Step::Wait(status) => Ok(busy(
            format!(
                "Octavia is applying a change ({})",
                crate::cloud::model::word(status).unwrap_or_default()
            ),
            poll,
        )),
        Step::CreateListener(i, lb_id) => quiet(create_listener(inputs, i, &lb_id).await?),
        Step::UpdateListener(i, id) => quiet(update_listener(inputs, i, &id).await?),
        Step::CreatePool(i, listener) => quiet(create_pool(inputs, i, &listener).await?),
        Step::UpdatePool(i, id) => quiet(update_pool(inputs, i, &id).await?),
        Step::CreateMonitor(i, pool, settings) => {
            quiet(create_monitor(inputs, i, &pool, &settings).await?)
        }
        Step::UpdateMonitor(i, id, settings) => {
            quiet(update_monitor(inputs, i, &id, &settings).await?)
        }
        Step::DeleteMonitor(id) => quiet(delete_monitor(inputs, &id).await?),
        Step::DeletePool(id) => quiet(delete_pool(inputs, &id).await?),
        Step::DeleteListener(id) => quiet(delete_listener(inputs, &id).await?),
        Step::ReplaceMembers(i, pool, members) => replace_members(inputs, i, &pool, &members).await,
        Step::HoldMembers(starting) => Ok(held(starting, false, poll)),
        Step::HoldCreate(starting) => Ok(held(starting, true, poll)),
        Step::CreateFloatingIp(vip_port) => create_floating_ip(inputs, vip_port).await,
        Step::AssociateFloatingIp(id, vip_port) => {
            quiet(associate_floating_ip(inputs, &id, &vip_port).await?)
        }
        Step::DeleteFloatingIp(id) => delete_floating_ip(inputs, &id).await,
        Step::RecordOwner(id, tags) => quiet(record_owner(inputs, &id, &tags).await?),
        Step::StoreCertificate(wanted) => store_certificate(inputs, &wanted).await,
        Step::DeleteCertificate(secret) => delete_certificate(inputs, &secret).await,
        Step::Converged => Ok(Outcome {
            recorded: None,
            ready: (
                Status::True,
                "Active",
                "the load balancer serves every port".into(),
            ),
            event: None,
            requeue: inputs.ctx.timing.resync,
            created: None,
            dns: None,
        }),
    }
}

/// Octavia put the load balancer in ERROR: say so (an event the first time) and look
/// again when it is to be replaced.
fn in_error(first: bool, retry_in: Duration, poll: Duration) -> Outcome {
    let message = format!(
        "Octavia reports the load balancer in ERROR; it is deleted and created anew in {}s",
        retry_in.as_secs()
    );
    Outcome {
        recorded: None,
        ready: (Status::False, LOAD_BALANCER_ERROR, message.clone()),
        event: first.then_some((EventType::Warning, LOAD_BALANCER_ERROR, message)),
        requeue: retry_in.max(poll),
        created: None,
        dns: None,
    }
}

/// One call creates the load balancer with every port's listener, pool, monitor and
/// members.
async fn create(
    inputs: &Inputs<'_>,
    members: Vec<Vec<MemberSpec>>,
) -> Result<Outcome, ReconcileError> {
    let Inputs {
        ctx,
        octavia,
        lb,
        owner,
        placement,
        ..
    } = *inputs;
    let Some(placement) = placement else {
        // Observed with a load balancer, yet none now: the next look resolves it.
        return Ok(busy(
            "looking up the VIP subnet and flavor".into(),
            ctx.timing.poll,
        ));
    };
    let listeners: Vec<ListenerTree> = lb
        .spec
        .ports
        .iter()
        .zip(members)
        .enumerate()
        .map(|(i, (port, members))| desired::listener_tree(owner, port, &inputs.tls(i), members))
        .collect();
    let created = octavia
        .create_load_balancer(&CreateLoadBalancer {
            name: owner.load_balancer_name(),
            description: lb.spec.description.clone(),
            vip_subnet_id: Some(placement.vip_subnet.clone()),
            availability_zone: lb.spec.availability_zone.clone(),
            flavor_id: placement.flavor.clone(),
            tags: owner.load_balancer_tags(),
            listeners: listeners.clone(),
            ..CreateLoadBalancer::default()
        })
        .await
        .map_err(ReconcileError::cloud(
            "create the load balancer",
            &owner.key(),
        ))?;
    let note = format!(
        "created load balancer {} ({})",
        created.id,
        carried(lb, &listeners)
    );
    Ok(Outcome {
        recorded: Some(Some(created.id.clone())),
        created: Some((created, listeners)),
        dns: None,
        ..wrote(
            note.clone(),
            Some((EventType::Normal, "Created", note)),
            ctx.timing.poll,
        )
    })
}

/// The members a create carried, per port: "port 80: 2 members (web-0, web-1); …".
fn carried(lb: &LoadBalancer, listeners: &[ListenerTree]) -> String {
    let pools: Vec<String> = lb
        .spec
        .ports
        .iter()
        .zip(listeners)
        .map(|(port, tree)| format!("port {}: {}", port.port, counted_members(&tree.members)))
        .collect();
    pools.join("; ")
}

/// Waiting for `starting` VirtualMachines of a group: to add them to the pools
/// together, or (`creating`) to create the load balancer with them.
fn held(starting: usize, creating: bool, poll: Duration) -> Outcome {
    let after = match creating {
        true => format!(
            "the load balancer is created with them in its pools once they are Ready (at most {} s)",
            STARTING_HOLD.as_secs()
        ),
        false => "they join the pools together once Ready".to_owned(),
    };
    busy(
        format!("{starting} VirtualMachines of the group are still starting; {after}"),
        poll,
    )
}

async fn delete_duplicates(
    inputs: &Inputs<'_>,
    ids: &[LoadBalancerId],
) -> Result<Outcome, ReconcileError> {
    let key = inputs.owner.key();
    for id in ids {
        ignore_not_found(inputs.octavia.delete_load_balancer(id).await).map_err(
            ReconcileError::cloud("delete a duplicate load balancer", &key),
        )?;
    }
    let note = format!(
        "deleted duplicate load balancers {}",
        crate::cloud::ids::joined(ids)
    );
    Ok(wrote(
        note.clone(),
        Some((EventType::Warning, "DuplicateDeleted", note)),
        inputs.ctx.timing.poll,
    ))
}

async fn delete_errored(
    inputs: &Inputs<'_>,
    id: &LoadBalancerId,
) -> Result<Outcome, ReconcileError> {
    ignore_not_found(inputs.octavia.delete_load_balancer(id).await).map_err(
        ReconcileError::cloud("delete the failed load balancer", &inputs.owner.key()),
    )?;
    let note = format!("deleted load balancer {id}, which was in ERROR; a new one follows");
    Ok(Outcome {
        recorded: Some(None),
        ..wrote(
            note.clone(),
            Some((EventType::Normal, "Recreating", note)),
            inputs.ctx.timing.poll,
        )
    })
}

async fn create_listener(
    inputs: &Inputs<'_>,
    i: usize,
    lb_id: &LoadBalancerId,
) -> Result<String, ReconcileError> {
    let port = &inputs.lb.spec.ports[i];
    let l = inputs
        .octavia
        .create_listener(&desired::listener(
            inputs.owner,
            lb_id,
            port,
            &inputs.tls(i),
        ))
        .await
        .map_err(ReconcileError::cloud(
            "create a listener",
            &inputs.owner.key(),
        ))?;
    Ok(format!("created listener {} for port {}", l.id, port.port))
}

async fn update_listener(
    inputs: &Inputs<'_>,
    i: usize,
    id: &ListenerId,
) -> Result<String, ReconcileError> {
    let port = &inputs.lb.spec.ports[i];
    inputs
        .octavia
        .update_listener(id, &desired::update_listener(port, &inputs.tls(i)))
        .await
        .map_err(ReconcileError::cloud(
            "update a listener",
            &inputs.owner.key(),
        ))?;
    Ok(format!("updated the listener of port {}", port.port))
}

/// Stores a certificate in Barbican, where the listener will read it.
async fn store_certificate(
    inputs: &Inputs<'_>,
    wanted: &Wanted,
) -> Result<Outcome, ReconcileError> {
    let stored = inputs
        .octavia
        .store_certificate(&wanted.name, &wanted.bundle.pkcs12)
        .await
        .map_err(ReconcileError::cloud(
            "store a certificate in Barbican",
            &inputs.owner.key(),
        ))?;
    let note = format!(
        "stored the certificate of Secret {} (expires {}) in Barbican as {}",
        wanted.secret,
        wanted.bundle.not_after.format("%Y-%m-%d"),
        stored.secret_ref
    );
    Ok(wrote(
        note.clone(),
        Some((EventType::Normal, "CertificateStored", note)),
        inputs.ctx.timing.poll,
    ))
}

/// Deletes a Barbican secret no listener holds any more.
async fn delete_certificate(
    inputs: &Inputs<'_>,
    secret: &StoredSecret,
) -> Result<Outcome, ReconcileError> {
    ignore_not_found(inputs.octavia.delete_certificate(secret).await).map_err(
        ReconcileError::cloud("delete a certificate from Barbican", &inputs.owner.key()),
    )?;
    let note = format!(
        "deleted Barbican secret {}, which no listener serves any more",
        secret.secret_ref
    );
    Ok(wrote(
        note.clone(),
        Some((EventType::Normal, "CertificateDeleted", note)),
        inputs.ctx.timing.poll,
    ))
}

async fn update_pool(inputs: &Inputs<'_>, i: usize, id: &PoolId) -> Result<String, ReconcileError> {
    let port = &inputs.lb.spec.ports[i];
    inputs
        .octavia
        .update_pool(id, &desired::update_pool(port))
        .await
        .map_err(ReconcileError::cloud("update a pool", &inputs.owner.key()))?;
    Ok(format!("updated the pool of port {}", port.port))
}

async fn create_pool(
    inputs: &Inputs<'_>,
    i: usize,
    listener: &ListenerId,
) -> Result<String, ReconcileError> {
    let port = &inputs.lb.spec.ports[i];
    let p = inputs
        .octavia
        .create_pool(&desired::pool(inputs.owner, listener, port))
        .await
        .map_err(ReconcileError::cloud("create a pool", &inputs.owner.key()))?;
    Ok(format!("created pool {} for port {}", p.id, port.port))
}

async fn create_monitor(
    inputs: &Inputs<'_>,
    i: usize,
    pool: &PoolId,
    settings: &MonitorSettings,
) -> Result<String, ReconcileError> {
    let port = &inputs.lb.spec.ports[i];
    inputs
        .octavia
        .create_health_monitor(&desired::create_monitor(inputs.owner, pool, port, settings))
        .await
        .map_err(ReconcileError::cloud(
            "create a health monitor",
            &inputs.owner.key(),
        ))?;
    Ok(format!("created the health monitor of port {}", port.port))
}

async fn update_monitor(
    inputs: &Inputs<'_>,
    i: usize,
    id: &HealthMonitorId,
    settings: &MonitorSettings,
) -> Result<String, ReconcileError> {
    inputs
        .octavia
        .update_health_monitor(id, &desired::update_monitor(settings))
        .await
        .map_err(ReconcileError::cloud(
            "update a health monitor",
            &inputs.owner.key(),
        ))?;
    Ok(format!(
        "updated the health monitor of port {}",
        inputs.lb.spec.ports[i].port
    ))
}

async fn delete_monitor(
    inputs: &Inputs<'_>,
    id: &HealthMonitorId,
) -> Result<String, ReconcileError> {
    ignore_not_found(inputs.octavia.delete_health_monitor(id).await).map_err(
        ReconcileError::cloud("delete a health monitor", &inputs.owner.key()),
    )?;
    Ok(format!("deleted health monitor {id}"))
}

async fn record_owner(
    inputs: &Inputs<'_>,
    id: &LoadBalancerId,
    tags: &[String],
) -> Result<String, ReconcileError> {
    inputs
        .octavia
        .set_load_balancer_tags(id, tags)
        .await
        .map_err(ReconcileError::cloud(
            "tag the load balancer with its owner",
            &inputs.owner.key(),
        ))?;
    Ok(format!("recorded the owner on load balancer {id}"))
}

async fn delete_pool(inputs: &Inputs<'_>, id: &PoolId) -> Result<String, ReconcileError> {
    ignore_not_found(inputs.octavia.delete_pool(id).await)
        .map_err(ReconcileError::cloud("delete a pool", &inputs.owner.key()))?;
    Ok(format!("deleted pool {id}"))
}

async fn delete_listener(inputs: &Inputs<'_>, id: &ListenerId) -> Result<String, ReconcileError> {
    ignore_not_found(inputs.octavia.delete_listener(id).await).map_err(ReconcileError::cloud(
        "delete a listener",
        &inputs.owner.key(),
    ))?;
    Ok(format!("deleted listener {id}"))
}

async fn replace_members(
    inputs: &Inputs<'_>,
    i: usize,
    pool: &PoolId,
    members: &[MemberSpec],
) -> Result<Outcome, ReconcileError> {
    inputs
        .octavia
        .replace_members(pool, members)
        .await
        .map_err(ReconcileError::cloud(
            "update the pool members",
            &inputs.owner.key(),
        ))?;
    let note = format!(
        "port {}: {}",
        inputs.lb.spec.ports[i].port,
        counted_members(members)
    );
    Ok(wrote(
        note.clone(),
        Some((EventType::Normal, "MembersUpdated", note)),
        inputs.ctx.timing.poll,
    ))
}

/// "no members", "1 member (web-0)", "2 members (web-0, web-1)".
fn counted_members(members: &[MemberSpec]) -> String {
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    match names.len() {
        0 => "no members".to_owned(),
        1 => format!("1 member ({})", names[0]),
        n => format!("{n} members ({})", names.join(", ")),
    }
}

async fn create_floating_ip(
    inputs: &Inputs<'_>,
    vip_port: PortId,
) -> Result<Outcome, ReconcileError> {
    let Inputs {
        ctx,
        neutron,
        owner,
        ..
    } = *inputs;
    let key = owner.key();
    let network = references::floating_network(&ctx.config, neutron, &key).await?;
    let fip = neutron
        .create_floating_ip(&CreateFloatingIp {
            floating_network: network,
            port: Some(vip_port),
            description: Some(owner.tag()),
        })
        .await
        .map_err(ReconcileError::cloud("allocate a floating IP", &key))?;
    let note = format!("floating IP {} points at the VIP", fip.floating_ip_address);
    Ok(wrote(
        note.clone(),
        Some((EventType::Normal, "FloatingIPAllocated", note)),
        ctx.timing.poll,
    ))
}

async fn associate_floating_ip(
    inputs: &Inputs<'_>,
    id: &FloatingIpId,
    vip_port: &PortId,
) -> Result<String, ReconcileError> {
    inputs
        .neutron
        .update_floating_ip(id, Some(vip_port))
        .await
        .map_err(ReconcileError::cloud(
            "associate the floating IP",
            &inputs.owner.key(),
        ))?;
    Ok(format!("associated floating IP {id} with the VIP"))
}

async fn delete_floating_ip(
    inputs: &Inputs<'_>,
    id: &FloatingIpId,
) -> Result<Outcome, ReconcileError> {
    ignore_not_found(inputs.neutron.delete_floating_ip(id).await).map_err(
        ReconcileError::cloud("release a floating IP", &inputs.owner.key()),
    )?;
    let note = format!("released floating IP {id}");
    Ok(wrote(
        note.clone(),
        Some((EventType::Normal, "FloatingIPReleased", note)),
        inputs.ctx.timing.poll,
    ))
}
