//! The VirtualMachine controller: one Nova server per object.
//!
//! Its [`Reconciler`]: `observe` (servers by owner UID, lookups, declared ports,
//! volumes) → `plan` (pure: the next step) → `execute` (the only cloud writes) →
//! `status`. The server is found by the owner's UID before any create and its ID is
//! written to status right after, so a crash anywhere leaves neither a duplicate nor an
//! orphan.

pub mod execute;
pub mod import;
pub mod network_ports;
pub mod observe;
pub mod outcome;
pub mod plan;
pub mod power;
pub mod references;
mod removal;
pub mod security_groups;
mod stale_holders;
pub mod status;
pub mod volumes;

use std::sync::Arc;

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::runtime::events::Event;
use kube::runtime::reflector::ObjectRef;
use verda_api::v1alpha1::{RunStrategy, VirtualMachine, VirtualMachineStatus, finalizers};

use crate::caches::cloud_view::ProjectView;
use crate::caches::watch::Feeds;
use crate::caches::watch::packed::Packed;
use crate::cloud::ids::{NetworkId, ServerId};
use crate::cloud::{BlockStorage, Compute, Dns, Network};
use crate::controllers::dns_records;
use crate::runtime::driver::{packed_error_policy, reconcile_packed};
use crate::runtime::events::reconcile_event;
use crate::runtime::lifecycle::Removal;
use crate::runtime::object::managed_kind;
use crate::runtime::reconciler::{Cleanup, Reconcile, Reconciler};
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;

managed_kind!(
    VirtualMachine,
    "virtualmachine",
    finalizers::VIRTUAL_MACHINE
);

/// The controller: its own changes wake a VirtualMachine, and so does a refresh of the
/// cloud view that found its server changed or gone.
pub fn run(
    ctx: Arc<Context>,
    feeds: &mut Feeds,
    refreshed: BoxStream<'static, ObjectRef<Packed<VirtualMachine>>>,
) -> impl Future<Output = ()> + use<> {
    let vms = ctx.caches.current().virtual_machines;
    let seen = std::sync::Mutex::new(std::collections::HashMap::new());
    let naming = vms.clone();
    feeds
        .virtual_machines
        .controller(vms.store)
        .watches_shared_stream(feeds.security_groups.subscribe(), move |group| {
            security_groups::waiting_on(&seen, &naming, &group)
        })
        .reconcile_on(refreshed)
        .run(reconcile_packed, packed_error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
}

/// The declared ports (their networks as recorded, else resolved); a create about to
/// happen boots on them.
async fn observe_ports(
    reconcile: &Reconcile<VirtualMachine>,
    observed: &mut observe::Observed,
    use_view: bool,
) -> Result<network_ports::Look, ReconcileError> {
    let (ctx, vm, neutron) = (
        &reconcile.ctx,
        &reconcile.obj,
        reconcile.services.network.as_ref(),
    );
    let key = reconcile.owner.key();
    let networks = match observed.resolved.as_ref().or(references::written(vm)) {
        Some(r) if r.networks.len() == vm.spec.ports.as_ref().map_or(0, Vec::len) => {
            r.networks.clone()
        }
        _ => references::networks(ctx, neutron, vm, &key).await?,
    };
    let ids = networks
        .iter()
        .map(|n| NetworkId::new(n.id.clone()))
        .collect();
    let record = network_ports::record(ctx, vm, &reconcile.owner);
    let known = match use_view {
        true => network_ports::known(reconcile, &observed.servers, &record).await,
        false => None,
    };
    let view = &reconcile.services.view.network_ports;
    let look = network_ports::observe(ctx, neutron, view, vm, (record, known), ids, &key).await?;
    if let Some(create) = observed.create.as_mut() {
        let count = vm.spec.ports.as_ref().map_or(0, Vec::len);
        create.ports = look.boot_ports(count).unwrap_or_default();
    }
    Ok(look)
}

/// The cloud a VirtualMachine talks to: Nova, and the project's view of its servers.
pub struct Services {
    compute: Arc<dyn Compute>,
    network: Arc<dyn Network>,
    cinder: Arc<dyn BlockStorage>,
    dns: Arc<dyn Dns>,
    view: Arc<ProjectView>,
}

impl Reconciler for VirtualMachine {
    type Services = Services;
    type Observed = observe::Observed;
    type Step = plan::Step;
    type Outcome = execute::Outcome;
    type Status = VirtualMachineStatus;

    fn services(ctx: &Context, tenant: &Tenant, _: &Self) -> Services {
        Services {
            compute: tenant.services.compute(),
            network: tenant.services.network(None),
            cinder: tenant.services.block_storage(),
            dns: tenant.services.dns(None),
            view: ctx.view.of(tenant),
        }
    }

    /// Nothing to check before I/O: the API server's schema and rules cover the spec,
    /// and the init script is read where it lives.
    fn validate(_: &Self, _: &Context) -> Result<(), ReconcileError> {
        Ok(())
    }

    fn current_status(&self) -> Option<&VirtualMachineStatus> {
        self.status.as_ref()
    }

    async fn observe(
        reconcile: &Reconcile<Self>,
        use_view: bool,
    ) -> Result<observe::Observed, ReconcileError> {
        let Reconcile {
            ctx,
            obj,
            owner,
            services,
            tenant,
            ..
        } = reconcile;
        let sources = observe::Sources {
            ctx,
            tenant,
            view: &services.view,
            compute: services.compute.as_ref(),
            network: services.network.as_ref(),
            vm: obj,
            owner,
            creates: reconcile.policy.writes(),
        };
        let mut observed = observe::servers(&sources, use_view).await?;
        // Only a server to be halted asks whether the pools still list it.
        if power::strategy(obj) == RunStrategy::Halted {
            observed.in_pools = power::in_pools(&ctx.caches.current(), obj).await;
        }
        // Settled and converged as recorded: the ports are as the status says (the
        // shared cloud view does not refresh ports; a look costs a call per object).
        let settled = use_view && observed.from_view && network_ports::settled(obj);
        if network_ports::wanted(obj) && !settled {
            observed.ports = Some(observe_ports(reconcile, &mut observed, use_view).await?);
        }
        if volumes::wanted(obj) {
            let owner = volumes::volume_owner(ctx, obj, owner);
            let server = plan::keeper(obj, &observed.servers);
            let cinder = services.cinder.as_ref();
            let view = &services.view.volumes;
            let look = volumes::observe(ctx, cinder, view, obj, owner, server, use_view).await?;
            observed.volumes = Some(look);
        }
        let designate = dns_records::Designate::new(services.dns.as_ref(), &services.view, ctx);
        let reported = obj.status.as_ref().map_or(&[][..], |s| &s.dns[..]);
        observed.dns = dns_records::read(designate, &obj.spec.dns, reported).await;
        Ok(observed)
    }

    /// A create (of the server, or of a volume), an attach and the release of a volume
    /// from a vanished server are decided on the cloud itself: the view may not have
    /// seen the volume taken or let go since.
    fn needs_fresh_look(observed: &observe::Observed, step: &plan::Step) -> bool {
        use volumes::plan::VolumeStep;
        let volumes_from_view = observed.volumes.as_ref().is_some_and(|v| v.from_view);
        match step {
            plan::Step::Create => observed.from_view,
            plan::Step::Volume(
                VolumeStep::Create { .. } | VolumeStep::Attach { .. } | VolumeStep::Held { .. },
            ) => volumes_from_view,
            _ => false,
        }
    }

    fn plan(reconcile: &Reconcile<Self>, observed: &observe::Observed) -> plan::Step {
        let step = plan::plan(
            &reconcile.obj,
            &reconcile.owner,
            &observed.servers,
            &observed.flavor,
            &reconcile.ctx.timing,
            observed.in_pools,
            reconcile.now,
        );
        let step = plan::with_ports(
            step,
            &reconcile.obj,
            &observed.servers,
            observed.ports.as_ref(),
        );
        plan::with_volumes(
            step,
            &reconcile.obj,
            &observed.servers,
            observed.volumes.as_ref(),
        )
    }

    /// A step that writes, but for an import in place of a create (it writes nothing
    /// while paused: it only looks the server up).
    fn while_paused(
        reconcile: &Reconcile<Self>,
        observed: &observe::Observed,
        step: &plan::Step,
    ) -> Option<execute::Outcome> {
        let obj = &reconcile.obj;
        let imports = matches!(step, plan::Step::Create) && obj.spec.import.is_some();
        let resync = reconcile.ctx.timing.resync;
        (step.writes() && !imports).then(|| execute::paused(obj, observed, step, resync))
    }

    /// An import in place of a create, or the step.
    async fn execute(
        reconcile: &Reconcile<Self>,
        observed: &observe::Observed,
        step: plan::Step,
    ) -> Result<execute::Outcome, ReconcileError> {
        let Reconcile {
            ctx,
            obj,
            owner,
            tenant,
            policy,
            services,
            ..
        } = reconcile;
        match (&step, &obj.spec.import) {
            (plan::Step::Create, Some(import)) => {
                let id = ServerId::new(import.id.clone());
                import::import(ctx, tenant, obj, owner, &id, policy.writes()).await
            }
            _ => {
                let written = step.clone();
                let forget = || match (&written, &observed.volumes) {
                    (plan::Step::Volume(_), Some(look)) => {
                        services.view.volumes.forget(&look.owner)
                    }
                    // A port write changes no server.
                    (plan::Step::Port(_), _) => {}
                    (plan::Step::Create, _) => services.view.servers.creating(owner),
                    _ if written.writes() => {
                        services.view.servers.forget(owner);
                        // A server deleted or changed may still hold its ports.
                        if let Some(look) = &observed.ports {
                            services.view.network_ports.forget(&look.record);
                        }
                    }
                    _ => {}
                };
                forget();
                let outcome = execute::run(ctx, tenant, obj, owner, observed, step).await;
                // Again once the write is answered: a refresh asked while it was on its
                // way may have listed the cloud before it took effect (a volume still
                // `available` while Nova attaches it), and must not vouch for that.
                forget();
                let mut outcome = outcome?;
                outcome.dns = names(reconcile, observed, &outcome).await;
                if outcome.dns.as_ref().is_some_and(|kept| kept.unsettled) {
                    outcome.requeue = outcome.requeue.min(dns_records::POLL);
                }
                Ok(outcome)
            }
        }
    }

    fn status(
        reconcile: &Reconcile<Self>,
        observed: &observe::Observed,
        outcome: &execute::Outcome,
    ) -> VirtualMachineStatus {
        let mut status =
            status::next_status(&reconcile.obj, &observed.servers, outcome, reconcile.now);
        if let Some(resolved) = &observed.resolved {
            status.resolved = Some(resolved.clone());
        }
        if let Some(look) = &observed.volumes {
            let server = outcome.server_id.as_ref();
            volumes::status::fill(&mut status, &reconcile.obj, look, server);
        }
        if let Some(look) = &observed.ports {
            let server = outcome.server_id.as_ref().map(|s| s.as_str());
            status.ports = network_ports::status(&reconcile.obj, look, server);
            status.floating_ip = network_ports::floating_status(look);
        }
        if let Some(kept) = &outcome.dns {
            status.dns = kept.statuses.clone();
        }
        status
    }

    fn events(
        _: &Reconcile<Self>,
        outcome: &execute::Outcome,
        _: &VirtualMachineStatus,
    ) -> Vec<Event> {
        let dns = outcome.dns.iter().flat_map(|kept| &kept.events);
        outcome
            .event
            .iter()
            .chain(dns)
            .map(|(type_, reason, note)| reconcile_event(*type_, reason, note.clone()))
            .collect()
    }

    fn gauges(_: &Context, _: &Self, _: &VirtualMachineStatus) {}

    fn requeue(
        _: &Reconcile<Self>,
        outcome: &execute::Outcome,
        _: &VirtualMachineStatus,
    ) -> Duration {
        outcome.requeue
    }

    async fn cleanup(
        vm: Arc<Self>,
        ctx: Arc<Context>,
        removal: Removal,
    ) -> Result<Cleanup, ReconcileError> {
        removal::cleanup(vm, ctx, removal).await
    }
}

/// The record sets of `spec.dns` brought to the server's addresses as this round sees
/// them; `None` (the status keeps its rows) when there are no names or Designate could
/// not be read.
async fn names(
    reconcile: &Reconcile<VirtualMachine>,
    observed: &observe::Observed,
    outcome: &execute::Outcome,
) -> Option<dns_records::Kept> {
    let seen = match &observed.dns {
        Ok(seen) if seen.is_empty() => return None,
        Ok(seen) => seen,
        Err(e) => {
            tracing::warn!(virtualmachine = %reconcile.owner.key(), "could not read the DNS record sets of spec.dns: {e}");
            return None;
        }
    };
    let vm = &reconcile.obj;
    let server = outcome.server_id.as_ref();
    let server = server.and_then(|id| observed.servers.iter().find(|s| &s.id == id));
    let primary = server.and_then(|s| s.primary_ip().map(str::to_owned));
    let primary = primary.into_iter().collect();
    let floating = match &observed.ports {
        Some(look) => network_ports::floating_status(look),
        None => vm.status.as_ref().and_then(|s| s.floating_ip.clone()),
    };
    let ctx = &reconcile.ctx;
    let record = network_ports::record(ctx, vm, &reconcile.owner);
    let services = &reconcile.services;
    let designate = dns_records::Designate::new(services.dns.as_ref(), &services.view, ctx);
    let writes = reconcile.policy.writes();
    let addresses = dns_records::Addresses { primary, floating };
    Some(dns_records::converge(designate, seen, &addresses, &record, writes).await)
}
