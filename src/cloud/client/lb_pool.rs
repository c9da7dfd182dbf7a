//! Octavia pools: create, list, get, update, delete.

use http::Method;
use serde_json::json;

use super::OpenStackClient;
use super::octavia::{filtered, octavia};
use crate::cloud::ids::PoolId;
use crate::cloud::model::loadbalancing::{CreatePool, LbFilter, Pool, UpdatePool};
use crate::cloud::services::CloudResult;

pub(super) async fn create(client: &OpenStackClient, request: &CreatePool) -> CloudResult<Pool> {
    let req = octavia("create_pool", Method::POST, "/pools").json(json!({"pool": request}));
    client
        .fetch(&req, "pool", &format!("create pool {}", request.name))
        .await
}

pub(super) async fn list(client: &OpenStackClient, filter: &LbFilter) -> CloudResult<Vec<Pool>> {
    let req = filtered(octavia("list_pools", Method::GET, "/pools"), filter);
    client.list_all(req, "pools", "list pools").await
}

pub(super) async fn get(client: &OpenStackClient, id: &PoolId) -> CloudResult<Pool> {
    let req = octavia("get_pool", Method::GET, format!("/pools/{id}"));
    client.fetch(&req, "pool", &format!("get pool {id}")).await
}

pub(super) async fn update(
    client: &OpenStackClient,
    id: &PoolId,
    request: &UpdatePool,
) -> CloudResult<Pool> {
    let req =
        octavia("update_pool", Method::PUT, format!("/pools/{id}")).json(json!({"pool": request}));
    client
        .fetch(&req, "pool", &format!("update pool {id}"))
        .await
}

pub(super) async fn delete(client: &OpenStackClient, id: &PoolId) -> CloudResult<()> {
    let req = octavia("delete_pool", Method::DELETE, format!("/pools/{id}"));
    client.execute(&req, &format!("delete pool {id}")).await
}
