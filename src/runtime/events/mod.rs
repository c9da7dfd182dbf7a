//! Events on the objects, for `kubectl describe`: publishing one never fails a
//! reconcile. `correlator` decides whether an event is new, a repeat or part of a
//! burst; `recorder` writes it.

mod correlator;
mod recorder;

use kube::Resource;
use kube::runtime::events::{Event, EventType};

pub use recorder::{Recorder, Reporter};

/// Publishes an event on `obj`; a failure to publish is logged, never fatal.
pub async fn publish<K: Resource<DynamicType = ()>>(
    recorder: &Recorder,
    obj: &K,
    type_: EventType,
    reason: &str,
    note: String,
    action: &str,
) {
    publish_event(recorder, obj, event(type_, reason, note, action)).await;
}

/// Publishes `event` on `obj`; a failure to publish is logged, never fatal.
pub async fn publish_event<K: Resource<DynamicType = ()>>(
    recorder: &Recorder,
    obj: &K,
    event: Event,
) {
    if let Err(e) = recorder.publish(&event, &obj.object_ref(&())).await {
        tracing::debug!(error = %crate::kube_error::describe(&e), "could not publish an event");
    }
}

/// An event about `obj` itself (no secondary object).
pub fn event(type_: EventType, reason: &str, note: String, action: &str) -> Event {
    Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note),
        action: action.to_owned(),
        secondary: None,
    }
}

/// An event with the `Reconcile` action.
pub fn reconcile_event(type_: EventType, reason: &str, note: String) -> Event {
    event(type_, reason, note, "Reconcile")
}
