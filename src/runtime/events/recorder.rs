//! Writes events as core/v1 Events, the way client-go's recorder does: a new event is
//! created, a repeat patches its count, last time and note (see `correlator`).
//! `kubectl describe`, `kubectl events` and `kubectl get events --sort-by=.lastTimestamp`
//! read them as they read any controller's.

use k8s_openapi::api::core::v1::{Event as CoreEvent, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use serde_json::json;
use tokio::sync::Mutex;

use crate::runtime::events::correlator::{Correlator, Key, Similar, Write};

/// Who reports the events: the controller and this replica.
#[derive(Clone, Debug)]
pub struct Reporter {
    pub controller: String,
    pub instance: String,
}

/// Publishes events, remembering what it wrote so repeats count up instead of piling up.
pub struct Recorder {
    client: kube::Client,
    reporter: Reporter,
    correlator: Mutex<Correlator>,
}

impl Recorder {
    pub fn new(client: kube::Client, reporter: Reporter) -> Self {
        Self {
            client,
            reporter,
            correlator: Mutex::new(Correlator::default()),
        }
    }

    /// Records `event` about the object `regarding`.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let note = event.note.clone().unwrap_or_default();
        let similar = Similar {
            object_uid: regarding.uid.as_deref().unwrap_or_default(),
            warning: event.type_ == EventType::Warning,
            reason: &event.reason,
            action: &event.action,
        };
        let (key, write) = self
            .correlator
            .lock()
            .await
            .decide(&similar, &note, Timestamp::now());
        let api: Api<CoreEvent> = Api::namespaced(
            self.client.clone(),
            regarding.namespace.as_deref().unwrap_or("default"),
        );
        match self.write(&api, event, regarding, &write).await {
            Ok(name) => {
                self.correlator.lock().await.written(key, &name, &write);
                Ok(())
            }
            Err(e) => {
                self.patch_failed(&api, event, regarding, key, &write, e)
                    .await
            }
        }
    }

    /// A patch of an event the API server no longer has (its time to live passed,
    /// or someone deleted it) becomes a create.
    async fn patch_failed(
        &self,
        api: &Api<CoreEvent>,
        event: &Event,
        regarding: &ObjectReference,
        key: Key,
        write: &Write,
        error: kube::Error,
    ) -> Result<(), kube::Error> {
        let Write::Patch { note, at, .. } = write else {
            return Err(error);
        };
        if crate::kube_error::api_code(&error) != Some(404) {
            return Err(error);
        }
        self.correlator.lock().await.lost(&key);
        let create = Write::Create {
            note: note.clone(),
            at: *at,
        };
        let name = self.write(api, event, regarding, &create).await?;
        self.correlator.lock().await.written(key, &name, &create);
        Ok(())
    }

    /// Sends `write`; the name of the Event written.
    async fn write(
        &self,
        api: &Api<CoreEvent>,
        event: &Event,
        regarding: &ObjectReference,
        write: &Write,
    ) -> Result<String, kube::Error> {
        match write {
            Write::Create { note, at } => {
                let body = self.new_event(event, regarding, note, *at);
                let created = api.create(&PostParams::default(), &body).await?;
                Ok(created.metadata.name.unwrap_or_default())
            }
            Write::Patch {
                name,
                note,
                count,
                at,
                ..
            } => {
                let patch = json!({"count": count, "lastTimestamp": Time(*at), "message": note});
                api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                Ok(name.clone())
            }
        }
    }

    /// A first occurrence, in the shape client-go's recorder writes.
    fn new_event(
        &self,
        event: &Event,
        regarding: &ObjectReference,
        note: &str,
        at: Timestamp,
    ) -> CoreEvent {
        let object = regarding
            .name
            .as_deref()
            .unwrap_or(&self.reporter.controller);
        CoreEvent {
            metadata: ObjectMeta {
                name: Some(format!("{object}.{:x}", at.as_nanosecond())),
                namespace: regarding.namespace.clone(),
                ..ObjectMeta::default()
            },
            involved_object: regarding.clone(),
            type_: Some(match event.type_ {
                EventType::Normal => "Normal".into(),
                EventType::Warning => "Warning".into(),
            }),
            reason: Some(event.reason.clone()),
            action: Some(event.action.clone()),
            message: Some(note.to_owned()),
            count: Some(1),
            first_timestamp: Some(Time(at)),
            last_timestamp: Some(Time(at)),
            source: Some(EventSource {
                component: Some(self.reporter.controller.clone()),
                host: None,
            }),
            reporting_component: Some(self.reporter.controller.clone()),
            reporting_instance: Some(self.reporter.instance.clone()),
            ..CoreEvent::default()
        }
    }
}
