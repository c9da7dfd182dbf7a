//! The SecurityGroup controller: a Neutron security group of the project made for the
//! object (or taken over with `spec.import`), its rules kept as declared, and one
//! Neutron address group per VirtualMachineGroup its rules take addresses from, kept
//! in step with the replicas' addresses: a scale, a replacement or autohealing changes
//! an address group, never a rule, and never a server.
//!
//! Its [`Reconciler`]: `observe` (the group with its rules, the address groups, the
//! replicas' addresses from the watch cache, the peers) → `plan` (pure: one kind of
//! write) → `execute` → `status`. A VirtualMachine naming the SecurityGroup waits
//! until it is Ready (`virtual_machine::references`) and is woken when it is.

mod execute;
mod observe;
pub mod plan;
mod removal;
pub mod rules;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::ResourceExt;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use verda_api::conditions::{NewCondition, READY, Status, set_condition};
use verda_api::v1alpha1::{
    AddressGroupStatus, RuleStatus, SecurityGroup, SecurityGroupStatus, VirtualMachine, finalizers,
    labels,
};

use crate::caches::cloud_view::ProjectView;
use crate::caches::watch::Feeds;
use crate::caches::watch::index::group_key;
use crate::cloud::model::firewall::Firewall;
use crate::cloud::owner::port_record;
use crate::cloud::{Firewalls, LoadBalancing, Network};
use crate::controllers::dns_records::POLL;
use crate::runtime::driver::{error_policy, reconcile_in_task};
use crate::runtime::events::reconcile_event;
use crate::runtime::lifecycle::{PAUSED_READY, Removal, paused_message};
use crate::runtime::object::{managed_kind, object_key};
use crate::runtime::progress::PROVISIONING;
use crate::runtime::reconciler::{Cleanup, Reconcile, Reconciler};
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;
use plan::{Held, Seen, Step};

managed_kind!(SecurityGroup, "securitygroup", finalizers::SECURITY_GROUP);

/// How long a SecurityGroup's triggers are gathered before its round starts.
const DEBOUNCE: Duration = Duration::from_secs(1);

/// The Ready reason while a rule's peer (a SecurityGroup, a LoadBalancer) is not known.
pub const PEER_NOT_READY: &str = "PeerNotReady";

/// The controller: woken by its objects, by the replicas of the groups their rules
/// name whenever their addresses change, and by credentials changes.
pub fn run(
    ctx: Arc<Context>,
    feeds: &mut Feeds,
    woken: BoxStream<'static, ObjectRef<SecurityGroup>>,
) -> impl Future<Output = ()> + use<> {
    let groups = ctx.caches.current().security_groups;
    let by_vm = groups.clone();
    let seen = Mutex::new(HashMap::new());
    feeds
        .security_groups
        .controller(groups.store)
        .watches_shared_stream(feeds.virtual_machines.unpacked(), move |vm| {
            if !addresses_changed(&seen, &vm) {
                return Vec::new();
            }
            let Some(group) = vm.labels().get(labels::GROUP) else {
                return Vec::new();
            };
            let namespace = vm.namespace().unwrap_or_default();
            let found = by_vm.with_key_now(&namespace, &group_key(group));
            found.iter().map(|sg| ObjectRef::from_obj(&**sg)).collect()
        })
        .reconcile_on(woken)
        // A group's replicas get their addresses within moments of each other: one
        // round (and one address group write) takes a burst of them.
        .with_config(kube::runtime::controller::Config::default().debounce(DEBOUNCE))
        .run(reconcile_in_task::<SecurityGroup>, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
}

/// Whether a group's VirtualMachine came, went or changed its addresses since last seen.
fn addresses_changed(seen: &Mutex<HashMap<String, Vec<String>>>, vm: &VirtualMachine) -> bool {
    if !vm.labels().contains_key(labels::GROUP) {
        return false;
    }
    let now: Vec<String> = observe::replica_addresses([vm]).into_iter().collect();
    let key = object_key(vm);
    let mut seen = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if vm.metadata.deletion_timestamp.is_some() {
        return seen.remove(&key).is_some();
    }
    seen.insert(key, now.clone()) != Some(now)
}

pub struct Services {
    firewalls: Arc<dyn Firewalls>,
    /// The project's shared listing of its security groups.
    view: Arc<ProjectView>,
    region: Option<String>,
    network: Arc<dyn Network>,
    load_balancing: Arc<dyn LoadBalancing>,
}

/// What a round wrote, and Neutron's group after it.
pub struct Outcome {
    firewall: Option<Firewall>,
    held: Vec<Held>,
    wrote: Option<(&'static str, String)>,
}

impl Reconciler for SecurityGroup {
    type Services = Services;
    type Observed = Seen;
    type Step = Step;
    type Outcome = Outcome;
    type Status = SecurityGroupStatus;

    fn services(ctx: &Context, tenant: &Tenant, obj: &Self) -> Services {
        let region = obj.spec.region.as_deref();
        Services {
            firewalls: tenant.services.firewalls(region),
            view: ctx.view.of(tenant),
            region: obj.spec.region.clone(),
            network: tenant.services.network(region),
            load_balancing: tenant.services.load_balancing(region),
        }
    }

    fn validate(_: &Self, _: &Context) -> Result<(), ReconcileError> {
        Ok(())
    }

    fn current_status(&self) -> Option<&SecurityGroupStatus> {
        self.status.as_ref()
    }

    async fn observe(reconcile: &Reconcile<Self>, _: bool) -> Result<Seen, ReconcileError> {
        let obj = &reconcile.obj;
        let caches = reconcile.ctx.caches.current();
        let key = object_key(&**obj);
        let record = record(reconcile);
        let look = (record.as_str(), reconcile.ctx.timing.resync);
        observe::seen(&reconcile.services, &caches, obj, look, &key).await
    }

    fn needs_fresh_look(_: &Seen, _: &Step) -> bool {
        false
    }

    fn plan(reconcile: &Reconcile<Self>, seen: &Seen) -> Step {
        let obj = &reconcile.obj;
        plan::plan(&obj.spec, &obj.name_any(), seen, &record(reconcile))
    }

    fn while_paused(_: &Reconcile<Self>, seen: &Seen, step: &Step) -> Option<Outcome> {
        let would = match step {
            Step::Create(_) => "create the security group",
            Step::Describe { .. } => "write the owner record on the security group",
            Step::AddressGroups(_) => "change the address groups",
            Step::Rules { .. } => "change the rules",
            Step::DropAddressGroups(_) => "delete address groups no rule names",
            Step::Converged => return None,
        };
        Some(Outcome {
            firewall: seen.firewall.clone(),
            held: seen.held.clone(),
            wrote: Some((PAUSED_READY, paused_message(would))),
        })
    }

    async fn execute(
        reconcile: &Reconcile<Self>,
        seen: &Seen,
        step: Step,
    ) -> Result<Outcome, ReconcileError> {
        execute::execute(reconcile, seen, step).await
    }

    fn status(reconcile: &Reconcile<Self>, seen: &Seen, outcome: &Outcome) -> SecurityGroupStatus {
        let obj = &reconcile.obj;
        let mut status = obj.status.clone().unwrap_or_default();
        status.id = outcome.firewall.as_ref().map(|f| f.id.clone());
        let after = Seen {
            firewall: outcome.firewall.clone(),
            held: outcome.held.clone(),
            ..seen.clone()
        };
        let peers = plan::peers(&after, &obj.name_any());
        let wanted = rules::desired(&obj.spec, &peers);
        status.rules = rule_statuses(&obj.name_any(), &wanted, outcome);
        status.address_groups = outcome
            .held
            .iter()
            .map(|h| AddressGroupStatus {
                virtual_machine_group: h.group.clone(),
                id: h.id.clone(),
                addresses: h.addresses.clone(),
            })
            .collect();
        status.observed_generation = obj.metadata.generation;
        let (ready, reason, message) = ready(&obj.name_any(), outcome, &wanted.waiting);
        let condition = NewCondition {
            type_: READY,
            status: ready,
            reason,
            message,
        };
        set_condition(
            &mut status.conditions,
            condition,
            obj.metadata.generation,
            reconcile.now,
        );
        status
    }

    fn events(_: &Reconcile<Self>, outcome: &Outcome, _: &SecurityGroupStatus) -> Vec<Event> {
        outcome
            .wrote
            .iter()
            .filter(|(reason, _)| *reason != PAUSED_READY)
            .map(|(reason, note)| reconcile_event(EventType::Normal, reason, note.clone()))
            .collect()
    }

    fn gauges(_: &Context, _: &Self, _: &SecurityGroupStatus) {}

    fn requeue(
        reconcile: &Reconcile<Self>,
        outcome: &Outcome,
        status: &SecurityGroupStatus,
    ) -> Duration {
        let ready = verda_api::conditions::is_true(&status.conditions, READY);
        match outcome.wrote.is_some() || !ready {
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

/// The declared rules as Neutron reads them, with the IDs of those it has.
fn rule_statuses(name: &str, wanted: &rules::Desired, outcome: &Outcome) -> Vec<RuleStatus> {
    let names: BTreeMap<String, String> = outcome
        .held
        .iter()
        .map(|h| (h.id.clone(), plan::address_group_name(name, &h.group)))
        .collect();
    let have: Vec<_> = outcome
        .firewall
        .iter()
        .flat_map(|f| &f.security_group_rules)
        .collect();
    wanted
        .rules
        .iter()
        .filter(|w| w.index.is_some())
        .map(|w| RuleStatus {
            rule: rules::describe(&w.shape, &names),
            id: have
                .iter()
                .find(|r| r.shape() == w.shape)
                .map(|r| r.id.clone()),
        })
        .collect()
}

/// The owner record the object's Neutron group and address groups carry.
fn record(reconcile: &Reconcile<SecurityGroup>) -> String {
    port_record(&reconcile.owner.uid, None, &reconcile.ctx.cluster)
}

fn record_of(ctx: &Context, obj: &SecurityGroup) -> String {
    port_record(&ctx.owner_of(obj).uid, None, &ctx.cluster)
}

/// The Ready condition: True once Neutron has every declared rule.
fn ready(name: &str, outcome: &Outcome, waiting: &[String]) -> (Status, &'static str, String) {
    if let Some((_, note)) = outcome.wrote.as_ref().filter(|(r, _)| *r == PAUSED_READY) {
        return (Status::False, PAUSED_READY, note.clone());
    }
    let Some(firewall) = &outcome.firewall else {
        return (
            Status::False,
            PROVISIONING,
            format!("security group {name} is being created"),
        );
    };
    if !waiting.is_empty() {
        let message = format!(
            "security group {name} ({}) waits to write {}; the rule is written once its peer is known",
            firewall.id,
            waiting.join("; ")
        );
        return (Status::False, PEER_NOT_READY, message);
    }
    if outcome.wrote.is_some() {
        let message = format!(
            "Neutron is taking the rules of security group {name} ({})",
            firewall.id
        );
        return (Status::False, PROVISIONING, message);
    }
    (
        Status::True,
        "Active",
        format!(
            "Neutron has security group {name} ({}) with every declared rule",
            firewall.id
        ),
    )
}
