//! Request and response types of the service traits, per service. Plain data: no I/O.

pub mod compute;
pub mod dns;
pub mod firewall;
pub mod key_manager;
pub mod loadbalancing;
pub mod network;
pub mod volume;

/// The API's own word for a status value (`ACTIVE`, `PENDING_UPDATE`, `ONLINE`, …).
pub fn word<T: serde::Serialize>(value: T) -> Option<String> {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
}
