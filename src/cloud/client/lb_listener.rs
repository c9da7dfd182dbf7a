//! Octavia listeners: create, list, get, update, delete.

use reqwest::Method;
use serde_json::json;

use super::OpenStackClient;
use super::lb_loadbalancer::{filtered, octavia};
use crate::cloud::ids::ListenerId;
use crate::cloud::model::loadbalancing::{CreateListener, LbFilter, Listener, UpdateListener};
use crate::cloud::ports::CloudResult;

impl OpenStackClient {
    pub(super) async fn listener_create(&self, request: &CreateListener) -> CloudResult<Listener> {
        let req = octavia("create_listener", Method::POST, "/listeners")
            .json(json!({"listener": request}));
        let action = format!(
            "create listener {} on load balancer {}",
            request.name, request.loadbalancer_id
        );
        self.fetch(&req, "listener", &action).await
    }

    pub(super) async fn listener_list(&self, filter: &LbFilter) -> CloudResult<Vec<Listener>> {
        let req = filtered(octavia("list_listeners", Method::GET, "/listeners"), filter);
        self.list_all(req, "listeners", "list listeners").await
    }

    pub(super) async fn listener_get(&self, id: &ListenerId) -> CloudResult<Listener> {
        let req = octavia("get_listener", Method::GET, format!("/listeners/{id}"));
        self.fetch(&req, "listener", &format!("get listener {id}"))
            .await
    }

    pub(super) async fn listener_update(
        &self,
        id: &ListenerId,
        request: &UpdateListener,
    ) -> CloudResult<Listener> {
        let req = octavia("update_listener", Method::PUT, format!("/listeners/{id}"))
            .json(json!({"listener": request}));
        self.fetch(&req, "listener", &format!("update listener {id}"))
            .await
    }

    pub(super) async fn listener_delete(&self, id: &ListenerId) -> CloudResult<()> {
        let req = octavia(
            "delete_listener",
            Method::DELETE,
            format!("/listeners/{id}"),
        );
        self.execute(&req, &format!("delete listener {id}")).await
    }
}
