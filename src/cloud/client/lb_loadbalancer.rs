//! Octavia load balancers, status tree and flavors, plus the [`LoadBalancing`] impl that
//! routes to the sub-resource modules (listener, pool, monitor, member).
//! Octavia has no microversions; objects live under `/v2/lbaas/...`.

use http::Method;

use super::octavia::{filtered, octavia};
use super::owner_lookups::OwnerFilter;
use super::{Kind, OpenStackClient, lb_listener, lb_member, lb_monitor, lb_pool, pick_one};
use crate::cloud::error::{CloudError, Resource};
use crate::cloud::ids::*;
use crate::cloud::model::key_manager::StoredSecret;
use crate::cloud::model::loadbalancing::*;
use crate::cloud::services::{CloudFuture, CloudResult, LoadBalancing};

async fn create(
    client: &OpenStackClient,
    request: &CreateLoadBalancer,
) -> CloudResult<LoadBalancer> {
    let req = octavia("create_load_balancer", Method::POST, "/loadbalancers")
        .json(serde_json::json!({"loadbalancer": request}));
    let created = client
        .fetch(
            &req,
            "loadbalancer",
            &format!("create load balancer {}", request.name),
        )
        .await;
    client.forget_on_refusal(created, &[Kind::Subnet, Kind::Network, Kind::LbFlavor])
}

async fn delete(client: &OpenStackClient, id: &LoadBalancerId) -> CloudResult<()> {
    let req = octavia(
        "delete_load_balancer",
        Method::DELETE,
        format!("/loadbalancers/{id}"),
    )
    .query("cascade", "true");
    client
        .execute(&req, &format!("delete load balancer {id}"))
        .await
}

async fn status_tree(client: &OpenStackClient, id: &LoadBalancerId) -> CloudResult<StatusTree> {
    let req = octavia(
        "get_status_tree",
        Method::GET,
        format!("/loadbalancers/{id}/status"),
    );
    let action = format!("get status of load balancer {id}");
    let statuses: serde_json::Value = client.fetch(&req, "statuses", &action).await?;
    serde_json::from_value(statuses.get("loadbalancer").cloned().unwrap_or_default()).map_err(|e| {
        CloudError::new(
            action,
            crate::cloud::error::ErrorKind::InvalidResponse {
                message: format!("cannot read status tree: {e}"),
            },
        )
    })
}

async fn find_flavor(client: &OpenStackClient, name_or_id: &str) -> CloudResult<LbFlavor> {
    let all = client.list_lb_flavors().await?;
    if let Some(f) = all.iter().find(|f| f.id.as_str() == name_or_id) {
        return Ok(f.clone());
    }
    let named = all.into_iter().filter(|f| f.name == name_or_id).collect();
    pick_one(Resource::LoadBalancerFlavor, name_or_id, named, |f| {
        f.id.to_string()
    })
    .map_err(|k| CloudError::new(format!("find load balancer flavor {name_or_id}"), k))
}

impl LoadBalancing for OpenStackClient {
    fn create_load_balancer<'a>(
        &'a self,
        request: &'a CreateLoadBalancer,
    ) -> CloudFuture<'a, LoadBalancer> {
        Box::pin(create(self, request))
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

    /// Coalesced with the lookups of other owners asked for meanwhile (see
    /// [`super::owner_lookups`]).
    fn load_balancers_of<'a>(&'a self, owner_uid: &'a str) -> CloudFuture<'a, Vec<LoadBalancer>> {
        Box::pin(async move {
            let queue = self.load_balancer_lookups.of(self.region());
            queue
                .of_owner(owner_uid, |uids| self.load_balancers_of_owners(uids))
                .await
        })
    }

    fn delete_load_balancer<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, ()> {
        Box::pin(delete(self, id))
    }

    fn get_status_tree<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, StatusTree> {
        Box::pin(status_tree(self, id))
    }

    fn create_listener<'a>(&'a self, request: &'a CreateListener) -> CloudFuture<'a, Listener> {
        Box::pin(lb_listener::create(self, request))
    }

    fn list_listeners<'a>(&'a self, filter: &'a LbFilter) -> CloudFuture<'a, Vec<Listener>> {
        Box::pin(lb_listener::list(self, filter))
    }

    fn get_listener<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, Listener> {
        Box::pin(lb_listener::get(self, id))
    }

    fn listener_stats<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, ListenerStats> {
        Box::pin(lb_listener::stats(self, id))
    }

    fn update_listener<'a>(
        &'a self,
        id: &'a ListenerId,
        request: &'a UpdateListener,
    ) -> CloudFuture<'a, Listener> {
        Box::pin(lb_listener::update(self, id, request))
    }

    fn delete_listener<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, ()> {
        Box::pin(lb_listener::delete(self, id))
    }

    fn create_pool<'a>(&'a self, request: &'a CreatePool) -> CloudFuture<'a, Pool> {
        Box::pin(lb_pool::create(self, request))
    }

    fn list_pools<'a>(&'a self, filter: &'a LbFilter) -> CloudFuture<'a, Vec<Pool>> {
        Box::pin(lb_pool::list(self, filter))
    }

    fn get_pool<'a>(&'a self, id: &'a PoolId) -> CloudFuture<'a, Pool> {
        Box::pin(lb_pool::get(self, id))
    }

    fn update_pool<'a>(&'a self, id: &'a PoolId, request: &'a UpdatePool) -> CloudFuture<'a, Pool> {
        Box::pin(lb_pool::update(self, id, request))
    }

    fn delete_pool<'a>(&'a self, id: &'a PoolId) -> CloudFuture<'a, ()> {
        Box::pin(lb_pool::delete(self, id))
    }

    fn create_health_monitor<'a>(
        &'a self,
        request: &'a CreateHealthMonitor,
    ) -> CloudFuture<'a, HealthMonitor> {
        Box::pin(lb_monitor::create(self, request))
    }

    fn get_health_monitor<'a>(&'a self, id: &'a HealthMonitorId) -> CloudFuture<'a, HealthMonitor> {
        Box::pin(lb_monitor::get(self, id))
    }

    fn update_health_monitor<'a>(
        &'a self,
        id: &'a HealthMonitorId,
        request: &'a UpdateHealthMonitor,
    ) -> CloudFuture<'a, HealthMonitor> {
        Box::pin(lb_monitor::update(self, id, request))
    }

    fn delete_health_monitor<'a>(&'a self, id: &'a HealthMonitorId) -> CloudFuture<'a, ()> {
        Box::pin(lb_monitor::delete(self, id))
    }

    fn list_members<'a>(&'a self, pool: &'a PoolId) -> CloudFuture<'a, Vec<Member>> {
        Box::pin(lb_member::list(self, pool))
    }

    fn replace_members<'a>(
        &'a self,
        pool: &'a PoolId,
        members: &'a [MemberSpec],
    ) -> CloudFuture<'a, ()> {
        Box::pin(lb_member::replace(self, pool, members))
    }

    fn list_lb_flavors(&self) -> CloudFuture<'_, Vec<LbFlavor>> {
        Box::pin(async move {
            let req = octavia("list_lb_flavors", Method::GET, "/flavors");
            self.list_all(req, "flavors", "list load balancer flavors")
                .await
        })
    }

    fn find_lb_flavor<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, LbFlavor> {
        Box::pin(self.remembered(Kind::LbFlavor, name_or_id, find_flavor(self, name_or_id)))
    }

    fn list_certificates<'a>(&'a self, prefix: &'a str) -> CloudFuture<'a, Vec<StoredSecret>> {
        Box::pin(super::key_manager::list(self, prefix))
    }

    fn store_certificate<'a>(
        &'a self,
        name: &'a str,
        pkcs12: &'a [u8],
    ) -> CloudFuture<'a, StoredSecret> {
        Box::pin(super::key_manager::store(self, name, pkcs12))
    }

    fn delete_certificate<'a>(&'a self, secret: &'a StoredSecret) -> CloudFuture<'a, ()> {
        Box::pin(super::key_manager::delete(self, secret))
    }
}

impl OpenStackClient {
    /// One list for a batch of owners: `tags` for one, `tags-any` for several.
    async fn load_balancers_of_owners(&self, uids: Vec<String>) -> CloudResult<Vec<LoadBalancer>> {
        let filter = OwnerFilter::of(&uids, "load balancers");
        let req = octavia("list_load_balancers", Method::GET, "/loadbalancers")
            .query(filter.key, filter.tags);
        self.list_all(req, "loadbalancers", &filter.action).await
    }
}
