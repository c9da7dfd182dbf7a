//! Octavia health monitors: create, get, update, delete (a pool has at most one).

use http::Method;
use serde_json::json;

use super::OpenStackClient;
use super::octavia::octavia;
use crate::cloud::ids::HealthMonitorId;
use crate::cloud::model::loadbalancing::{CreateHealthMonitor, HealthMonitor, UpdateHealthMonitor};
use crate::cloud::services::CloudResult;

pub(super) async fn create(
    client: &OpenStackClient,
    request: &CreateHealthMonitor,
) -> CloudResult<HealthMonitor> {
    let req = octavia("create_health_monitor", Method::POST, "/healthmonitors")
        .json(json!({"healthmonitor": request}));
    let action = format!(
        "create health monitor {} for pool {}",
        request.name, request.pool_id
    );
    client.fetch(&req, "healthmonitor", &action).await
}

pub(super) async fn get(
    client: &OpenStackClient,
    id: &HealthMonitorId,
) -> CloudResult<HealthMonitor> {
    let req = octavia(
        "get_health_monitor",
        Method::GET,
        format!("/healthmonitors/{id}"),
    );
    client
        .fetch(&req, "healthmonitor", &format!("get health monitor {id}"))
        .await
}

pub(super) async fn update(
    client: &OpenStackClient,
    id: &HealthMonitorId,
    request: &UpdateHealthMonitor,
) -> CloudResult<HealthMonitor> {
    let req = octavia(
        "update_health_monitor",
        Method::PUT,
        format!("/healthmonitors/{id}"),
    )
    .json(json!({"healthmonitor": request}));
    client
        .fetch(
            &req,
            "healthmonitor",
            &format!("update health monitor {id}"),
        )
        .await
}

pub(super) async fn delete(client: &OpenStackClient, id: &HealthMonitorId) -> CloudResult<()> {
    let req = octavia(
        "delete_health_monitor",
        Method::DELETE,
        format!("/healthmonitors/{id}"),
    );
    client
        .execute(&req, &format!("delete health monitor {id}"))
        .await
}
