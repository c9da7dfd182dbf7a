//! The frame around every reconcile: the finalizer, metrics, and reporting a failure on
//! the object (Ready=False with the error's category, a Warning event) exactly once per
//! change, so a failing object neither hides its cause nor floods `kubectl describe`.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use serde_json::json;
use verda_api::conditions::{NewCondition, READY, Status, set_condition};
use verda_api::v1alpha1::ReconcilePolicy;

use crate::caches::watch::index::Keyed;
use crate::caches::watch::packed::Packed;
use crate::cloud::write_log;
use crate::metrics::{ControllerLabels, ReconcileLabels};
use crate::runtime::backoff;
use crate::runtime::context::Context;
use crate::runtime::error::ReconcileError;
use crate::runtime::events::publish;
use crate::runtime::lifecycle::{Removal, policy_of};
use crate::runtime::object::{Managed, object_key, object_labels};
use crate::runtime::progress;
use crate::runtime::reconcile_task::ReconcileTask;
use crate::runtime::reconciler::{Cleanup, Reconciler, converge};
use crate::tenancy::Tenant;

/// [`reconcile`] as a task of its own: what the controllers run (see [`ReconcileTask`]).
/// Only for an object of a namespace this replica reconciles now (`Assignment::admit`); the
/// reconcile stops where it is if the namespace's term is closed under it.
pub fn reconcile_in_task<K: Reconciler>(
    obj: Arc<K>,
    ctx: Arc<Context>,
) -> ReconcileTask<Result<Action, ReconcileError>> {
    let Some(mut admission) = ctx
        .reach
        .assignment
        .admit(&obj.namespace().unwrap_or_default())
    else {
        // Another replica's namespace: its owner reconciles the object, and it comes
        // back here only with the namespace, listed anew.
        return ReconcileTask::spawn(async { Ok(Action::await_change()) });
    };
    ReconcileTask::spawn(async move {
        let key = object_key(&*obj);
        let reconcile = Box::pin(reconcile(obj, ctx));
        let (result, writes) = write_log::recording(async {
            tokio::select! {
                result = reconcile => result,
                () = admission.revoked() => Ok(Action::await_change()),
            }
        })
        .await;
        if let Some((first_sent_ms, last_done_ms)) = writes.span_ms() {
            tracing::debug!(
                target: "verda_operator::cloud_writes",
                controller = K::CONTROLLER,
                object = %key,
                writes = writes.count,
                first_sent_ms = first_sent_ms as u64,
                last_done_ms = last_done_ms as u64,
                "cloud writes of one reconcile"
            );
        }
        result
    })
}

/// [`reconcile_in_task`] of an object its store holds [`Packed`], decoded first.
pub fn reconcile_packed<K: Reconciler + Keyed>(
    packed: Arc<Packed<K>>,
    ctx: Arc<Context>,
) -> ReconcileTask<Result<Action, ReconcileError>> {
    match packed.unpack() {
        Ok(obj) => reconcile_in_task(Arc::new(obj), ctx),
        Err(error) => {
            // Only a defect leaves a store's copy unreadable; the next change of the
            // object replaces it.
            tracing::error!(
                controller = K::CONTROLLER,
                retry_in_ms = UNREADABLE_RETRY.as_millis() as u64,
                "{error}; not reconciled until it changes or the retry"
            );
            ReconcileTask::spawn(async { Ok(Action::requeue(UNREADABLE_RETRY)) })
        }
    }
}

/// When an object whose stored copy did not decode is tried again.
const UNREADABLE_RETRY: std::time::Duration = std::time::Duration::from_secs(60);

/// Reconciles `obj`: [`converge`] while it lives, its kind's cleanup once it is being
/// deleted, inside the finalizer protocol; records metrics and reports failures on the
/// object. The reconcile policy, read once here, decides what either may do.
pub async fn reconcile<K: Reconciler>(
    obj: Arc<K>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    let key = object_key(&*obj);
    let backoff_key = backoff::key_of(&*obj);
    let generation = obj.meta().generation;
    let releases = ctx.backoff.releases_of(&backoff_key);
    if obj.meta().deletion_timestamp.is_none()
        && let Some(left) = ctx.backoff.held(&backoff_key, generation)
    {
        // Woken (by its own failure's status write, say) before the retry of a refusal
        // that does not heal by itself: nothing to send yet.
        return Ok(Action::requeue(left));
    }
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &obj.namespace().unwrap_or_default());
    // Every await below is boxed: thousands of reconciles wait at once at fleet size,
    // and each then holds the step it waits in, not room for the largest.
    let result = match policy_of(&*obj) {
        Err(e) => Err(e),
        Ok(policy) if obj.meta().deletion_timestamp.is_some() => {
            Box::pin(run_cleanup(&api, obj.clone(), ctx.clone(), policy)).await
        }
        Ok(policy) => {
            ctx.metrics
                .set_paused(K::CONTROLLER, &key, !policy.writes());
            match Box::pin(ensure_finalizer(&api, &*obj)).await {
                // A newer copy is on its way, with an event of its own.
                Ok(false) => Ok(Action::await_change()),
                Ok(true) => match Box::pin(tenant_of(&api, &*obj, &ctx, false)).await {
                    Ok(tenant) => {
                        Box::pin(converge(obj.clone(), ctx.clone(), tenant, policy)).await
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            }
        }
    };
    let outcome = match &result {
        Ok(_) => {
            ctx.backoff.reset(&backoff_key);
            "success"
        }
        Err(error) => {
            hold_if_refused(&ctx, (&backoff_key, generation, releases), error);
            Box::pin(report_failure(&api, &*obj, &ctx, error)).await;
            error.category()
        }
    };
    count_reconcile(&ctx, K::CONTROLLER, outcome, started);
    result
}

/// Holds the failed generation until its retry when the cloud refused it for good,
/// unless the namespace's credentials changed since the reconcile began (`releases`
/// then differs): the refusal may be the replaced credentials'.
fn hold_if_refused(
    ctx: &Context,
    (key, generation, releases): (&str, Option<i64>, u64),
    error: &ReconcileError,
) {
    if let ReconcileError::Cloud { source, .. } = error
        && source.is_terminal()
    {
        let retry_after = source.retry_after();
        ctx.backoff
            .hold_unless_released(key, generation, retry_after, releases);
    }
}

fn count_reconcile(
    ctx: &Context,
    controller: &'static str,
    outcome: &'static str,
    started: Instant,
) {
    ctx.metrics
        .reconciles
        .get_or_create(&ReconcileLabels {
            controller,
            result: outcome,
        })
        .inc();
    ctx.metrics
        .reconcile_duration
        .get_or_create(&ControllerLabels { controller })
        .observe(started.elapsed().as_secs_f64());
}

/// The controller's error policy: slow for terminal errors, jittered exponential
/// backoff otherwise, never sooner than the cloud's Retry-After.
pub fn error_policy<K: Managed>(obj: Arc<K>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    retry_after::<K>(&object_key(&*obj), error, &ctx)
}

/// [`error_policy`] of an object its store holds [`Packed`].
pub fn packed_error_policy<K: Managed>(
    packed: Arc<Packed<K>>,
    error: &ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    retry_after::<K>(&object_key(&*packed), error, &ctx)
}

fn retry_after<K: Managed>(object: &str, error: &ReconcileError, ctx: &Context) -> Action {
    let key = backoff::key_named::<K>(object);
    let delay = ctx
        .backoff
        .next(&key, error.is_terminal(), error.retry_after());
    tracing::warn!(
        controller = K::CONTROLLER,
        object,
        category = error.category(),
        retry_in_ms = delay.as_millis() as u64,
        "{error}"
    );
    Action::requeue(delay)
}

async fn run_cleanup<K: Reconciler>(
    api: &Api<K>,
    obj: Arc<K>,
    ctx: Arc<Context>,
    policy: ReconcilePolicy,
) -> Result<Action, ReconcileError> {
    if !obj.finalizers().iter().any(|f| f == K::FINALIZER) {
        return Ok(Action::await_change());
    }
    let resolved = match policy {
        // Nothing will be written: the credentials are not needed either.
        ReconcilePolicy::Skip => Ok(Removal::Abandon),
        ReconcilePolicy::DetachOnDelete => {
            tenant_of(api, &*obj, &ctx, true).await.map(Removal::Detach)
        }
        ReconcilePolicy::Manage => tenant_of(api, &*obj, &ctx, true).await.map(Removal::Delete),
    };
    let done = match resolved {
        Ok(removal) => K::cleanup(obj.clone(), ctx, removal).await?,
        // The project is recorded before anything is created: an object that recorded
        // none and has no usable credentials (none, unreadable, refused) created
        // nothing, and goes without a cloud call.
        Err(ReconcileError::Credentials { .. }) if obj.recorded_project().is_none() => {
            Cleanup::Done
        }
        Err(e) => return Err(e),
    };
    match done {
        Cleanup::Wait(after) => Ok(Action::requeue(after)),
        Cleanup::Done => {
            let remaining: Vec<&String> = obj
                .finalizers()
                .iter()
                .filter(|f| *f != K::FINALIZER)
                .collect();
            match patch_finalizers(api, &*obj, json!(remaining), "remove the finalizer").await {
                // Already gone: a reconcile of a store copy a moment older than the
                // deletion removed the finalizer first.
                Err(ReconcileError::Kube { source, .. })
                    if crate::kube_error::api_code(&source) == Some(404) => {}
                // Removed, or the copy was stale: the newer one is cleaned up again
                // (cleanup is idempotent) and removes it then.
                removed => drop(removed?),
            }
            Ok(Action::await_change())
        }
    }
}

/// The credentials `obj` acts with, refused when they act in another project than the
/// one its status records. The project is recorded before anything is created (not
/// while deleting: an object that recorded none created nothing with these
/// credentials' project in mind).
async fn tenant_of<K: Managed>(
    api: &Api<K>,
    obj: &K,
    ctx: &Context,
    deleting: bool,
) -> Result<Tenant, ReconcileError> {
    let object = object_key(obj);
    let tenant = ctx
        .tenancy
        .resolve(&obj.namespace().unwrap_or_default(), obj.credentials_ref())
        .await
        .map_err(|source| ReconcileError::Credentials {
            object: object.clone(),
            source,
            deleting,
        })?;
    match obj.recorded_project() {
        Some(recorded) if recorded != tenant.project => Err(ReconcileError::ProjectChanged {
            object,
            recorded: recorded.to_owned(),
            now: tenant.project,
            origin: tenant.origin,
        }),
        None if !deleting => {
            let patch = json!({"status": {"projectID": tenant.project}});
            api.patch_status(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(ReconcileError::kube("record the project", &object))?;
            Ok(tenant)
        }
        _ => Ok(tenant),
    }
}

/// Adds our finalizer when missing, so no cloud resource is ever created for an object
/// that could vanish without cleanup; false when `obj` was a stale copy.
async fn ensure_finalizer<K: Managed>(api: &Api<K>, obj: &K) -> Result<bool, ReconcileError> {
    if obj.finalizers().iter().any(|f| f == K::FINALIZER) {
        return Ok(true);
    }
    let mut finalizers = obj.finalizers().to_vec();
    finalizers.push(K::FINALIZER.to_owned());
    patch_finalizers(api, obj, json!(finalizers), "add the finalizer").await
}

/// Sets `metadata.finalizers` on the copy `obj` is: a merge patch carrying its
/// resourceVersion, a precondition the API server checks (409 Conflict when the object
/// changed since), so a concurrent change is never overwritten. False on a conflict: the
/// newer copy comes with its own event. (A JSON patch `test` of the resourceVersion
/// fails as 422 Invalid instead, which reads as a refusal that does not heal.)
async fn patch_finalizers<K: Managed>(
    api: &Api<K>,
    obj: &K,
    finalizers: serde_json::Value,
    action: &'static str,
) -> Result<bool, ReconcileError> {
    let patch = json!({"metadata": {
        "resourceVersion": obj.resource_version(),
        "finalizers": finalizers,
    }});
    match api
        .patch(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if crate::kube_error::api_code(&e) == Some(409) => Ok(false),
        Err(e) => Err(ReconcileError::kube(action, &object_key(obj))(e)),
    }
}

/// Ready=False with the error's category, plus a Warning event when that is news.
async fn report_failure<K: Managed>(api: &Api<K>, obj: &K, ctx: &Context, error: &ReconcileError) {
    let mut conditions = obj.conditions().to_vec();
    let (now, terminal) = (Timestamp::now(), error.is_terminal());
    set_condition(
        &mut conditions,
        NewCondition {
            type_: READY,
            status: Status::False,
            reason: error.category(),
            message: error.to_string(),
        },
        obj.meta().generation,
        now,
    );
    progress::derive(&mut conditions, terminal, obj.meta().generation, now);
    if ctx.metrics.following() {
        ctx.metrics
            .set_object_conditions(K::CONTROLLER, &object_labels(obj), Some(&conditions));
    }
    // A terminal failure is the operator's last word on this generation (kstatus and
    // Argo CD read Stalled as settled only with observedGeneration current); after a
    // transient one the generation is still being worked on, so it stays behind.
    let generation = if terminal {
        obj.meta().generation
    } else {
        obj.observed_generation()
    };
    let changed = conditions != obj.conditions() || obj.observed_generation() != generation;
    if !changed
        || obj.meta().deletion_timestamp.is_some() && matches!(error, ReconcileError::Kube { .. })
    {
        return;
    }
    let patch = json!({"status": {"conditions": conditions, "observedGeneration": generation}});
    if let Err(e) = api
        .patch_status(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        tracing::debug!(error = %crate::kube_error::describe(&e), "could not record the failure in status");
    }
    publish(
        &ctx.recorder,
        obj,
        EventType::Warning,
        error.category(),
        error.to_string(),
        "Reconcile",
    )
    .await;
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
