//! The DNSZone controller: a Designate zone of the project, made for the object (or
//! taken over with `spec.import`), its email and TTL kept as declared, its ID, serial
//! and name servers reported, deleted with the object once no other record set is in
//! it.
//!
//! Its [`Reconciler`]: `observe` (the zone, `observe::find`) → `plan` (pure: the one
//! next write) → `execute` (that write) → `status`. The names of the namespace's other
//! kinds reach the zone by its name, as they reach any zone of the project.

mod observe;
pub mod plan;
mod removal;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use verda_api::conditions::{NewCondition, READY, Status, set_condition};
use verda_api::v1alpha1::{DNSZone, DnsZoneStatus, finalizers};

use crate::caches::watch::Feeds;
use crate::cloud::model::dns::DnsZone;
use crate::cloud::owner::port_record;
use crate::cloud::{Dns, ErrorKind};
use crate::controllers::dns_records::POLL;
use crate::runtime::driver::{error_policy, reconcile_in_task};
use crate::runtime::events::reconcile_event;
use crate::runtime::lifecycle::{PAUSED_READY, Removal, paused_message};
use crate::runtime::object::{managed_kind, object_key};
use crate::runtime::problem::Problem;
use crate::runtime::progress::PROVISIONING;
use crate::runtime::reconciler::{Cleanup, Reconcile, Reconciler};
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;
use plan::{Found, Step};

managed_kind!(DNSZone, "dnszone", finalizers::DNS_ZONE);

/// The Ready reason of a zone Designate could not publish.
pub const ZONE_ERROR: &str = "ZoneError";

/// The controller; a refresh of the cloud view has nothing to tell it.
pub fn run(
    ctx: Arc<Context>,
    feeds: &mut Feeds,
    woken: BoxStream<'static, ObjectRef<DNSZone>>,
) -> impl Future<Output = ()> + use<> {
    let zones = ctx.caches.current().dns_zones;
    feeds
        .dns_zones
        .controller(zones.store)
        .reconcile_on(woken)
        .run(reconcile_in_task::<DNSZone>, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
}

pub struct Services {
    dns: Arc<dyn Dns>,
}

pub struct Observed {
    found: Found,
    /// Read once the zone is served and the status has none for it.
    nameservers: Option<Vec<String>>,
}

/// What a round wrote, and the zone after it.
pub struct Outcome {
    zone: Option<DnsZone>,
    wrote: Option<(&'static str, String)>,
}

impl Reconciler for DNSZone {
    type Services = Services;
    type Observed = Observed;
    type Step = Step;
    type Outcome = Outcome;
    type Status = DnsZoneStatus;

    fn services(_: &Context, tenant: &Tenant, obj: &Self) -> Services {
        Services {
            dns: tenant.services.dns(obj.spec.region.as_deref()),
        }
    }

    fn validate(_: &Self, _: &Context) -> Result<(), ReconcileError> {
        Ok(())
    }

    fn current_status(&self) -> Option<&DnsZoneStatus> {
        self.status.as_ref()
    }

    async fn observe(reconcile: &Reconcile<Self>, _: bool) -> Result<Observed, ReconcileError> {
        let obj = &reconcile.obj;
        let key = object_key(&**obj);
        let dns = reconcile.services.dns.as_ref();
        let found = observe::find(dns, obj, &record(reconcile), &key).await?;
        let known = obj.status.as_ref().filter(|s| !s.nameservers.is_empty());
        let nameservers = match &found {
            Found::Zone(zone)
                if zone.status == "ACTIVE"
                    && known.and_then(|s| s.id.as_deref()) != Some(zone.id.as_str()) =>
            {
                let listed =
                    dns.zone_nameservers(&zone.id)
                        .await
                        .map_err(ReconcileError::cloud(
                            "list the DNS zone's name servers",
                            &key,
                        ))?;
                Some(listed)
            }
            _ => None,
        };
        Ok(Observed { found, nameservers })
    }

    fn needs_fresh_look(_: &Observed, _: &Step) -> bool {
        false
    }

    fn plan(reconcile: &Reconcile<Self>, observed: &Observed) -> Step {
        plan::plan(&reconcile.obj.spec, &observed.found, &record(reconcile))
    }

    fn while_paused(_: &Reconcile<Self>, observed: &Observed, step: &Step) -> Option<Outcome> {
        let zone = observed.found.zone().cloned();
        let would = match step {
            Step::Create(_) => "create the DNS zone",
            Step::Update(..) => "update the DNS zone",
            Step::Converged => return None,
        };
        let note = paused_message(would);
        Some(Outcome {
            zone,
            wrote: Some((PAUSED_READY, note)),
        })
    }

    async fn execute(
        reconcile: &Reconcile<Self>,
        observed: &Observed,
        step: Step,
    ) -> Result<Outcome, ReconcileError> {
        let key = object_key(&*reconcile.obj);
        let dns = reconcile.services.dns.as_ref();
        match step {
            Step::Converged => Ok(Outcome {
                zone: observed.found.zone().cloned(),
                wrote: None,
            }),
            Step::Create(create) => {
                let zone = dns.create_zone(&create).await.map_err(|e| match e.kind() {
                    ErrorKind::Conflict { .. } => taken_elsewhere(&create.name, &key),
                    _ => ReconcileError::cloud("create the DNS zone", &key)(e),
                })?;
                let note = format!("created DNS zone {} ({})", zone.name, zone.id);
                Ok(Outcome {
                    zone: Some(zone),
                    wrote: Some(("Created", note)),
                })
            }
            Step::Update(id, update) => {
                let zone = dns
                    .update_zone(&id, &update)
                    .await
                    .map_err(ReconcileError::cloud("update the DNS zone", &key))?;
                let taken_over = update.description.is_some()
                    && reconcile.obj.status.as_ref().and_then(|s| s.id.as_deref())
                        != Some(id.as_str());
                let wrote = match taken_over {
                    true => (
                        "Imported",
                        format!("took over DNS zone {} ({id})", zone.name),
                    ),
                    false => ("Updated", updated_note(&zone, &update)),
                };
                Ok(Outcome {
                    zone: Some(zone),
                    wrote: Some(wrote),
                })
            }
        }
    }

    fn status(
        reconcile: &Reconcile<Self>,
        observed: &Observed,
        outcome: &Outcome,
    ) -> DnsZoneStatus {
        let obj = &reconcile.obj;
        let mut status = obj.status.clone().unwrap_or_default();
        let zone = outcome.zone.as_ref();
        if status.id.as_deref() != zone.map(|z| z.id.as_str()) {
            status.nameservers.clear();
        }
        status.id = zone.map(|z| z.id.to_string());
        status.status = zone.map(|z| z.status.clone());
        status.serial = zone.and_then(|z| z.serial);
        if let Some(listed) = &observed.nameservers {
            status.nameservers = listed.clone();
        }
        status.observed_generation = obj.metadata.generation;
        let (ready, reason, message) = ready(&obj.spec.name, outcome);
        set_condition(
            &mut status.conditions,
            NewCondition {
                type_: READY,
                status: ready,
                reason,
                message,
            },
            obj.metadata.generation,
            reconcile.now,
        );
        status
    }

    fn events(
        reconcile: &Reconcile<Self>,
        outcome: &Outcome,
        status: &DnsZoneStatus,
    ) -> Vec<Event> {
        let mut events: Vec<Event> = outcome
            .wrote
            .iter()
            .filter(|(reason, _)| *reason != PAUSED_READY)
            .map(|(reason, note)| reconcile_event(EventType::Normal, reason, note.clone()))
            .collect();
        let before = reconcile
            .obj
            .status
            .as_ref()
            .and_then(|s| s.status.as_deref());
        if status.status.as_deref() == Some("ERROR") && before != Some("ERROR") {
            let note = error_message(&reconcile.obj.spec.name);
            events.push(reconcile_event(EventType::Warning, ZONE_ERROR, note));
        }
        events
    }

    fn gauges(_: &Context, _: &Self, _: &DnsZoneStatus) {}

    fn requeue(reconcile: &Reconcile<Self>, outcome: &Outcome, _: &DnsZoneStatus) -> Duration {
        let settling =
            outcome.wrote.is_some() || outcome.zone.as_ref().is_some_and(DnsZone::is_pending);
        match settling {
            true => POLL,
            false => reconcile.ctx.timing.resync,
        }
    }

    async fn cleanup(
        obj: Arc<Self>,
        ctx: Arc<Context>,
        removal: Removal,
    ) -> Result<Cleanup, ReconcileError> {
        removal::cleanup(obj, ctx, removal).await
    }
}

/// The owner record a zone made for this object carries in its description.
fn record(reconcile: &Reconcile<DNSZone>) -> String {
    port_record(&reconcile.owner.uid, None, &reconcile.ctx.cluster)
}

/// Designate refused the create: the name is a zone of another project.
fn taken_elsewhere(name: &str, key: &str) -> ReconcileError {
    ReconcileError::Invalid {
        object: key.to_owned(),
        problem: Problem::ZoneOwnedByAnother,
        message: format!(
            "Designate refused to create DNS zone {name}: it exists in another project (zone names are unique across the cloud); name another zone, or ask that project's owners for it"
        ),
    }
}

fn updated_note(zone: &DnsZone, update: &crate::cloud::model::dns::UpdateZone) -> String {
    let mut set = Vec::new();
    if let Some(email) = &update.email {
        set.push(format!("email {email}"));
    }
    if let Some(ttl) = update.ttl {
        set.push(format!("ttl {ttl}"));
    }
    if update.description.is_some() {
        set.push("the owner record".to_owned());
    }
    format!("set {} of DNS zone {}", set.join(", "), zone.name)
}

fn error_message(name: &str) -> String {
    format!(
        "Designate could not publish DNS zone {name} to its name servers (status ERROR); ask the cloud's operators to look at the zone, then edit the DNSZone or wait for the next resync"
    )
}

/// The Ready condition: True once Designate serves the zone as declared.
fn ready(name: &str, outcome: &Outcome) -> (Status, &'static str, String) {
    if let Some((_, note)) = outcome.wrote.as_ref().filter(|(r, _)| *r == PAUSED_READY) {
        return (Status::False, PAUSED_READY, note.clone());
    }
    match outcome.zone.as_ref() {
        None => (
            Status::False,
            PROVISIONING,
            format!("DNS zone {name} is being created"),
        ),
        Some(zone) if zone.is_failed() => (Status::False, ZONE_ERROR, error_message(name)),
        Some(zone) if zone.is_pending() || outcome.wrote.is_some() => (
            Status::False,
            PROVISIONING,
            format!(
                "Designate is publishing DNS zone {name} ({}) to its name servers",
                zone.action.to_lowercase()
            ),
        ),
        Some(zone) => (
            Status::True,
            "Active",
            format!(
                "Designate serves DNS zone {name} (serial {})",
                zone.serial.unwrap_or_default()
            ),
        ),
    }
}
