//! Octavia pools: create, list, get, update, delete.

use reqwest::Method;
use serde_json::json;

use super::OpenStackClient;
use super::lb_loadbalancer::{filtered, octavia};
use crate::cloud::ids::PoolId;
use crate::cloud::model::loadbalancing::{CreatePool, LbFilter, Pool, UpdatePool};
use crate::cloud::ports::CloudResult;

impl OpenStackClient {
    pub(super) async fn pool_create(&self, request: &CreatePool) -> CloudResult<Pool> {
        let req = octavia("create_pool", Method::POST, "/pools").json(json!({"pool": request}));
        self.fetch(&req, "pool", &format!("create pool {}", request.name))
            .await
    }

    pub(super) async fn pool_list(&self, filter: &LbFilter) -> CloudResult<Vec<Pool>> {
        let req = filtered(octavia("list_pools", Method::GET, "/pools"), filter);
        self.list_all(req, "pools", "list pools").await
    }

    pub(super) async fn pool_get(&self, id: &PoolId) -> CloudResult<Pool> {
        let req = octavia("get_pool", Method::GET, format!("/pools/{id}"));
        self.fetch(&req, "pool", &format!("get pool {id}")).await
    }

    pub(super) async fn pool_update(&self, id: &PoolId, request: &UpdatePool) -> CloudResult<Pool> {
        let req = octavia("update_pool", Method::PUT, format!("/pools/{id}"))
            .json(json!({"pool": request}));
        self.fetch(&req, "pool", &format!("update pool {id}")).await
    }

    pub(super) async fn pool_delete(&self, id: &PoolId) -> CloudResult<()> {
        let req = octavia("delete_pool", Method::DELETE, format!("/pools/{id}"));
        self.execute(&req, &format!("delete pool {id}")).await
    }
}
