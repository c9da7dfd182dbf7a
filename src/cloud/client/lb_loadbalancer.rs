//! Octavia load balancers, status tree and flavors, plus the [`LoadBalancing`] impl that
//! routes to the sub-resource modules (listener, pool, monitor, member).
//! Octavia has no microversions; objects live under `/v2/lbaas/...`.

use reqwest::Method;

use super::{Kind, OpenStackClient, pick_one};
use crate::cloud::auth::Service;
use crate::cloud::error::{CloudError, Resource};
use crate::cloud::ids::*;
use crate::cloud::model::loadbalancing::*;
use crate::cloud::ports::{CloudFuture, CloudResult, LoadBalancing};
use crate::cloud::transport::Request;

pub(super) fn octavia(op: &'static str, method: Method, path: impl Into<String>) -> Request {
    Request::new(
        Service::LoadBalancer,
        op,
        method,
        format!("/lbaas{}", path.into()),
    )
}

/// Octavia list filters: `name` exact, `tags` match-all (comma separated).
pub(super) fn filtered(req: Request, filter: &LbFilter) -> Request {
    let tags = (!filter.tags.is_empty()).then(|| filter.tags.join(","));
    req.query_opt("name", filter.name.as_deref())
        .query_opt("tags", tags)
        .query_opt(
            "loadbalancer_id",
            filter.loadbalancer_id.as_ref().map(|i| i.to_string()),
        )
}

impl OpenStackClient {
    async fn lb_create(&self, request: &CreateLoadBalancer) -> CloudResult<LoadBalancer> {
        let req = octavia("create_load_balancer", Method::POST, "/loadbalancers")
            .json(serde_json::json!({"loadbalancer": request}));
        let created = self
            .fetch(
                &req,
                "loadbalancer",
                &format!("create load balancer {}", request.name),
            )
            .await;
        self.forget_on_refusal(created, &[Kind::Subnet, Kind::Network, Kind::LbFlavor])
    }

    async fn lb_delete(&self, id: &LoadBalancerId) -> CloudResult<()> {
        let req = octavia(
            "delete_load_balancer",
            Method::DELETE,
            format!("/loadbalancers/{id}"),
        )
        .query("cascade", "true");
        self.execute(&req, &format!("delete load balancer {id}"))
            .await
    }

    async fn lb_status(&self, id: &LoadBalancerId) -> CloudResult<StatusTree> {
        let req = octavia(
            "get_status_tree",
            Method::GET,
            format!("/loadbalancers/{id}/status"),
        );
        let action = format!("get status of load balancer {id}");
        let statuses: serde_json::Value = self.fetch(&req, "statuses", &action).await?;
        serde_json::from_value(statuses.get("loadbalancer").cloned().unwrap_or_default()).map_err(
            |e| {
                CloudError::new(
                    action,
                    crate::cloud::error::ErrorKind::InvalidResponse {
                        message: format!("cannot read status tree: {e}"),
                    },
                )
            },
        )
    }

    async fn lb_find_flavor(&self, name_or_id: &str) -> CloudResult<LbFlavor> {
        let all = self.list_lb_flavors().await?;
        if let Some(f) = all.iter().find(|f| f.id.as_str() == name_or_id) {
            return Ok(f.clone());
        }
        let named = all.into_iter().filter(|f| f.name == name_or_id).collect();
        pick_one(Resource::LoadBalancerFlavor, name_or_id, named, |f| {
            f.id.to_string()
        })
        .map_err(|k| CloudError::new(format!("find load balancer flavor {name_or_id}"), k))
    }
}

impl LoadBalancing for OpenStackClient {
    fn create_load_balancer<'a>(
        &'a self,
        request: &'a CreateLoadBalancer,
    ) -> CloudFuture<'a, LoadBalancer> {
        Box::pin(self.lb_create(request))
    }

    fn get_load_balancer<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, LoadBalancer> {
        Box::pin(async move {
            let req = octavia(
                "get_load_balancer",
                Method::GET,
                format!("/loadbalancers/{id}"),
            );
            self.fetch(&req, "loadbalancer", &format!("get load balancer {id}"))
                .await
        })
    }

    fn set_load_balancer_tags<'a>(
        &'a self,
        id: &'a LoadBalancerId,
        tags: &'a [String],
    ) -> CloudFuture<'a, LoadBalancer> {
        Box::pin(async move {
            let req = octavia(
                "set_load_balancer_tags",
                Method::PUT,
                format!("/loadbalancers/{id}"),
            )
            .json(serde_json::json!({"loadbalancer": {"tags": tags}}));
            self.fetch(
                &req,
                "loadbalancer",
                &format!("set the tags of load balancer {id}"),
            )
            .await
        })
    }

    fn list_load_balancers<'a>(
        &'a self,
        filter: &'a LbFilter,
    ) -> CloudFuture<'a, Vec<LoadBalancer>> {
        Box::pin(async move {
            let req = filtered(
                octavia("list_load_balancers", Method::GET, "/loadbalancers"),
                filter,
            );
            self.list_all(req, "loadbalancers", "list load balancers")
                .await
        })
    }

    fn delete_load_balancer<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, ()> {
        Box::pin(self.lb_delete(id))
    }

    fn get_status_tree<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, StatusTree> {
        Box::pin(self.lb_status(id))
    }

    fn create_listener<'a>(&'a self, request: &'a CreateListener) -> CloudFuture<'a, Listener> {
        Box::pin(self.listener_create(request))
    }

    fn list_listeners<'a>(&'a self, filter: &'a LbFilter) -> CloudFuture<'a, Vec<Listener>> {
        Box::pin(self.listener_list(filter))
    }

    fn get_listener<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, Listener> {
        Box::pin(self.listener_get(id))
    }

    fn update_listener<'a>(
        &'a self,
        id: &'a ListenerId,
        request: &'a UpdateListener,
    ) -> CloudFuture<'a, Listener> {
        Box::pin(self.listener_update(id, request))
    }

    fn delete_listener<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, ()> {
        Box::pin(self.listener_delete(id))
    }

    fn create_pool<'a>(&'a self, request: &'a CreatePool) -> CloudFuture<'a, Pool> {
        Box::pin(self.pool_create(request))
    }

    fn list_pools<'a>(&'a self, filter: &'a LbFilter) -> CloudFuture<'a, Vec<Pool>> {
        Box::pin(self.pool_list(filter))
    }

    fn get_pool<'a>(&'a self, id: &'a PoolId) -> CloudFuture<'a, Pool> {
        Box::pin(self.pool_get(id))
    }

    fn update_pool<'a>(&'a self, id: &'a PoolId, request: &'a UpdatePool) -> CloudFuture<'a, Pool> {
        Box::pin(self.pool_update(id, request))
    }

    fn delete_pool<'a>(&'a self, id: &'a PoolId) -> CloudFuture<'a, ()> {
        Box::pin(self.pool_delete(id))
    }

    fn create_health_monitor<'a>(
        &'a self,
        request: &'a CreateHealthMonitor,
    ) -> CloudFuture<'a, HealthMonitor> {
        Box::pin(self.monitor_create(request))
    }

    fn get_health_monitor<'a>(&'a self, id: &'a HealthMonitorId) -> CloudFuture<'a, HealthMonitor> {
        Box::pin(self.monitor_get(id))
    }

    fn update_health_monitor<'a>(
        &'a self,
        id: &'a HealthMonitorId,
        request: &'a UpdateHealthMonitor,
    ) -> CloudFuture<'a, HealthMonitor> {
        Box::pin(self.monitor_update(id, request))
    }

    fn delete_health_monitor<'a>(&'a self, id: &'a HealthMonitorId) -> CloudFuture<'a, ()> {
        Box::pin(self.monitor_delete(id))
    }

    fn list_members<'a>(&'a self, pool: &'a PoolId) -> CloudFuture<'a, Vec<Member>> {
        Box::pin(self.members_list(pool))
    }

    fn replace_members<'a>(
        &'a self,
        pool: &'a PoolId,
        members: &'a [MemberSpec],
    ) -> CloudFuture<'a, ()> {
        Box::pin(self.members_replace(pool, members))
    }

    fn list_lb_flavors(&self) -> CloudFuture<'_, Vec<LbFlavor>> {
        Box::pin(async move {
            let req = octavia("list_lb_flavors", Method::GET, "/flavors");
            self.list_all(req, "flavors", "list load balancer flavors")
                .await
        })
    }

    fn find_lb_flavor<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, LbFlavor> {
        Box::pin(self.remembered(Kind::LbFlavor, name_or_id, self.lb_find_flavor(name_or_id)))
    }
}
