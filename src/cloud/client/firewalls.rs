//! Neutron's security groups, their rules and address groups
//! (`sim/neutron-security-groups.md` records the real Neutron's answers).

use http::Method;
use serde_json::{Value, json};

use super::OpenStackClient;
use crate::cloud::auth::Service;
use crate::cloud::model::firewall::{
    AddressGroup, CreateAddressGroup, CreateFirewall, CreateRule, Firewall, Remote, Rule,
};
use crate::cloud::services::{CloudFuture, Firewalls};
use crate::cloud::transport::Request;

fn neutron(op: &'static str, method: Method, path: impl Into<String>) -> Request {
    Request::new(Service::Network, op, method, path)
}

impl Firewalls for OpenStackClient {
    fn security_groups_named<'a>(&'a self, name: &'a str) -> CloudFuture<'a, Vec<Firewall>> {
        Box::pin(async move {
            let req = neutron("list_security_groups", Method::GET, "/security-groups")
                .query("name", name);
            let action = format!("list the security groups named {name}");
            self.list_all(req, "security_groups", &action).await
        })
    }

    fn all_security_groups(&self) -> CloudFuture<'_, Vec<Firewall>> {
        Box::pin(async move {
            let req = neutron("list_security_groups", Method::GET, "/security-groups");
            self.list_all(req, "security_groups", "list the security groups")
                .await
        })
    }

    fn get_security_group<'a>(&'a self, id: &'a str) -> CloudFuture<'a, Firewall> {
        Box::pin(async move {
            let req = neutron(
                "get_security_group",
                Method::GET,
                format!("/security-groups/{id}"),
            );
            let action = format!("show security group {id}");
            self.fetch(&req, "security_group", &action).await
        })
    }

    fn create_security_group<'a>(
        &'a self,
        request: &'a CreateFirewall,
    ) -> CloudFuture<'a, Firewall> {
        Box::pin(async move {
            let mut body = json!({"name": request.name, "description": request.description});
            if let Some(stateful) = request.stateful {
                body["stateful"] = json!(stateful);
            }
            let req = neutron("create_security_group", Method::POST, "/security-groups")
                .json(json!({"security_group": body}));
            let action = format!("create security group {}", request.name);
            self.fetch(&req, "security_group", &action).await
        })
    }

    fn set_security_group_description<'a>(
        &'a self,
        id: &'a str,
        description: &'a str,
    ) -> CloudFuture<'a, Firewall> {
        Box::pin(async move {
            let req = neutron(
                "update_security_group",
                Method::PUT,
                format!("/security-groups/{id}"),
            )
            .json(json!({"security_group": {"description": description}}))
            .idempotent();
            let action = format!("update security group {id}");
            self.fetch(&req, "security_group", &action).await
        })
    }

    fn delete_security_group<'a>(&'a self, id: &'a str) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = neutron(
                "delete_security_group",
                Method::DELETE,
                format!("/security-groups/{id}"),
            );
            self.execute(&req, &format!("delete security group {id}"))
                .await
        })
    }

    fn create_rule<'a>(&'a self, request: &'a CreateRule) -> CloudFuture<'a, Rule> {
        Box::pin(async move {
            let req = neutron(
                "create_security_group_rule",
                Method::POST,
                "/security-group-rules",
            )
            .json(json!({"security_group_rule": rule_body(request)}));
            let action = format!(
                "create a rule of security group {}",
                request.security_group_id
            );
            self.fetch(&req, "security_group_rule", &action).await
        })
    }

    fn delete_rule<'a>(&'a self, id: &'a str) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = neutron(
                "delete_security_group_rule",
                Method::DELETE,
                format!("/security-group-rules/{id}"),
            );
            self.execute(&req, &format!("delete security group rule {id}"))
                .await
        })
    }

    fn address_groups_named<'a>(&'a self, name: &'a str) -> CloudFuture<'a, Vec<AddressGroup>> {
        Box::pin(async move {
            let req =
                neutron("list_address_groups", Method::GET, "/address-groups").query("name", name);
            let action = format!("list the address groups named {name}");
            self.list_all(req, "address_groups", &action).await
        })
    }

    fn create_address_group<'a>(
        &'a self,
        request: &'a CreateAddressGroup,
    ) -> CloudFuture<'a, AddressGroup> {
        Box::pin(async move {
            let body = json!({"address_group": {
                "name": request.name,
                "description": request.description,
                "addresses": request.addresses,
            }});
            let req = neutron("create_address_group", Method::POST, "/address-groups").json(body);
            let action = format!("create address group {}", request.name);
            self.fetch(&req, "address_group", &action).await
        })
    }

    fn change_addresses<'a>(
        &'a self,
        id: &'a str,
        add: bool,
        addresses: &'a [String],
    ) -> CloudFuture<'a, AddressGroup> {
        Box::pin(async move {
            let (op, verb) = match add {
                true => ("add_address_group_addresses", "add_addresses"),
                false => ("remove_address_group_addresses", "remove_addresses"),
            };
            let req = neutron(op, Method::PUT, format!("/address-groups/{id}/{verb}"))
                .json(json!({"addresses": addresses}))
                .idempotent();
            let action = format!("{} addresses of address group {id}", verb.replace('_', " "));
            self.fetch(&req, "address_group", &action).await
        })
    }

    fn delete_address_group<'a>(&'a self, id: &'a str) -> CloudFuture<'a, ()> {
        Box::pin(async move {
            let req = neutron(
                "delete_address_group",
                Method::DELETE,
                format!("/address-groups/{id}"),
            );
            self.execute(&req, &format!("delete address group {id}"))
                .await
        })
    }

    fn ports_using<'a>(&'a self, id: &'a str) -> CloudFuture<'a, Vec<String>> {
        Box::pin(async move {
            #[derive(serde::Deserialize)]
            struct Using {
                id: String,
            }
            let req = neutron("list_ports", Method::GET, "/ports")
                .query("security_groups", id)
                .query("fields", "id");
            let action = format!("list the ports in security group {id}");
            let ports: Vec<Using> = self.list_all(req, "ports", &action).await?;
            Ok(ports.into_iter().map(|p| p.id).collect())
        })
    }
}

/// The rule's body: Neutron takes one remote at most, and no ports without a protocol.
fn rule_body(request: &CreateRule) -> Value {
    let shape = &request.shape;
    let mut body = json!({
        "security_group_id": request.security_group_id,
        "direction": shape.direction,
        "ethertype": shape.ethertype,
    });
    if let Some(protocol) = &shape.protocol {
        body["protocol"] = json!(protocol);
    }
    if let Some((low, high)) = shape.ports {
        body["port_range_min"] = json!(low);
        body["port_range_max"] = json!(high);
    }
    match &shape.remote {
        Remote::Anyone => {}
        Remote::Cidr(cidr) => body["remote_ip_prefix"] = json!(cidr),
        Remote::Group(id) => body["remote_group_id"] = json!(id),
        Remote::AddressGroup(id) => body["remote_address_group_id"] = json!(id),
    }
    if let Some(description) = &request.description {
        body["description"] = json!(description);
    }
    body
}
