//! Octavia wire tests: PENDING_* → ACTIVE, 409 while immutable, batch member update,
//! member operating status from Nova, status tree, filters, cascade delete.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sim_support::{Client, json_of};
use verda_operator::sim::SimConfig;

const SUBNET: &str = "3d5443ce-8418-4529-a819-73f717122551";
const LB: &str = "/load-balancer/v2/lbaas";

fn slow() -> SimConfig {
    SimConfig {
        lb_delay: Duration::from_millis(300),
        ..SimConfig::fast()
    }
}

async fn post(c: &Client, path: &str, body: Value) -> reqwest::Response {
    c.req(Method::POST, &format!("{LB}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

pub(crate) async fn get(c: &Client, path: &str) -> Value {
    json_of(
        c.req(Method::GET, &format!("{LB}{path}"))
            .send()
            .await
            .unwrap(),
    )
    .await
}

pub(crate) async fn wait_active(c: &Client, lb: &str) {
    for _ in 0..400 {
        if get(c, &format!("/loadbalancers/{lb}")).await["loadbalancer"]["provisioning_status"]
            == "ACTIVE"
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("load balancer {lb} did not become ACTIVE");
}

async fn create_lb(c: &Client, name: &str) -> String {
    let resp = post(
        c,
        "/loadbalancers",
        json!({"loadbalancer": {"name": name, "vip_subnet_id": SUBNET, "tags": ["owner-1"]}}),
    )
    .await;
    assert_eq!(resp.status(), 201);
    let body = json_of(resp).await;
    assert_eq!(
        body["loadbalancer"]["provisioning_status"],
        "PENDING_CREATE"
    );
    body["loadbalancer"]["id"].as_str().unwrap().to_string()
}

/// LB + HTTP:80 listener + pool (+ monitor if asked), all ACTIVE.
async fn stack(c: &Client, monitor: bool) -> (String, String) {
    let lb = create_lb(c, "web").await;
    wait_active(c, &lb).await;
    let l = json_of(
        post(
            c,
            "/listeners",
            json!({"listener": {"loadbalancer_id": lb, "protocol": "HTTP", "protocol_port": 80}}),
        )
        .await,
    )
    .await;
    wait_active(c, &lb).await;
    let body = json!({"pool": {"listener_id": l["listener"]["id"], "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}});
    let pool = json_of(post(c, "/pools", body).await).await["pool"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_active(c, &lb).await;
    if monitor {
        let hm = json!({"healthmonitor": {"pool_id": pool, "type": "HTTP", "delay": 5, "timeout": 3, "max_retries": 3, "url_path": "/health"}});
        assert_eq!(post(c, "/healthmonitors", hm).await.status(), 201);
        wait_active(c, &lb).await;
    }
    (lb, pool)
}

#[tokio::test]
async fn load_balancer_goes_active_with_vip_from_subnet_and_port_in_neutron() {
    let c = Client::fast().await;
    let lb = create_lb(&c, "vip").await;
    wait_active(&c, &lb).await;
    let body = get(&c, &format!("/loadbalancers/{lb}")).await;
    let vip = body["loadbalancer"]["vip_address"].as_str().unwrap();
    assert!(vip.starts_with("10.0."));
    let port = body["loadbalancer"]["vip_port_id"].as_str().unwrap();
    let resp = c
        .req(Method::GET, &format!("/network/v2.0/ports/{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(resp).await["port"]["fixed_ips"][0]["ip_address"],
        vip
    );
}

#[tokio::test]
async fn child_write_while_pending_is_409_with_recorded_body() {
    let c = Client::start(slow()).await;
    let lb = create_lb(&c, "busy").await;
    let resp = post(
        &c,
        "/listeners",
        json!({"listener": {"loadbalancer_id": lb, "protocol": "HTTP", "protocol_port": 80}}),
    )
    .await;
    assert_eq!(resp.status(), 409);
    assert_eq!(
        json_of(resp).await,
        json!({"faultcode": "Client", "faultstring": format!("Load Balancer {lb} is immutable and cannot be updated."), "debuginfo": null})
    );
    let resp = c
        .req(Method::PUT, &format!("{LB}/loadbalancers/{lb}"))
        .json(&json!({"loadbalancer": {"description": "b"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 409);
    assert_eq!(
        json_of(resp).await["faultstring"],
        format!("Invalid state PENDING_CREATE of loadbalancer resource {lb}")
    );
}

#[tokio::test]
async fn member_write_right_after_batch_update_names_the_pool() {
    let c = Client::start(SimConfig {
        lb_delay: Duration::from_millis(400),
        ..SimConfig::fast()
    })
    .await;
    let (_, pool) = stack(&c, false).await;
    let members = json!({"members": [{"address": "10.0.0.11", "protocol_port": 8080}]});
    let resp = c
        .req(Method::PUT, &format!("{LB}/pools/{pool}/members"))
        .json(&members)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    assert!(resp.headers().get("content-type").is_none());
    let again = c
        .req(Method::PUT, &format!("{LB}/pools/{pool}/members"))
        .json(&members)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);
    assert_eq!(
        json_of(again).await["faultstring"],
        format!("Pool {pool} is immutable and cannot be updated.")
    );
}

#[tokio::test]
async fn batch_update_keeps_matches_adds_new_and_deletes_missing() {
    let c = Client::fast().await;
    let (lb, pool) = stack(&c, false).await;
    let first = json!({"members": [{"address": "10.0.0.11", "protocol_port": 8080}, {"address": "10.0.0.12", "protocol_port": 8080}]});
    c.req(Method::PUT, &format!("{LB}/pools/{pool}/members"))
        .json(&first)
        .send()
        .await
        .unwrap();
    wait_active(&c, &lb).await;
    let m1 = get(&c, &format!("/pools/{pool}/members")).await["members"][0]["id"].clone();
    let second = json!({"members": [{"address": "10.0.0.11", "protocol_port": 8080, "weight": 5, "monitor_port": 8081}, {"address": "10.0.0.15", "protocol_port": 8080}]});
    c.req(Method::PUT, &format!("{LB}/pools/{pool}/members"))
        .json(&second)
        .send()
        .await
        .unwrap();
    let pending = get(&c, &format!("/pools/{pool}/members")).await;
    let states: Vec<&str> = pending["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["provisioning_status"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        vec!["PENDING_UPDATE", "PENDING_CREATE", "PENDING_DELETE"]
    );
    wait_active(&c, &lb).await;
    let settled = get(&c, &format!("/pools/{pool}/members")).await;
    let members = settled["members"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    assert_eq!(
        (
            &members[0]["id"],
            &members[0]["weight"],
            &members[0]["monitor_port"]
        ),
        (&m1, &json!(5), &json!(8081))
    );
    assert_eq!(members[1]["address"], "10.0.0.15");
}

#[tokio::test]
async fn member_is_online_only_while_its_server_is_active() {
    let c = Client::fast().await;
    let server = c.create_server("backend", json!({})).await;
    let addr = c.wait_server(&server).await["addresses"]["private"][0]["addr"]
        .as_str()
        .unwrap()
        .to_string();
    let (lb, pool) = stack(&c, true).await;
    let body = json!({"members": [{"address": addr, "protocol_port": 80}, {"address": "10.0.99.99", "protocol_port": 80}]});
    c.req(Method::PUT, &format!("{LB}/pools/{pool}/members"))
        .json(&body)
        .send()
        .await
        .unwrap();
    wait_active(&c, &lb).await;
    let status = get(&c, &format!("/loadbalancers/{lb}/status")).await;
    let members = &status["statuses"]["loadbalancer"]["listeners"][0]["pools"][0]["members"];
    assert_eq!(
        (
            members[0]["operating_status"].as_str(),
            members[1]["operating_status"].as_str()
        ),
        (Some("ONLINE"), Some("ERROR"))
    );
    c.sim.set_server_error(&server);
    let status = get(&c, &format!("/loadbalancers/{lb}/status")).await;
    assert_eq!(
        status["statuses"]["loadbalancer"]["listeners"][0]["pools"][0]["members"][0]["operating_status"],
        "ERROR"
    );
}

#[tokio::test]
async fn members_without_health_monitor_report_no_monitor() {
    let c = Client::fast().await;
    let (lb, pool) = stack(&c, false).await;
    let body = json!({"members": [{"address": "10.0.0.11", "protocol_port": 80}]});
    c.req(Method::PUT, &format!("{LB}/pools/{pool}/members"))
        .json(&body)
        .send()
        .await
        .unwrap();
    wait_active(&c, &lb).await;
    assert_eq!(
        get(&c, &format!("/pools/{pool}/members")).await["members"][0]["operating_status"],
        "NO_MONITOR"
    );
}

#[tokio::test]
async fn delete_with_children_needs_cascade_and_then_disappears() {
    let c = Client::fast().await;
    let (lb, _) = stack(&c, true).await;
    let resp = c
        .req(Method::DELETE, &format!("{LB}/loadbalancers/{lb}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(
        json_of(resp).await["faultstring"],
        format!("Validation failure: Cannot delete Load Balancer {lb} - it has children")
    );
    let resp = c
        .req(
            Method::DELETE,
            &format!("{LB}/loadbalancers/{lb}?cascade=true"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    tokio::time::sleep(Duration::from_millis(40)).await;
    let resp = c
        .req(Method::GET, &format!("{LB}/loadbalancers/{lb}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert!(c.sim.load_balancers().is_empty());
    assert!(
        get(&c, "/pools").await["pools"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn lists_filter_by_tags_name_and_load_balancer() {
    let c = Client::fast().await;
    let (lb, _) = stack(&c, false).await;
    create_lb(&c, "other").await;
    assert_eq!(
        get(&c, "/loadbalancers?tags=owner-1").await["loadbalancers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        get(&c, "/loadbalancers?name=other").await["loadbalancers"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        get(&c, "/loadbalancers?name=none").await,
        json!({"loadbalancers": [], "loadbalancers_links": []})
    );
    assert_eq!(
        get(&c, &format!("/listeners?loadbalancer_id={lb}")).await["listeners"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn bad_algorithm_and_missing_vip_answer_recorded_400() {
    let c = Client::fast().await;
    let resp = post(&c, "/loadbalancers", json!({"loadbalancer": {"name": "x"}})).await;
    assert_eq!(
        json_of(resp).await["faultstring"],
        "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id."
    );
    let (_, _) = stack(&c, false).await;
    let listener = get(&c, "/listeners").await["listeners"][0]["id"].clone();
    let resp = post(
        &c,
        "/pools",
        json!({"pool": {"listener_id": listener, "protocol": "HTTP", "lb_algorithm": "FASTEST"}}),
    )
    .await;
    assert_eq!(resp.status(), 400);
    assert_eq!(
        json_of(resp).await["faultstring"],
        "Invalid input for field/attribute lb_algorithm. Value: 'FASTEST'. Value should be one of: SOURCE_IP_PORT, LEAST_CONNECTIONS, SOURCE_IP, ROUND_ROBIN"
    );
}

#[tokio::test]
async fn octavia_flavors_are_listed_by_name() {
    let c = Client::fast().await;
    let body = get(&c, "/flavors?name=generic").await;
    assert_eq!(body["flavors"].as_array().unwrap().len(), 1);
    assert_eq!(body["flavors"][0]["enabled"], true);
}

#[tokio::test]
async fn single_member_update_changes_weight_and_locks_the_pool() {
    let c = Client::fast().await;
    let (lb, pool) = stack(&c, false).await;
    let member = json!({"member": {"address": "10.0.0.11", "protocol_port": 80}});
    let created = json_of(post(&c, &format!("/pools/{pool}/members"), member).await).await;
    let id = created["member"]["id"].as_str().unwrap().to_string();
    wait_active(&c, &lb).await;
    let path = format!("{LB}/pools/{pool}/members/{id}");
    let resp = c
        .req(Method::PUT, &path)
        .json(&json!({"member": {"weight": 7}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body = json_of(resp).await;
    assert_eq!(
        (
            &body["member"]["weight"],
            &body["member"]["provisioning_status"]
        ),
        (&json!(7), &json!("PENDING_UPDATE"))
    );
    wait_active(&c, &lb).await;
    assert_eq!(
        get(&c, &format!("/pools/{pool}/members/{id}")).await["member"]["address"],
        "10.0.0.11"
    );
}

#[tokio::test]
async fn load_balancer_on_an_existing_port_keeps_that_port_after_delete() {
    let c = Client::fast().await;
    let server = c.create_server("port-owner", json!({})).await;
    let ports = c
        .req(
            Method::GET,
            &format!("/network/v2.0/ports?device_id={server}"),
        )
        .send()
        .await
        .unwrap();
    let port = json_of(ports).await["ports"][0]["id"].clone();
    let body = json!({"loadbalancer": {"name": "on-port", "vip_port_id": port}});
    let second = json_of(post(&c, "/loadbalancers", body).await).await;
    assert_eq!(second["loadbalancer"]["vip_port_id"], port);
    let id = second["loadbalancer"]["id"].as_str().unwrap().to_string();
    wait_active(&c, &id).await;
    c.req(Method::DELETE, &format!("{LB}/loadbalancers/{id}"))
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(40)).await;
    let port = port.as_str().unwrap();
    assert_eq!(
        c.req(Method::GET, &format!("/network/v2.0/ports/{port}"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

/// As the real Octavia 19 answered (`sim/nova-zones.md`): a load balancer created in an
/// availability zone echoes it (`null` without one); an unknown zone is 400.
#[tokio::test]
async fn a_load_balancers_availability_zone_answers_as_the_real_octavia() {
    let c = Client::fast().await;
    let create = |zone: &str| {
        post(
            &c,
            "/loadbalancers",
            json!({"loadbalancer": {"name": "z", "vip_subnet_id": SUBNET, "availability_zone": zone}}),
        )
    };
    let resp = create("az-1").await;
    assert_eq!(resp.status(), 201);
    assert_eq!(
        json_of(resp).await["loadbalancer"]["availability_zone"],
        "az-1"
    );
    let resp = create("az-9").await;
    assert_eq!(resp.status(), 400);
    assert_eq!(
        json_of(resp).await,
        json!({"faultcode": "Client", "faultstring": "Validation failure: Invalid availability zone.", "debuginfo": null})
    );
    let plain = create_lb(&c, "no-zone").await;
    let lb = get(&c, &format!("/loadbalancers/{plain}")).await;
    assert_eq!(
        lb["loadbalancer"]["availability_zone"],
        serde_json::Value::Null
    );
}

#[tokio::test]
async fn listener_statistics_answer_in_octavias_shape_and_404_for_no_listener() {
    let c = Client::fast().await;
    let lb = create_lb(&c, "counted").await;
    wait_active(&c, &lb).await;
    let l = json_of(
        post(
            &c,
            "/listeners",
            json!({"listener": {"loadbalancer_id": lb, "protocol": "TCP", "protocol_port": 80}}),
        )
        .await,
    )
    .await;
    let id = l["listener"]["id"].as_str().unwrap().to_owned();
    // As the real Octavia answers a listener no amphora has reported on: every count 0.
    let fresh = get(&c, &format!("/listeners/{id}/stats")).await;
    assert_eq!(
        fresh,
        json!({"stats": {"active_connections": 0, "total_connections": 0, "bytes_in": 0,
                         "bytes_out": 0, "request_errors": 0}})
    );
    assert!(c.sim.set_listener_stats(&id, 7, 42));
    let set = get(&c, &format!("/listeners/{id}/stats")).await;
    assert_eq!(set["stats"]["active_connections"], 7);
    assert_eq!(set["stats"]["total_connections"], 42);
    let missing = c
        .req(Method::GET, &format!("{LB}/listeners/no-such/stats"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    assert!(!c.sim.set_listener_stats("no-such", 1, 1));
}
