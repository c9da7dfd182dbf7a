//! Neutron verbs of [`Network`]. Filters are exact-match query parameters; lists follow
//! `<resource>_links`. `find_*` try a GET for UUID-shaped input, then an exact-name list.

use http::Method;
use serde_json::json;

use super::{Kind, OpenStackClient, pick_one};
use crate::cloud::auth::Service;
use crate::cloud::error::{CloudError, Resource};
use crate::cloud::ids::{FloatingIpId, NetworkId, PortId, SubnetId, looks_like_uuid};
use crate::cloud::model::network::*;
use crate::cloud::services::{CloudFuture, CloudResult, Network as NetworkService};
use crate::cloud::transport::Request;

fn neutron(op: &'static str, method: Method, path: impl Into<String>) -> Request {
    Request::new(Service::Network, op, method, path)
}

impl NetworkService for OpenStackClient {
    fn list_networks<'a>(&'a self, name: Option<&'a str>) -> CloudFuture<'a, Vec<Network>> {
        Box::pin(async move {
            let req = neutron("list_networks", Method::GET, "/networks").query_opt("name", name);
            self.list_all(req, "networks", "list networks").await
        })
    }

    fn get_network<'a>(&'a self, id: &'a NetworkId) -> CloudFuture<'a, Network> {
        Box::pin(async move {
            let req = neutron("get_network", Method::GET, format!("/networks/{id}"));
            self.fetch(&req, "network", &format!("get network {id}"))
                .await
        })
    }

    fn find_network<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, Network> {
        Box::pin(self.remembered(Kind::Network, name_or_id, self.network_find(name_or_id)))
    }

    fn list_subnets<'a>(&'a self, filter: &'a SubnetFilter) -> CloudFuture<'a, Vec<Subnet>> {
        Box::pin(async move {
            let req = neutron("list_subnets", Method::GET, "/subnets")
                .query_opt("name", filter.name.as_deref())
                .query_opt(
                    "network_id",
                    filter.network_id.as_ref().map(|n| n.to_string()),
                );
            self.list_all(req, "subnets", "list subnets").await
        })
    }

    fn get_subnet<'a>(&'a self, id: &'a SubnetId) -> CloudFuture<'a, Subnet> {
        Box::pin(async move {
            let req = neutron("get_subnet", Method::GET, format!("/subnets/{id}"));
            self.fetch(&req, "subnet", &format!("get subnet {id}"))
                .await
        })
    }

    fn find_subnet<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, Subnet> {
        Box::pin(self.remembered(Kind::Subnet, name_or_id, self.subnet_find(name_or_id)))
    }

    fn list_ports<'a>(&'a self, filter: &'a PortFilter) -> CloudFuture<'a, Vec<Port>> {
        Box::pin(async move {
            let req = neutron("list_ports", Method::GET, "/ports")
                .query_opt("device_id", filter.device_id.as_deref())
                .query_opt(
                    "network_id",
                    filter.network_id.as_ref().map(|n| n.to_string()),
                )
                .query_opt("project_id", filter.project_id.as_deref());
            let req = filter
                .descriptions
                .iter()
                .fold(req, |req, d| req.query("description", d.as_str()));
            let req = filter
                .fields
                .iter()
                .fold(req, |req, f| req.query("fields", *f));
            self.list_all(req, "ports", "list ports").await
        })
    }

    fn get_port<'a>(&'a self, id: &'a PortId) -> CloudFuture<'a, Port> {
        Box::pin(async move {
            let req = neutron("get_port", Method::GET, format!("/ports/{id}"));
            self.fetch(&req, "port", &format!("get port {id}")).await
        })
    }

    fn find_security_group<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, SecurityGroup> {
        Box::pin(self.remembered(
            Kind::SecurityGroup,
            name_or_id,
            self.security_group_find(name_or_id),
        ))
    }

    fn create_port<'a>(&'a self, request: &'a CreatePort) -> CloudFuture<'a, Port> {
        Box::pin(async move {
            let mut body = json!({
                "network_id": request.network,
                "name": request.name,
                "description": request.description,
            });
            if !request.fixed_ips.is_empty() {
                let ips: Vec<_> = request
                    .fixed_ips
                    .iter()
                    .map(|ip| json!({"ip_address": ip}))
                    .collect();
                body["fixed_ips"] = json!(ips);
            }
            if !request.allowed_address_pairs.is_empty() {
                body["allowed_address_pairs"] = json!(request.allowed_address_pairs);
            }
            if let Some(groups) = &request.security_groups {
                body["security_groups"] = json!(groups);
            }
            let req = neutron("create_port", Method::POST, "/ports").json(json!({"port": body}));
            let action = format!(
                "create port {} on network {}",
                request.name, request.network
            );
            self.fetch(&req, "port", &action).await
        })
    }

    fn update_port<'a>(&'a self, id: &'a PortId, request: &'a UpdatePort) -> CloudFuture<'a, Port> {
        Box::pin(async move {
            let mut body = json!({});
            if let Some(d) = &request.description {
                body["description"] = json!(d);
            }
            if let Some(pairs) = &request.allowed_address_pairs {
                body["allowed_address_pairs"] = json!(pairs);
            }
            if let Some(groups) = &request.security_groups {
                body["security_groups"] = json!(groups);
            }
            if request.unbind {
                body["device_id"] = json!("");
                body["device_owner"] = json!("");
            }
            let req = neutron("update_port", Method::PUT, format!("/ports/{id}"))
                .json(json!({"port": body}))
                .idempotent();
            self.fetch(&req, "port", &format!("update port {id}")).await
        })
    }

    fn delete_port<'a>(&'a self, id: &'a PortId) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = neutron("delete_port", Method::DELETE, format!("/ports/{id}"));
            self.execute(&req, &format!("delete port {id}")).await
        })
    }

    fn list_security_groups<'a>(
        &'a self,
        name: Option<&'a str>,
    ) -> CloudFuture<'a, Vec<SecurityGroup>> {
        Box::pin(async move {
            let req = neutron("list_security_groups", Method::GET, "/security-groups")
                .query_opt("name", name);
            self.list_all(req, "security_groups", "list security groups")
                .await
        })
    }

    fn create_floating_ip<'a>(
        &'a self,
        request: &'a CreateFloatingIp,
    ) -> CloudFuture<'a, FloatingIp> {
        Box::pin(async move {
            let mut body = json!({"floating_network_id": request.floating_network});
            if let Some(port) = &request.port {
                body["port_id"] = json!(port);
            }
            if let Some(d) = &request.description {
                body["description"] = json!(d);
            }
            let req = neutron("create_floating_ip", Method::POST, "/floatingips")
                .json(json!({"floatingip": body}));
            let action = format!("create floating IP on network {}", request.floating_network);
            let created = self.fetch(&req, "floatingip", &action).await;
            self.forget_on_refusal(created, &[Kind::Network])
        })
    }

    fn get_floating_ip<'a>(&'a self, id: &'a FloatingIpId) -> CloudFuture<'a, FloatingIp> {
        Box::pin(async move {
            let req = neutron("get_floating_ip", Method::GET, format!("/floatingips/{id}"));
            self.fetch(&req, "floatingip", &format!("get floating IP {id}"))
                .await
        })
    }

    fn list_floating_ips<'a>(
        &'a self,
        filter: &'a FloatingIpFilter,
    ) -> CloudFuture<'a, Vec<FloatingIp>> {
        Box::pin(async move {
            let req = neutron("list_floating_ips", Method::GET, "/floatingips")
                .query_opt("port_id", filter.port_id.as_ref().map(|p| p.to_string()))
                .query_opt("floating_ip_address", filter.floating_ip_address.as_deref())
                .query_opt("description", filter.description.as_deref());
            self.list_all(req, "floatingips", "list floating IPs").await
        })
    }

    fn update_floating_ip<'a>(
        &'a self,
        id: &'a FloatingIpId,
        port: Option<&'a PortId>,
    ) -> CloudFuture<'a, FloatingIp> {
        Box::pin(async move {
            let req = neutron(
                "update_floating_ip",
                Method::PUT,
                format!("/floatingips/{id}"),
            )
            .json(json!({"floatingip": {"port_id": port}}));
            let action = match port {
                Some(p) => format!("associate floating IP {id} with port {p}"),
                None => format!("disassociate floating IP {id}"),
            };
            self.fetch(&req, "floatingip", &action).await
        })
    }

    fn set_floating_ip_description<'a>(
        &'a self,
        id: &'a FloatingIpId,
        description: &'a str,
    ) -> CloudFuture<'a, FloatingIp> {
        Box::pin(async move {
            let req = neutron(
                "set_floating_ip_description",
                Method::PUT,
                format!("/floatingips/{id}"),
            )
            .json(json!({"floatingip": {"description": description}}))
            .idempotent();
            self.fetch(
                &req,
                "floatingip",
                &format!("set the description of floating IP {id}"),
            )
            .await
        })
    }

    fn delete_floating_ip<'a>(&'a self, id: &'a FloatingIpId) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = neutron(
                "delete_floating_ip",
                Method::DELETE,
                format!("/floatingips/{id}"),
            );
            self.execute(&req, &format!("release floating IP {id}"))
                .await
        })
    }
}

impl OpenStackClient {
    /// A network by ID or name, asking the cloud.
    async fn network_find(&self, name_or_id: &str) -> CloudResult<Network> {
        if looks_like_uuid(name_or_id) {
            match self.get_network(&NetworkId::new(name_or_id)).await {
                Err(e) if e.is_not_found() => {}
                other => return other,
            }
        }
        let named = self.list_networks(Some(name_or_id)).await?;
        pick_one(Resource::Network, name_or_id, named, |n| n.id.to_string())
            .map_err(|k| CloudError::new(format!("find network {name_or_id}"), k))
    }

    /// A security group by name (an ID is taken as it is: Neutron checks it on use).
    async fn security_group_find(&self, name_or_id: &str) -> CloudResult<SecurityGroup> {
        if looks_like_uuid(name_or_id) {
            return Ok(SecurityGroup {
                id: name_or_id.to_owned(),
                name: String::new(),
            });
        }
        let named = self.list_security_groups(Some(name_or_id)).await?;
        pick_one(Resource::SecurityGroup, name_or_id, named, |g| g.id.clone())
            .map_err(|k| CloudError::new(format!("find security group {name_or_id}"), k))
    }

    /// A subnet by ID or name, asking the cloud.
    async fn subnet_find(&self, name_or_id: &str) -> CloudResult<Subnet> {
        if looks_like_uuid(name_or_id) {
            match self.get_subnet(&SubnetId::new(name_or_id)).await {
                Err(e) if e.is_not_found() => {}
                other => return other,
            }
        }
        let filter = SubnetFilter {
            name: Some(name_or_id.to_owned()),
            network_id: None,
        };
        let named = self.list_subnets(&filter).await?;
        pick_one(Resource::Subnet, name_or_id, named, |s| s.id.to_string())
            .map_err(|k| CloudError::new(format!("find subnet {name_or_id}"), k))
    }
}
