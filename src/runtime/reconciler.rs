//! The one shape of the three controllers. The driver takes a live object through
//! validate → observe → plan → execute → status; each kind says what those mean for it, and
//! nothing else: the finalizer, credentials, pausing, progress conditions, the status
//! write, the metrics and the events are the driver's, written once.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::events::Event;
use serde::Serialize;
use verda_api::v1alpha1::{
    DnsZoneStatus, LoadBalancerStatus, ReconcilePolicy, SecurityGroupStatus,
    VirtualMachineGroupStatus, VirtualMachineStatus,
};

use crate::cloud::owner::Owner;
use crate::runtime::events::publish_event;
use crate::runtime::lifecycle::Removal;
use crate::runtime::object::{Managed, object_labels};
use crate::runtime::progress;
use crate::runtime::status_patch::write_status;
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;

/// What a cleanup step found.
#[derive(Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Every cloud resource is gone: the finalizer may go.
    Done,
    /// The cloud is still deleting: look again after this long.
    Wait(Duration),
}

/// One reconcile's fixed inputs: the object, whose credentials it acts with, what its
/// policy lets it do, the cloud services its kind talks to, and one clock reading.
pub struct Reconcile<K: Reconciler> {
    pub obj: Arc<K>,
    pub ctx: Arc<Context>,
    pub tenant: Tenant,
    pub policy: ReconcilePolicy,
    pub owner: Owner,
    pub services: K::Services,
    pub now: Timestamp,
}

/// What every kind's status has: conditions the driver summarises and the project it
/// records.
pub trait ObjectStatus: PartialEq + Serialize + Send + Sync {
    fn conditions(&self) -> &[Condition];
    fn conditions_mut(&mut self) -> &mut Vec<Condition>;
    fn set_project(&mut self, project: String);
}

macro_rules! object_status {
    ($($status:ty),*) => {$(
        impl ObjectStatus for $status {
            fn conditions(&self) -> &[Condition] {
                &self.conditions
            }

            fn conditions_mut(&mut self) -> &mut Vec<Condition> {
                &mut self.conditions
            }

            fn set_project(&mut self, project: String) {
                self.project_id = Some(project);
            }
        }
    )*};
}
object_status!(
    VirtualMachineStatus,
    VirtualMachineGroupStatus,
    LoadBalancerStatus,
    DnsZoneStatus,
    SecurityGroupStatus
);

/// A controller, as the driver runs it.
pub trait Reconciler: Managed {
    /// The cloud services (and the project's cloud view) this kind talks to.
    type Services: Send + Sync;
    /// What `observe` found.
    type Observed: Send + Sync;
    /// The next thing to do, decided by `plan` alone.
    type Step: Send + Sync;
    /// What `execute` did.
    type Outcome: Send + Sync;
    type Status: ObjectStatus;

    fn services(ctx: &Context, tenant: &Tenant, obj: &Self) -> Self::Services;

    /// What is wrong with the spec, found without any I/O: reported before anything
    /// is read or written, and on every edit.
    fn validate(obj: &Self, ctx: &Context) -> Result<(), ReconcileError>;

    /// The status as last written.
    fn current_status(&self) -> Option<&Self::Status>;

    /// Reads the cloud and the caches; from the shared cloud view when `use_view` and
    /// it answers for the object.
    fn observe(
        reconcile: &Reconcile<Self>,
        use_view: bool,
    ) -> impl Future<Output = Result<Self::Observed, ReconcileError>> + Send;

    /// Whether `step` must not be taken on the word of the cloud view: the driver then
    /// observes the cloud itself and plans again (a stale view must never create).
    fn needs_fresh_look(observed: &Self::Observed, step: &Self::Step) -> bool;

    /// The next step. Pure.
    fn plan(reconcile: &Reconcile<Self>, observed: &Self::Observed) -> Self::Step;

    /// What a paused object (reconcile policy `skip`) reports instead of carrying `step`
    /// out, when the step would write to the cloud: what it would do. `None`: the step is
    /// taken as it would be otherwise. Pure; the runtime asks only while paused.
    fn while_paused(
        reconcile: &Reconcile<Self>,
        observed: &Self::Observed,
        step: &Self::Step,
    ) -> Option<Self::Outcome>;

    /// Carries `step` out: the cloud and Kubernetes writes.
    fn execute(
        reconcile: &Reconcile<Self>,
        observed: &Self::Observed,
        step: Self::Step,
    ) -> impl Future<Output = Result<Self::Outcome, ReconcileError>> + Send;

    /// The status the outcome means, without the progress conditions and the project
    /// (the driver adds those). Pure.
    fn status(
        reconcile: &Reconcile<Self>,
        observed: &Self::Observed,
        outcome: &Self::Outcome,
    ) -> Self::Status;

    /// The events the outcome and the new status have to tell, once written.
    fn events(
        reconcile: &Reconcile<Self>,
        outcome: &Self::Outcome,
        status: &Self::Status,
    ) -> Vec<Event>;

    /// The kind's own gauges (the condition series are the driver's).
    fn gauges(ctx: &Context, obj: &Self, status: &Self::Status);

    /// When to look again.
    fn requeue(
        reconcile: &Reconcile<Self>,
        outcome: &Self::Outcome,
        status: &Self::Status,
    ) -> Duration;

    /// Removes (or detaches, or leaves) the object's cloud resources once it is being
    /// deleted.
    fn cleanup(
        obj: Arc<Self>,
        ctx: Arc<Context>,
        removal: Removal,
    ) -> impl Future<Output = Result<Cleanup, ReconcileError>> + Send;
}

/// Takes a live object one step closer to its spec and writes what that means.
pub async fn converge<K: Reconciler>(
    obj: Arc<K>,
    ctx: Arc<Context>,
    tenant: Tenant,
    policy: ReconcilePolicy,
) -> Result<Action, ReconcileError> {
    K::validate(&obj, &ctx)?;
    let reconcile = Reconcile {
        owner: ctx.owner_of(&*obj),
        services: K::services(&ctx, &tenant, &obj),
        now: Timestamp::now(),
        obj,
        ctx,
        tenant,
        policy,
    };
    // Boxed, as in the driver: a reconcile in flight holds the phase it is in.
    let mut observed = Box::pin(K::observe(&reconcile, true)).await?;
    let mut step = K::plan(&reconcile, &observed);
    if K::needs_fresh_look(&observed, &step) {
        observed = Box::pin(K::observe(&reconcile, false)).await?;
        step = K::plan(&reconcile, &observed);
    }
    // Paused: the runtime holds every step that would write, whatever the kind.
    let held = match policy.writes() {
        true => None,
        false => K::while_paused(&reconcile, &observed, &step),
    };
    let outcome = match held {
        Some(outcome) => outcome,
        None => Box::pin(K::execute(&reconcile, &observed, step)).await?,
    };
    let mut status = K::status(&reconcile, &observed, &outcome);
    status.set_project(reconcile.tenant.project.clone());
    let generation = reconcile.obj.meta().generation;
    progress::summarise(status.conditions_mut(), policy, generation, reconcile.now);
    let (obj, ctx) = (&*reconcile.obj, &*reconcile.ctx);
    if obj.current_status() != Some(&status) {
        Box::pin(write_status(&ctx.client, obj, &status)).await?;
    }
    if ctx.metrics.following() {
        let labels = object_labels(obj);
        let conditions = Some(status.conditions());
        ctx.metrics
            .set_object_conditions(K::CONTROLLER, &labels, conditions);
        K::gauges(ctx, obj, &status);
    }
    for event in K::events(&reconcile, &outcome, &status) {
        Box::pin(publish_event(&ctx.recorder, obj, event)).await;
    }
    Ok(Action::requeue(K::requeue(&reconcile, &outcome, &status)))
}
