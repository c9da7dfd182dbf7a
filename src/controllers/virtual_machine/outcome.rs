//! What a VirtualMachine step did: the server status should describe, the Ready
//! condition, the event, and when to look again. Shared by the server steps (`execute`)
//! and the volume steps (`volumes::execute`).

use std::time::Duration;

use kube::runtime::events::EventType;
use verda_api::conditions::Status;

use crate::cloud::ids::ServerId;

/// What a step did.
pub struct Outcome {
    /// The server status should describe (a fresh create has only an ID).
    pub server_id: Option<ServerId>,
    pub ready: (Status, &'static str, String),
    pub event: Option<(EventType, &'static str, String)>,
    pub requeue: Duration,
    /// The record sets of `spec.dns` after this round; `None`: as the status reports.
    pub dns: Option<crate::controllers::dns_records::Kept>,
}

pub use crate::runtime::progress::PROVISIONING;

/// Not Ready yet: `message` says what is under way.
pub fn provisioning(id: Option<ServerId>, message: String, requeue: Duration) -> Outcome {
    Outcome {
        server_id: id,
        ready: (Status::False, PROVISIONING, message),
        event: None,
        requeue,
        dns: None,
    }
}
