//! Neutron ports made by the user, and Nova servers booted on them, answered as the
//! real Neutron 29 and Nova 34 answered (`sim/neutron-ports.md`): fixed IPs, allowed
//! address pairs and security groups, the refusals in Neutron's words, the policy on
//! networks the project does not own, and a port outliving its server.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use reqwest::{Method, Response};
use serde_json::{Value, json};
use sim_support::{Client, json_of};
use verda_operator::sim::{Fault, FaultKind};

/// The shared `private` network of the default project (the admin's).
const PRIVATE: &str = "89908bff-e0fe-45be-b92d-5828f5ddc763";
const PRIVATE_SUBNET: &str = "3d5443ce-8418-4529-a819-73f717122551";

/// Creates network `name` with subnet 10.20.0.0/24 in the caller's project, as
/// `openstack network create` and `openstack subnet create` send it: (network, subnet).
async fn own_network(c: &Client, name: &str) -> (String, String) {
    let net = c
        .req(Method::POST, "/network/v2.0/networks")
        .json(&json!({"network": {"name": name, "admin_state_up": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(net.status(), 201);
    let net = json_of(net).await["network"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let subnet = json!({"subnet": {"network_id": net, "cidr": "10.20.0.0/24", "ip_version": 4, "name": name}});
    let subnet = post(c, "subnets", subnet).await;
    assert_eq!(subnet.status(), 201);
    let subnet = json_of(subnet).await["subnet"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (net, subnet)
}

async fn post(c: &Client, collection: &str, body: Value) -> Response {
    let path = format!("/network/v2.0/{collection}");
    c.req(Method::POST, &path).json(&body).send().await.unwrap()
}

async fn port(c: &Client, body: Value) -> Response {
    post(c, "ports", json!({ "port": body })).await
}

/// A port that must be created; its body.
async fn made(c: &Client, body: Value) -> Value {
    let resp = port(c, body).await;
    assert_eq!(resp.status(), 201);
    json_of(resp).await["port"].clone()
}

async fn get(c: &Client, path: &str) -> Value {
    let resp = c.req(Method::GET, path).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{path}");
    json_of(resp).await
}

fn neutron_error(kind: &str, message: &str) -> Value {
    json!({"NeutronError": {"type": kind, "message": message, "detail": ""}})
}

async fn refused(resp: Response, status: u16, kind: &str, message: &str) {
    assert_eq!(resp.status(), status);
    assert_eq!(json_of(resp).await, neutron_error(kind, message));
}

async fn default_group(c: &Client) -> String {
    let groups = get(c, "/network/v2.0/security-groups?name=default").await;
    groups["security_groups"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn port_is_created_with_its_fixed_ip_address_pair_and_the_default_group() {
    let c = Client::fast().await;
    let (net, subnet) = own_network(&c, "db-net").await;
    let p = made(
        &c,
        json!({"network_id": net, "name": "probe-0-private", "description": "verda-uid-x",
               "tags": ["verda-uid-abc"], "fixed_ips": [{"ip_address": "10.20.0.50"}],
               "allowed_address_pairs": [{"ip_address": "10.20.0.100"}]}),
    )
    .await;
    let project = c.sim.credentials().project_id;
    let mac = p["mac_address"].as_str().unwrap();
    assert!(mac.starts_with("fa:16:3e:"), "{mac}");
    assert_eq!(
        p["fixed_ips"],
        json!([{"subnet_id": subnet, "ip_address": "10.20.0.50"}])
    );
    assert_eq!(
        p["allowed_address_pairs"],
        json!([{"mac_address": mac, "ip_address": "10.20.0.100"}])
    );
    assert_eq!(p["security_groups"], json!([default_group(&c).await]));
    for (key, want) in [
        ("name", json!("probe-0-private")),
        ("network_id", json!(net)),
        ("project_id", json!(project)),
        ("tenant_id", json!(project)),
        ("status", json!("DOWN")),
        ("admin_state_up", json!(true)),
        ("device_id", json!("")),
        ("device_owner", json!("")),
        ("description", json!("verda-uid-x")),
        ("tags", json!([])),
        ("port_security_enabled", json!(true)),
        ("binding:vnic_type", json!("normal")),
        ("extra_dhcp_opts", json!([])),
        ("revision_number", json!(1)),
    ] {
        assert_eq!(p[key], want, "{key}");
    }
    assert_eq!(p["created_at"], p["updated_at"]);
}

#[tokio::test]
async fn port_without_an_address_gets_the_lowest_free_one_of_the_subnet() {
    let c = Client::fast().await;
    let (net, subnet) = own_network(&c, "db-net").await;
    let first = made(&c, json!({"network_id": net})).await;
    assert_eq!(first["fixed_ips"][0]["ip_address"], "10.20.0.2");
    let second = made(
        &c,
        json!({"network_id": net, "fixed_ips": [{"subnet_id": subnet}]}),
    )
    .await;
    assert_eq!(
        second["fixed_ips"],
        json!([{"subnet_id": subnet, "ip_address": "10.20.0.3"}])
    );
}

#[tokio::test]
async fn address_taken_is_refused_as_already_allocated() {
    let c = Client::fast().await;
    let (net, subnet) = own_network(&c, "db-net").await;
    let at = json!({"network_id": net, "fixed_ips": [{"ip_address": "10.20.0.50"}]});
    made(&c, at.clone()).await;
    let msg = format!("IP address 10.20.0.50 already allocated in subnet {subnet}");
    refused(port(&c, at).await, 409, "IpAddressAlreadyAllocated", &msg).await;
}

#[tokio::test]
async fn address_outside_the_subnets_or_at_their_edges_is_invalid_for_the_network() {
    let c = Client::fast().await;
    let (net, _) = own_network(&c, "db-net").await;
    for ip in ["10.9.0.50", "10.20.0.0", "10.20.0.255"] {
        let body = json!({"network_id": net, "fixed_ips": [{"ip_address": ip}]});
        let msg = format!(
            "IP address {ip} is not a valid IP for any of the subnets on the specified network."
        );
        refused(port(&c, body).await, 400, "InvalidIpForNetwork", &msg).await;
    }
    let gateway = json!({"network_id": net, "fixed_ips": [{"ip_address": "10.20.0.1"}]});
    assert_eq!(
        made(&c, gateway).await["fixed_ips"][0]["ip_address"],
        "10.20.0.1"
    );
}

#[tokio::test]
async fn malformed_address_is_invalid_input_for_fixed_ips() {
    let c = Client::fast().await;
    let (net, _) = own_network(&c, "db-net").await;
    let body = json!({"network_id": net, "fixed_ips": [{"ip_address": "banana"}]});
    let msg = "Invalid input for fixed_ips. Reason: 'banana' is not a valid IP address.";
    refused(port(&c, body).await, 400, "HTTPBadRequest", msg).await;
}

#[tokio::test]
async fn network_id_must_be_a_uuid() {
    let c = Client::fast().await;
    let msg = "Invalid input for network_id. Reason: 'nonexist' is not a valid UUID.";
    let body = json!({"network_id": "nonexist"});
    refused(port(&c, body).await, 400, "HTTPBadRequest", msg).await;
}

#[tokio::test]
async fn security_groups_on_a_port_are_ids_not_names() {
    let c = Client::fast().await;
    let (net, _) = own_network(&c, "db-net").await;
    let body = json!({"network_id": net, "security_groups": ["default"]});
    let msg = "Invalid input for security_groups. Reason: 'default' is not a valid UUID.";
    refused(port(&c, body).await, 400, "HTTPBadRequest", msg).await;
}

#[tokio::test]
async fn security_group_is_found_by_name_with_only_the_fields_asked() {
    let c = Client::fast().await;
    let path = "/network/v2.0/security-groups?name=default&fields=id&fields=name";
    let listed = get(&c, path).await;
    let id = listed["security_groups"][0]["id"].as_str().unwrap();
    assert_eq!(
        listed,
        json!({"security_groups": [{"id": id, "name": "default"}]})
    );
}

#[tokio::test]
async fn added_security_group_is_listed_and_used_by_a_port() {
    let c = Client::fast().await;
    let project = c.sim.credentials().project_id;
    let id = c.sim.add_security_group(&project, "db");
    let listed = get(&c, "/network/v2.0/security-groups?name=db&fields=id").await;
    assert_eq!(listed, json!({"security_groups": [{"id": id}]}));
    let (net, _) = own_network(&c, "db-net").await;
    let p = made(&c, json!({"network_id": net, "security_groups": [id]})).await;
    assert_eq!(p["security_groups"], json!([id]));
    let other = c.sim.team_credentials().project_id;
    assert!(c.sim.ports_in(&other).is_empty(), "another project's world");
}

#[tokio::test]
async fn member_may_not_choose_addresses_on_a_network_it_does_not_own() {
    let c = Client::fast().await;
    let fixed = json!([{"ip_address": "10.0.0.50"}]);
    let pairs = json!([{"ip_address": "10.0.0.100"}]);
    let fixed_rule = "(rule:create_port:fixed_ips and (rule:create_port:fixed_ips:ip_address))";
    let pairs_rule = "(rule:create_port:allowed_address_pairs and (rule:create_port:allowed_address_pairs:ip_address))";
    for (body, rule) in [
        (
            json!({"network_id": PRIVATE, "fixed_ips": fixed}),
            format!("(rule:create_port and {fixed_rule})"),
        ),
        (
            json!({"network_id": PRIVATE, "allowed_address_pairs": pairs}),
            format!("(rule:create_port and {pairs_rule})"),
        ),
        (
            json!({"network_id": PRIVATE, "fixed_ips": fixed, "allowed_address_pairs": pairs}),
            format!("((rule:create_port and {fixed_rule}) and {pairs_rule})"),
        ),
    ] {
        let msg = format!("{rule} is disallowed by policy");
        refused(port(&c, body).await, 403, "PolicyNotAuthorized", &msg).await;
    }
    assert!(c.sim.ports().is_empty(), "nothing was created");
}

#[tokio::test]
async fn member_may_take_a_free_address_of_a_shared_network_it_does_not_own() {
    let c = Client::fast().await;
    let any = made(&c, json!({"network_id": PRIVATE})).await;
    assert_eq!(any["fixed_ips"][0]["subnet_id"], PRIVATE_SUBNET);
    let subnet = json!({"network_id": PRIVATE, "fixed_ips": [{"subnet_id": PRIVATE_SUBNET}]});
    assert_eq!(made(&c, subnet).await["network_id"], PRIVATE);
}

#[tokio::test]
async fn network_and_subnet_created_by_the_project_are_its_own() {
    let c = Client::fast().await;
    let (net, subnet) = own_network(&c, "db-net").await;
    let project = c.sim.credentials().project_id;
    let n = get(&c, &format!("/network/v2.0/networks/{net}")).await["network"].clone();
    assert_eq!(
        (&n["project_id"], &n["shared"], &n["subnets"]),
        (&json!(project), &json!(false), &json!([subnet]))
    );
    let s = get(&c, &format!("/network/v2.0/subnets/{subnet}")).await["subnet"].clone();
    assert_eq!(s["gateway_ip"], "10.20.0.1");
    assert_eq!(
        s["allocation_pools"],
        json!([{"start": "10.20.0.2", "end": "10.20.0.254"}])
    );
    assert_eq!(s["project_id"], json!(project));
    let private = get(&c, &format!("/network/v2.0/networks/{PRIVATE}")).await;
    assert_ne!(private["network"]["project_id"], json!(project));
}

#[tokio::test]
async fn port_update_replaces_pairs_and_groups_and_moves_the_revision() {
    let c = Client::fast().await;
    let (net, _) = own_network(&c, "db-net").await;
    let p = made(
        &c,
        json!({"network_id": net, "allowed_address_pairs": [{"ip_address": "10.20.0.100"}]}),
    )
    .await;
    // Timestamps have whole seconds: wait for the next one.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let id = p["id"].as_str().unwrap();
    let resp = c
        .req(Method::PUT, &format!("/network/v2.0/ports/{id}"))
        .json(&json!({"port": {"allowed_address_pairs": [{"ip_address": "10.20.0.101"}], "security_groups": []}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let u = json_of(resp).await["port"].clone();
    assert_eq!(
        u["allowed_address_pairs"],
        json!([{"mac_address": p["mac_address"], "ip_address": "10.20.0.101"}])
    );
    assert_eq!(u["security_groups"], json!([]));
    assert_eq!(u["fixed_ips"], p["fixed_ips"]);
    assert_eq!(u["revision_number"], 2);
    assert_ne!(u["updated_at"], p["updated_at"]);
    assert_eq!(u["created_at"], p["created_at"]);
}

#[tokio::test]
async fn port_update_on_a_network_not_owned_is_refused_by_update_port_policy() {
    let c = Client::fast().await;
    let p = made(&c, json!({"network_id": PRIVATE})).await;
    let id = p["id"].as_str().unwrap();
    let resp = c
        .req(Method::PUT, &format!("/network/v2.0/ports/{id}"))
        .json(&json!({"port": {"allowed_address_pairs": [{"ip_address": "10.0.0.101"}]}}))
        .send()
        .await
        .unwrap();
    let msg = "(rule:update_port and (rule:update_port:allowed_address_pairs and (rule:update_port:allowed_address_pairs:ip_address))) is disallowed by policy";
    refused(resp, 403, "PolicyNotAuthorized", msg).await;
}

#[tokio::test]
async fn port_delete_frees_its_address_and_a_second_delete_is_not_found() {
    let c = Client::fast().await;
    let (net, _) = own_network(&c, "db-net").await;
    let at = json!({"network_id": net, "fixed_ips": [{"ip_address": "10.20.0.50"}]});
    let id = made(&c, at.clone()).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let delete = || async {
        let path = format!("/network/v2.0/ports/{id}");
        c.req(Method::DELETE, &path).send().await.unwrap()
    };
    assert_eq!(delete().await.status(), 204);
    made(&c, at).await;
    let msg = format!("Port {id} could not be found.");
    refused(delete().await, 404, "PortNotFound", &msg).await;
}

#[tokio::test]
async fn repeated_description_filter_matches_any_of_the_values() {
    let c = Client::fast().await;
    let (net, _) = own_network(&c, "db-net").await;
    for d in ["verda-uid-a", "verda-uid-b", "verda-uid-c"] {
        made(&c, json!({"network_id": net, "description": d})).await;
    }
    let path = "/network/v2.0/ports?description=verda-uid-a&description=verda-uid-b";
    let listed = get(&c, path).await;
    let found: Vec<&str> = listed["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["description"].as_str().unwrap())
        .collect();
    assert_eq!(found, ["verda-uid-a", "verda-uid-b"]);
}

/// `POST /servers` of `name` on `networks`, with the `web` group asked for.
async fn boot(c: &Client, name: &str, networks: Value) -> Response {
    let server = json!({"server": {"name": name, "imageRef": "244965c2-7e98-469d-b7cc-fe423698200a",
        "flavorRef": "10", "networks": networks, "security_groups": [{"name": "web"}]}});
    let req = c.nova(Method::POST, "/servers", 64).json(&server);
    req.send().await.unwrap()
}

async fn server_id(resp: Response) -> String {
    assert_eq!(resp.status(), 202);
    json_of(resp).await["server"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn server_booted_on_a_port_binds_it_and_shows_its_address() {
    let c = Client::fast().await;
    let (net, _) = own_network(&c, "db-net").await;
    let p = made(
        &c,
        json!({"network_id": net, "fixed_ips": [{"ip_address": "10.20.0.50"}]}),
    )
    .await;
    let port_id = p["id"].as_str().unwrap();
    let id = server_id(boot(&c, "db-0", json!([{"port": port_id}])).await).await;
    let server = c.wait_server(&id).await;
    assert_eq!(server["status"], "ACTIVE");
    let addr = &server["addresses"]["db-net"][0];
    assert_eq!(addr["addr"], "10.20.0.50");
    assert_eq!(addr["OS-EXT-IPS-MAC:mac_addr"], p["mac_address"]);
    // The request's groups are not applied to a port of the user's.
    assert_eq!(server["security_groups"], json!([{"name": "default"}]));
    let bound = get(&c, &format!("/network/v2.0/ports/{port_id}")).await["port"].clone();
    assert_eq!(bound["device_id"], json!(id));
    assert_eq!(bound["device_owner"], "compute:nova");
    assert_eq!(bound["status"], "ACTIVE");
    assert_eq!(bound["security_groups"], p["security_groups"]);
}

#[tokio::test]
async fn port_in_use_is_refused_by_nova() {
    let c = Client::fast().await;
    let (net, _) = own_network(&c, "db-net").await;
    let p = made(&c, json!({"network_id": net})).await;
    let port_id = p["id"].as_str().unwrap();
    server_id(boot(&c, "db-0", json!([{"port": port_id}])).await).await;
    let resp = boot(&c, "db-1", json!([{"port": port_id}])).await;
    assert_eq!(resp.status(), 409);
    let msg = format!("Port {port_id} is still in use.");
    assert_eq!(
        json_of(resp).await,
        json!({"conflictingRequest": {"code": 409, "message": msg}})
    );
}

#[tokio::test]
async fn unknown_port_is_refused_by_nova() {
    let c = Client::fast().await;
    let unknown = "00000000-0000-0000-0000-000000000000";
    let resp = boot(&c, "db-0", json!([{"port": unknown}])).await;
    assert_eq!(resp.status(), 400);
    let msg = format!("Port id {unknown} could not be found.");
    assert_eq!(
        json_of(resp).await,
        json!({"badRequest": {"code": 400, "message": msg}})
    );
}

#[tokio::test]
async fn server_delete_keeps_the_users_port_unbound_and_deletes_novas_own() {
    let c = Client::fast().await;
    let (net, _) = own_network(&c, "db-net").await;
    let p = made(&c, json!({"network_id": net})).await;
    let port_id = p["id"].as_str().unwrap();
    let nics = json!([{"port": port_id}, {"uuid": PRIVATE}]);
    let id = server_id(boot(&c, "db-0", nics).await).await;
    let server = c.wait_server(&id).await;
    assert_eq!(
        server["security_groups"],
        json!([{"name": "default"}, {"name": "web"}])
    );
    let by_server = format!("/network/v2.0/ports?device_id={id}");
    assert_eq!(
        get(&c, &by_server).await["ports"].as_array().unwrap().len(),
        2
    );
    let del = c.nova(Method::DELETE, &format!("/servers/{id}"), 64);
    assert_eq!(del.send().await.unwrap().status(), 204);
    for _ in 0..200 {
        if c.sim.servers().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(c.sim.servers().is_empty(), "server {id} is gone");
    assert_eq!(get(&c, &by_server).await, json!({"ports": []}));
    let kept = get(&c, &format!("/network/v2.0/ports/{port_id}")).await["port"].clone();
    assert_eq!(
        (&kept["device_id"], &kept["device_owner"], &kept["status"]),
        (&json!(""), &json!(""), &json!("DOWN"))
    );
    assert_eq!(kept["fixed_ips"], p["fixed_ips"]);
}

/// Recorded on the real systems: Neutron frozen while Nova deletes a server leaves the
/// user's port bound to a server that no longer exists; its owner clears the binding
/// (`device_id` and `device_owner` set to "").
#[tokio::test]
async fn a_server_deleted_while_neutron_is_down_leaves_the_binding_for_the_owner_to_clear() {
    let c = Client::fast().await;
    let (net, _) = own_network(&c, "db-net").await;
    let p = made(&c, json!({"network_id": net})).await;
    let port_id = p["id"].as_str().unwrap();
    let id = server_id(boot(&c, "db-0", json!([{"port": port_id}])).await).await;
    c.wait_server(&id).await;
    c.sim
        .inject(Fault::new("network", None, FaultKind::Status(503)));
    c.sim.delete_server_out_of_band(&id);
    c.sim.clear_faults();
    let path = format!("/network/v2.0/ports/{port_id}");
    let left = get(&c, &path).await["port"].clone();
    assert_eq!(
        (&left["device_id"], &left["device_owner"]),
        (&json!(id), &json!("compute:nova"))
    );
    let unbind = json!({"port": {"device_id": "", "device_owner": ""}});
    let cleared = c
        .req(Method::PUT, &path)
        .json(&unbind)
        .send()
        .await
        .unwrap();
    assert_eq!(cleared.status(), 200);
    let port = json_of(cleared).await["port"].clone();
    assert_eq!(
        (&port["device_id"], &port["device_owner"], &port["status"]),
        (&json!(""), &json!(""), &json!("DOWN"))
    );
    let again = server_id(boot(&c, "db-1", json!([{"port": port_id}])).await).await;
    assert_eq!(get(&c, &path).await["port"]["device_id"], json!(again));
}

/// The operator's listing of its project's port records: `project_id` filters, and
/// `fields` keeps only what was asked (Neutron answers a port without a description
/// with an empty one).
#[tokio::test]
async fn project_ports_are_listed_with_only_the_fields_asked() {
    let c = Client::fast().await;
    let project = c.sim.credentials().project_id;
    let (net, _) = own_network(&c, "db-net").await;
    let p = made(&c, json!({"network_id": net, "description": "verda-uid-a"})).await;
    let id = p["id"].as_str().expect("an ID");
    let path = format!(
        "/network/v2.0/ports?project_id={project}&fields=id&fields=network_id&fields=description"
    );
    let listed = get(&c, &path).await;
    let ours: Vec<&Value> = listed["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter(|p| p["id"] == id)
        .collect();
    assert_eq!(
        ours,
        [&json!({"id": id, "network_id": net, "description": "verda-uid-a"})]
    );
    let other = c.sim.team_credentials().project_id;
    let theirs = get(
        &c,
        &format!("/network/v2.0/ports?project_id={other}&fields=id"),
    )
    .await;
    assert_eq!(theirs, json!({"ports": []}));
}
