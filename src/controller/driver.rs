//! The frame around every reconcile: the finalizer, metrics, and reporting a failure on
//! the object (Ready=False with the error's category, a Warning event) exactly once per
//! change, so a failing object neither hides its cause nor floods `kubectl describe`.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use verda_api::conditions::{NewCondition, READY, Status, set_condition};
use verda_api::v1alpha1::{CloudCredentialsRef, ReconcilePolicy};

use super::context::Context;
use super::error::ReconcileError;
use super::lifecycle::{Removal, policy_of};
use super::progress;
use super::tenancy::Tenant;
use crate::metrics::{ControllerLabels, ReconcileLabels};

/// A kind the operator manages.
pub trait Managed:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// Controller name: metric label and log field.
    const CONTROLLER: &'static str;
    /// The published finalizer name.
    const FINALIZER: &'static str;
    fn conditions(&self) -> &[Condition];
    /// The Secret the object's credentials come from, if it names one.
    fn credentials_ref(&self) -> Option<&CloudCredentialsRef>;
    /// The project its status records its cloud resources in.
    fn recorded_project(&self) -> Option<&str>;
    /// The generation its status was last written for.
    fn observed_generation(&self) -> Option<i64>;
}

/// Implements [`Managed`] for a kind whose spec has `cloud_credentials_ref` and whose
/// status has `conditions` and `project_id` (all three do).
macro_rules! managed_kind {
    ($kind:ty, $controller:literal, $finalizer:expr) => {
        impl $crate::controller::driver::Managed for $kind {
            const CONTROLLER: &'static str = $controller;
            const FINALIZER: &'static str = $finalizer;

            fn conditions(&self) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
                self.status
                    .as_ref()
                    .map(|s| s.conditions.as_slice())
                    .unwrap_or_default()
            }

            fn credentials_ref(&self) -> Option<&verda_api::v1alpha1::CloudCredentialsRef> {
                self.spec.cloud_credentials_ref.as_ref()
            }

            fn recorded_project(&self) -> Option<&str> {
                self.status.as_ref()?.project_id.as_deref()
            }

            fn observed_generation(&self) -> Option<i64> {
                self.status.as_ref()?.observed_generation
            }
        }
    };
}
pub(crate) use managed_kind;

/// What a cleanup step found.
#[derive(Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Every cloud resource is gone: the finalizer may go.
    Done,
    /// The cloud is still deleting: look again after this long.
    Wait(Duration),
}

/// The owner record (UID, namespace, name) of `obj`'s cloud resources.
pub fn owner_of<K: Resource>(obj: &K) -> crate::cloud::owner::Owner {
    crate::cloud::owner::Owner::new(
        obj.uid().unwrap_or_default(),
        obj.namespace().unwrap_or_default(),
        obj.name_any(),
    )
}

/// The labels of `obj`'s per-object gauges.
pub fn object_labels<K: Resource>(obj: &K) -> crate::metrics::ObjectLabels {
    crate::metrics::ObjectLabels {
        namespace: obj.namespace().unwrap_or_default(),
        name: obj.name_any(),
    }
}

/// `namespace/name` of an object.
pub fn object_key<K: Resource>(obj: &K) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

/// Runs `apply` (or `cleanup` once the object is being deleted) inside the finalizer
/// protocol, records metrics and reports failures on the object. The reconcile policy,
/// read once here, is passed to `apply` and decides what `cleanup` is asked to do.
pub async fn reconcile_with<K, A, AF, C, CF>(
    obj: Arc<K>,
    ctx: Arc<Context>,
    apply: A,
    cleanup: C,
) -> Result<Action, ReconcileError>
where
    K: Managed,
    A: FnOnce(Arc<K>, Arc<Context>, Tenant, ReconcilePolicy) -> AF,
    AF: Future<Output = Result<Action, ReconcileError>>,
    C: FnOnce(Arc<K>, Arc<Context>, Removal) -> CF,
    CF: Future<Output = Result<Cleanup, ReconcileError>>,
{
    let started = Instant::now();
    let key = object_key(&*obj);
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &obj.namespace().unwrap_or_default());
    let result = match policy_of(&*obj) {
        Err(e) => Err(e),
        Ok(policy) if obj.meta().deletion_timestamp.is_some() => {
            run_cleanup(&api, obj.clone(), ctx.clone(), policy, cleanup).await
        }
        Ok(policy) => {
            ctx.metrics
                .set_paused(K::CONTROLLER, &key, !policy.writes());
            match ensure_finalizer(&api, &*obj).await {
                Ok(()) => match tenant_of(&api, &*obj, &ctx, false).await {
                    Ok(tenant) => apply(obj.clone(), ctx.clone(), tenant, policy).await,
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            }
        }
    };
    let outcome = match &result {
        Ok(_) => {
            ctx.backoff.reset(&format!("{}/{key}", K::CONTROLLER));
            "success"
        }
        Err(error) => {
            report_failure(&api, &*obj, &ctx, error).await;
            error.category()
        }
    };
    let controller = K::CONTROLLER;
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
    result
}

/// The controller's error policy: slow for terminal errors, jittered exponential
/// backoff otherwise, never sooner than the cloud's Retry-After.
pub fn error_policy<K: Managed>(obj: Arc<K>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let key = format!("{}/{}", K::CONTROLLER, object_key(&*obj));
    let delay = ctx
        .backoff
        .next(&key, error.is_terminal(), error.retry_after());
    tracing::warn!(
        controller = K::CONTROLLER,
        object = %object_key(&*obj),
        category = error.category(),
        retry_in_ms = delay.as_millis() as u64,
        "{error}"
    );
    Action::requeue(delay)
}

async fn run_cleanup<K, C, CF>(
    api: &Api<K>,
    obj: Arc<K>,
    ctx: Arc<Context>,
    policy: ReconcilePolicy,
    cleanup: C,
) -> Result<Action, ReconcileError>
where
    K: Managed,
    C: FnOnce(Arc<K>, Arc<Context>, Removal) -> CF,
    CF: Future<Output = Result<Cleanup, ReconcileError>>,
{
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
        Ok(removal) => cleanup(obj.clone(), ctx, removal).await?,
        // The project is recorded before anything is created: an object that recorded
        // none and has no credentials created nothing, and goes without a cloud call.
        Err(ReconcileError::Credentials { source, .. })
            if source.is_not_found() && obj.recorded_project().is_none() =>
        {
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
            patch_finalizers(api, &*obj, json!(remaining), "remove the finalizer").await?;
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
/// that could vanish without cleanup.
async fn ensure_finalizer<K: Managed>(api: &Api<K>, obj: &K) -> Result<(), ReconcileError> {
    if obj.finalizers().iter().any(|f| f == K::FINALIZER) {
        return Ok(());
    }
    let mut finalizers = obj.finalizers().to_vec();
    finalizers.push(K::FINALIZER.to_owned());
    patch_finalizers(api, obj, json!(finalizers), "add the finalizer").await
}

/// Sets `metadata.finalizers`, guarded by the read resourceVersion so a concurrent
/// change is never overwritten (409 → the next event retries).
async fn patch_finalizers<K: Managed>(
    api: &Api<K>,
    obj: &K,
    finalizers: serde_json::Value,
    action: &'static str,
) -> Result<(), ReconcileError> {
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": obj.resource_version()},
        {"op": "add", "path": "/metadata/finalizers", "value": finalizers},
    ]))
    .map_err(|e| ReconcileError::Finalizer {
        object: object_key(obj),
        message: e.to_string(),
    })?;
    api.patch(
        &obj.name_any(),
        &PatchParams::default(),
        &Patch::<()>::Json(patch),
    )
    .await
    .map(drop)
    .map_err(ReconcileError::kube(action, &object_key(obj)))
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
    ctx.metrics
        .set_object_conditions(K::CONTROLLER, &object_labels(obj), Some(&conditions));
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
        ctx,
        obj,
        EventType::Warning,
        error.category(),
        error.to_string(),
        "Reconcile",
    )
    .await;
}

/// Publishes an event on `obj`; a failure to publish is logged, never fatal.
pub async fn publish<K: Resource<DynamicType = ()>>(
    ctx: &Context,
    obj: &K,
    type_: EventType,
    reason: &str,
    note: String,
    action: &str,
) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note),
        action: action.to_owned(),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&event, &obj.object_ref(&())).await {
        tracing::debug!(error = %crate::kube_error::describe(&e), "could not publish an event");
    }
}
