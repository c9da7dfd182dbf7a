//! Octavia listeners: create, list, get, statistics, update, delete.

use http::Method;
use serde_json::json;

use super::OpenStackClient;
use super::octavia::{filtered, octavia};
use crate::cloud::ids::ListenerId;
use crate::cloud::model::loadbalancing::{
    CreateListener, LbFilter, Listener, ListenerStats, UpdateListener,
};
use crate::cloud::services::CloudResult;

pub(super) async fn create(
    client: &OpenStackClient,
    request: &CreateListener,
) -> CloudResult<Listener> {
    let req =
        octavia("create_listener", Method::POST, "/listeners").json(json!({"listener": request}));
    let action = format!(
        "create listener {} on load balancer {}",
        request.name, request.loadbalancer_id
    );
    client.fetch(&req, "listener", &action).await
}

pub(super) async fn list(
    client: &OpenStackClient,
    filter: &LbFilter,
) -> CloudResult<Vec<Listener>> {
    let req = filtered(octavia("list_listeners", Method::GET, "/listeners"), filter);
    client.list_all(req, "listeners", "list listeners").await
}

pub(super) async fn get(client: &OpenStackClient, id: &ListenerId) -> CloudResult<Listener> {
    let req = octavia("get_listener", Method::GET, format!("/listeners/{id}"));
    client
        .fetch(&req, "listener", &format!("get listener {id}"))
        .await
}

/// The listener's connection counts, as its amphorae last reported them.
pub(super) async fn stats(client: &OpenStackClient, id: &ListenerId) -> CloudResult<ListenerStats> {
    let req = octavia(
        "listener_stats",
        Method::GET,
        format!("/listeners/{id}/stats"),
    );
    client
        .fetch(
            &req,
            "stats",
            &format!("read the statistics of listener {id}"),
        )
        .await
}

pub(super) async fn update(
    client: &OpenStackClient,
    id: &ListenerId,
    request: &UpdateListener,
) -> CloudResult<Listener> {
    let req = octavia("update_listener", Method::PUT, format!("/listeners/{id}"))
        .json(json!({"listener": request}));
    client
        .fetch(&req, "listener", &format!("update listener {id}"))
        .await
}

pub(super) async fn delete(client: &OpenStackClient, id: &ListenerId) -> CloudResult<()> {
    let req = octavia(
        "delete_listener",
        Method::DELETE,
        format!("/listeners/{id}"),
    );
    client.execute(&req, &format!("delete listener {id}")).await
}
