//! Neutron wire tests: lookups by name, unknown filters, floating IP lifecycle and
//! description length.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use reqwest::Method;
use serde_json::json;
use sim_support::{Client, json_of};

const PUBLIC: &str = "e2c15e32-2d6a-4d72-bbbe-819de77cd103";

#[tokio::test]
async fn network_and_subnet_are_found_by_name() {
    let c = Client::fast().await;
    let nets = json_of(
        c.req(Method::GET, "/network/v2.0/networks?name=private")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        nets["networks"][0]["id"],
        "89908bff-e0fe-45be-b92d-5828f5ddc763"
    );
    let subnets = json_of(
        c.req(Method::GET, "/network/v2.0/subnets?name=private-subnet")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        subnets["subnets"][0]["network_id"],
        "89908bff-e0fe-45be-b92d-5828f5ddc763"
    );
    let external = json_of(
        c.req(Method::GET, "/network/v2.0/networks?router:external=true")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(external["networks"][0]["name"], "public");
}

#[tokio::test]
async fn unknown_filter_and_missing_network_answer_neutron_errors() {
    let c = Client::fast().await;
    let resp = c
        .req(Method::GET, "/network/v2.0/networks?bogus_filter=1")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(
        json_of(resp).await,
        json!({"NeutronError": {"type": "HTTPBadRequest", "message": "['bogus_filter'] is invalid attribute for filtering", "detail": ""}})
    );
    let resp = c
        .req(
            Method::GET,
            "/network/v2.0/networks/00000000-0000-0000-0000-000000000000",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(
        json_of(resp).await["NeutronError"]["type"],
        "NetworkNotFound"
    );
}

#[tokio::test]
async fn floating_ip_is_allocated_associated_to_a_vip_port_and_released() {
    let c = Client::fast().await;
    let lb = c
        .req(Method::POST, "/load-balancer/v2/lbaas/loadbalancers")
        .json(&json!({"loadbalancer": {"name": "pub", "vip_network_id": "89908bff-e0fe-45be-b92d-5828f5ddc763"}}))
        .send()
        .await
        .unwrap();
    let lb = json_of(lb).await;
    let port = lb["loadbalancer"]["vip_port_id"]
        .as_str()
        .unwrap()
        .to_string();
    let resp = c
        .req(Method::POST, "/network/v2.0/floatingips")
        .json(&json!({"floatingip": {"floating_network_id": PUBLIC}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let fip = json_of(resp).await["floatingip"].clone();
    assert_eq!(fip["status"], "DOWN");
    let id = fip["id"].as_str().unwrap();
    let resp = c
        .req(Method::PUT, &format!("/network/v2.0/floatingips/{id}"))
        .json(&json!({"floatingip": {"port_id": port}}))
        .send()
        .await
        .unwrap();
    let updated = json_of(resp).await["floatingip"].clone();
    assert_eq!(
        updated["fixed_ip_address"],
        lb["loadbalancer"]["vip_address"]
    );
    let listed = json_of(
        c.req(
            Method::GET,
            &format!("/network/v2.0/floatingips?port_id={port}"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(listed["floatingips"].as_array().unwrap().len(), 1);
    assert_eq!(
        c.req(Method::DELETE, &format!("/network/v2.0/floatingips/{id}"))
            .send()
            .await
            .unwrap()
            .status(),
        204
    );
    let resp = c
        .req(Method::GET, &format!("/network/v2.0/floatingips/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(resp).await["NeutronError"]["message"],
        format!("Floating IP {id} could not be found")
    );
    assert!(c.sim.floating_ips().is_empty());
}

#[tokio::test]
async fn floating_ip_create_refuses_tags_and_fixed_addresses() {
    let c = Client::fast().await;
    let tags = json!({"floatingip": {"floating_network_id": PUBLIC, "tags": ["a"]}});
    let resp = c
        .req(Method::POST, "/network/v2.0/floatingips")
        .json(&tags)
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(resp).await["NeutronError"]["message"],
        "Attribute 'tags' not allowed in POST"
    );
    let addr = json!({"floatingip": {"floating_network_id": PUBLIC, "floating_ip_address": "203.0.113.20"}});
    assert_eq!(
        c.req(Method::POST, "/network/v2.0/floatingips")
            .json(&addr)
            .send()
            .await
            .unwrap()
            .status(),
        403
    );
}

#[tokio::test]
async fn floating_ip_descriptions_are_at_most_255_characters() {
    let c = Client::fast().await;
    let path = "/network/v2.0/floatingips";
    let send = |method: Method, path: String, body: serde_json::Value| {
        let rb = c.req(method, &path).json(&body);
        async move {
            let resp = rb.send().await.unwrap();
            (resp.status().as_u16(), json_of(resp).await)
        }
    };
    let fip = |d: &str| json!({"floatingip": {"floating_network_id": PUBLIC, "description": d}});
    let long = "d".repeat(256);
    let message =
        format!("Invalid input for description. Reason: '{long}' exceeds maximum length of 255.");
    let refused = (
        400,
        json!({"NeutronError": {"type": "HTTPBadRequest", "message": message, "detail": ""}}),
    );
    assert_eq!(send(Method::POST, path.into(), fip(&long)).await, refused);
    let (status, body) = send(Method::POST, path.into(), fip(&"d".repeat(255))).await;
    assert_eq!(status, 201);
    let one = format!("{path}/{}", body["floatingip"]["id"].as_str().unwrap());
    let update = json!({"floatingip": {"description": long}});
    assert_eq!(send(Method::PUT, one, update).await, refused);
}

#[tokio::test]
async fn glance_resolves_names_and_id_lists_and_404s_unknown_ids() {
    let c = Client::fast().await;
    let by_name = json_of(
        c.req(Method::GET, "/image/v2/images?name=dup-image")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(by_name["images"].as_array().unwrap().len(), 2);
    let ids = "/image/v2/images?id=in:244965c2-7e98-469d-b7cc-fe423698200a";
    assert_eq!(
        json_of(c.req(Method::GET, ids).send().await.unwrap()).await["images"][0]["name"],
        "centos79"
    );
    let resp = c
        .req(Method::GET, "/image/v2/images/centos79")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(
        json_of(resp).await,
        json!({"message": "No image found with ID centos79<br /><br />\n\n\n", "code": "404 Not Found", "title": "Not Found"})
    );
}
