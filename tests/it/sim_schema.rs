//! Request-body rules of the real services' schemas, each refusal with the real
//! service's wording and a body at the limit that is accepted: Nova (server create and
//! update, metadata, server groups at microversion 2.64, as the operator sends them)
//! and Octavia (WSME types). Neutron's floating IP description is in `sim_network.rs`.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use std::time::Duration;

use reqwest::{Method, RequestBuilder};
use serde_json::{Value, json};
use sim_support::Client;

const IMAGE: &str = "244965c2-7e98-469d-b7cc-fe423698200a";
const PRIVATE: &str = "89908bff-e0fe-45be-b92d-5828f5ddc763";
const SUBNET: &str = "3d5443ce-8418-4529-a819-73f717122551";
const LB: &str = "/load-balancer/v2/lbaas";
const ANY_ID: &str = "00000000-0000-0000-0000-000000000000";

async fn send(rb: RequestBuilder, body: Value) -> (u16, Value) {
    let resp = rb.json(&body).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn nova(c: &Client, method: Method, path: &str, body: Value) -> (u16, Value) {
    send(c.nova(method, path, 64), body).await
}

async fn octavia(c: &Client, method: Method, path: &str, body: Value) -> (u16, Value) {
    send(c.req(method, &format!("{LB}{path}")), body).await
}

fn bad_request(message: &str) -> (u16, Value) {
    (
        400,
        json!({"badRequest": {"code": 400, "message": message}}),
    )
}

fn fault(message: &str) -> (u16, Value) {
    let body = json!({"faultcode": "Client", "faultstring": message, "debuginfo": null});
    (400, body)
}

/// A valid create body with `change` applied to `server`.
fn server(change: Value) -> Value {
    let mut s = json!({"name": "vm", "imageRef": IMAGE, "flavorRef": "10", "networks": [{"uuid": PRIVATE}]});
    for (k, v) in change.as_object().unwrap() {
        s[k] = v.clone();
    }
    json!({ "server": s })
}

async fn create(c: &Client, change: Value) -> (u16, Value) {
    nova(c, Method::POST, "/servers", server(change)).await
}

#[tokio::test]
async fn metadata_keys_with_a_slash_are_refused_and_colons_accepted() {
    let c = Client::fast().await;
    let slash = create(&c, json!({"metadata": {"verda.linecorp.com/uid": "u1"}})).await;
    assert_eq!(
        slash,
        bad_request(
            "Invalid input for field/attribute metadata. Value: {'verda.linecorp.com/uid': 'u1'}. 'verda.linecorp.com/uid' does not match any of the regexes: '^[a-zA-Z0-9-_:. ]{1,255}$'"
        )
    );
    let (key, value) = ("k".repeat(255), "v".repeat(255));
    let at_limit = json!({"metadata": {"verda.linecorp.com:uid": "u1", key: value}});
    assert_eq!(create(&c, at_limit).await.0, 202);
}

#[tokio::test]
async fn metadata_values_are_strings_of_at_most_255_characters() {
    let c = Client::fast().await;
    let long = "v".repeat(256);
    assert_eq!(
        create(&c, json!({"metadata": {"k": long}})).await,
        bad_request(&format!(
            "Invalid input for field/attribute k. Value: {long}. '{long}' is too long"
        ))
    );
    assert_eq!(
        create(&c, json!({"metadata": {"k": 1}})).await,
        bad_request("Invalid input for field/attribute k. Value: 1. 1 is not of type 'string'")
    );
}

#[tokio::test]
async fn more_than_128_metadata_items_is_novas_403_on_create_and_writes() {
    let c = Client::fast().await;
    let items = |n: usize| -> serde_json::Map<String, Value> {
        (0..n).map(|i| (format!("k{i}"), json!("v"))).collect()
    };
    let over = (
        403,
        json!({"forbidden": {"code": 403, "message": "Maximum number of metadata items exceeds 128"}}),
    );
    assert_eq!(create(&c, json!({"metadata": items(129)})).await, over);
    let (status, body) = create(&c, json!({"metadata": items(128)})).await;
    assert_eq!(status, 202);
    let meta = format!(
        "/servers/{}/metadata",
        body["server"]["id"].as_str().unwrap()
    );
    let one_more = json!({"metadata": {"extra": "v"}});
    assert_eq!(nova(&c, Method::POST, &meta, one_more).await, over);
    let new_key = json!({"meta": {"extra": "v"}});
    let path = format!("{meta}/extra");
    assert_eq!(nova(&c, Method::PUT, &path, new_key).await, over);
    let replaced = json!({"meta": {"k0": "w"}});
    let path = format!("{meta}/k0");
    assert_eq!(nova(&c, Method::PUT, &path, replaced).await.0, 200);
    let all = json!({ "metadata": items(128) });
    assert_eq!(nova(&c, Method::PUT, &meta, all).await.0, 200);
}

#[tokio::test]
async fn metadata_writes_check_keys_values_and_one_item_per_key() {
    let c = Client::fast().await;
    let id = create(&c, json!({})).await.1["server"]["id"].clone();
    let meta = format!("/servers/{}/metadata", id.as_str().unwrap());
    let cases = [
        (
            Method::PUT,
            meta.clone(),
            json!({"metadata": {"a/b": "x"}}),
            "Invalid input for field/attribute metadata. Value: {'a/b': 'x'}. 'a/b' does not match any of the regexes: '^[a-zA-Z0-9-_:. ]{1,255}$'",
        ),
        (
            Method::POST,
            meta.clone(),
            json!({"metadata": {"k": 7}}),
            "Invalid input for field/attribute k. Value: 7. 7 is not of type 'string'",
        ),
        (
            Method::POST,
            meta.clone(),
            json!({"meta": {"k": "v"}}),
            "'metadata' is a required property",
        ),
        (
            Method::PUT,
            format!("{meta}/k"),
            json!({"meta": {"j": "2", "k": "1"}}),
            "Invalid input for field/attribute meta. Value: {'j': '2', 'k': '1'}. {'j': '2', 'k': '1'} has too many properties",
        ),
    ];
    for (method, path, body, message) in cases {
        assert_eq!(nova(&c, method, &path, body).await, bad_request(message));
    }
    let ok = json!({"meta": {"k": "v".repeat(255)}});
    assert_eq!(nova(&c, Method::PUT, &format!("{meta}/k"), ok).await.0, 200);
}

#[tokio::test]
async fn server_names_are_1_to_255_printable_characters_without_edge_spaces() {
    let c = Client::fast().await;
    let long = "n".repeat(256);
    let invalid_name = "An invalid 'name' value was provided. The name must be: printable characters. Can not start or end with whitespace.";
    let cases = [
        (
            json!(long),
            format!("Invalid input for field/attribute name. Value: {long}. '{long}' is too long"),
        ),
        (json!(" web"), invalid_name.to_string()),
        (json!("web\t0"), invalid_name.to_string()),
        (
            json!(""),
            "Invalid input for field/attribute name. Value: . '' should be non-empty".to_string(),
        ),
    ];
    for (name, message) in cases {
        assert_eq!(
            create(&c, json!({"name": name})).await,
            bad_request(&message)
        );
    }
    let (status, body) = create(&c, json!({"name": "n".repeat(255)})).await;
    assert_eq!(status, 202);
    let path = format!("/servers/{}", body["server"]["id"].as_str().unwrap());
    let rename = |name: &str| json!({"server": {"name": name}});
    assert_eq!(
        nova(&c, Method::PUT, &path, rename(" x")).await,
        bad_request(invalid_name)
    );
    assert_eq!(
        nova(&c, Method::PUT, &path, rename(&"m".repeat(255)))
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn descriptions_are_at_most_255_characters_on_create_and_update() {
    let c = Client::fast().await;
    let long = "d".repeat(256);
    let refused = bad_request(&format!(
        "Invalid input for field/attribute description. Value: {long}. '{long}' is too long"
    ));
    assert_eq!(create(&c, json!({"description": long})).await, refused);
    let (status, body) = create(&c, json!({"description": "d".repeat(255)})).await;
    assert_eq!(status, 202);
    let path = format!("/servers/{}", body["server"]["id"].as_str().unwrap());
    let update = |d: &str| json!({"server": {"description": d}});
    assert_eq!(nova(&c, Method::PUT, &path, update(&long)).await, refused);
    assert_eq!(nova(&c, Method::PUT, &path, update("e")).await.0, 200);
}

#[tokio::test]
async fn tags_are_at_most_50_of_1_to_60_characters_without_slash_or_comma() {
    let c = Client::fast().await;
    let long = "t".repeat(61);
    let cases = [
        (
            json!(["ok", "a/b"]),
            "Invalid input for field/attribute 1. Value: a/b. 'a/b' does not match '^[^,/]*$'"
                .to_string(),
        ),
        (
            json!(["a,b"]),
            "Invalid input for field/attribute 0. Value: a,b. 'a,b' does not match '^[^,/]*$'"
                .to_string(),
        ),
        (
            json!([""]),
            "Invalid input for field/attribute 0. Value: . '' should be non-empty".to_string(),
        ),
        (
            json!([long]),
            format!("Invalid input for field/attribute 0. Value: {long}. '{long}' is too long"),
        ),
    ];
    for (tags, message) in cases {
        assert_eq!(
            create(&c, json!({"tags": tags})).await,
            bad_request(&message)
        );
    }
    let many: Vec<String> = (0..51).map(|i| format!("t{i}")).collect();
    let shown = format!(
        "[{}]",
        many.iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(
        create(&c, json!({"tags": many})).await,
        bad_request(&format!(
            "Invalid input for field/attribute tags. Value: {shown}. {shown} is too long"
        ))
    );
    let at_limit: Vec<String> = (0..50).map(|i| format!("{i:060}")).collect();
    assert_eq!(create(&c, json!({"tags": at_limit})).await.0, 202);
}

#[tokio::test]
async fn user_data_is_at_most_65535_characters_of_base64() {
    let c = Client::fast().await;
    let long = "AAAA".repeat(16384);
    assert_eq!(
        create(&c, json!({"user_data": long})).await,
        bad_request(&format!(
            "Invalid input for field/attribute user_data. Value: {long}. '{long}' is too long"
        ))
    );
    let at_limit = format!("{}\n\n\n", "AAAA".repeat(16383));
    assert_eq!(create(&c, json!({"user_data": at_limit})).await.0, 202);
}

#[tokio::test]
async fn unknown_properties_are_refused_at_2_64() {
    let c = Client::fast().await;
    let (status, body) = create(&c, json!({"hostname": "h"})).await;
    assert_eq!(status, 400);
    let message = body["badRequest"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Invalid input for field/attribute server. Value: {"),
        "{message}"
    );
    assert!(
        message.ends_with("}. Additional properties are not allowed ('hostname' was unexpected)"),
        "{message}"
    );
    let mut extra = server(json!({}));
    extra["extra"] = json!(1);
    let refused = bad_request("Additional properties are not allowed ('extra' was unexpected)");
    assert_eq!(nova(&c, Method::POST, "/servers", extra).await, refused);
    let missing = json!({"os:scheduler_hints": {}});
    let refused = bad_request("'server' is a required property");
    assert_eq!(nova(&c, Method::POST, "/servers", missing).await, refused);
}

#[tokio::test]
async fn server_groups_take_a_name_and_one_2_64_policy() {
    let c = Client::fast().await;
    let long = "g".repeat(256);
    let group = |g: Value| json!({ "server_group": g });
    let cases = [
        (json!({"name": long, "policy": "affinity"}), format!("Invalid input for field/attribute name. Value: {long}. '{long}' is too long")),
        (json!({"name": "g", "policy": "bogus"}), "Invalid input for field/attribute policy. Value: bogus. 'bogus' is not one of ['anti-affinity', 'affinity', 'soft-anti-affinity', 'soft-affinity']".to_string()),
        (json!({"name": "g", "policies": ["affinity"]}), "Invalid input for field/attribute server_group. Value: {'name': 'g', 'policies': ['affinity']}. 'policy' is a required property".to_string()),
        (json!({"name": "g", "policy": "affinity", "policies": ["affinity"]}), "Invalid input for field/attribute server_group. Value: {'name': 'g', 'policies': ['affinity'], 'policy': 'affinity'}. Additional properties are not allowed ('policies' was unexpected)".to_string()),
    ];
    for (g, message) in cases {
        let refused = bad_request(&message);
        assert_eq!(
            nova(&c, Method::POST, "/os-server-groups", group(g)).await,
            refused
        );
    }
    let ok = group(json!({"name": "g".repeat(255), "policy": "soft-anti-affinity"}));
    assert_eq!(nova(&c, Method::POST, "/os-server-groups", ok).await.0, 200);
}

#[tokio::test]
async fn octavia_names_descriptions_and_tags_are_at_most_255_characters() {
    let c = Client::fast().await;
    let long = "x".repeat(256);
    let too_long = |field: &str, shown: &str| {
        fault(&format!(
            "Invalid input for field/attribute {field}. Value: '{shown}'. Value should have a maximum character requirement of 255"
        ))
    };
    let cases = [
        (
            "/loadbalancers",
            json!({"loadbalancer": {"name": long, "vip_subnet_id": SUBNET}}),
            "name",
            long.clone(),
        ),
        (
            "/loadbalancers",
            json!({"loadbalancer": {"description": long, "vip_subnet_id": SUBNET}}),
            "description",
            long.clone(),
        ),
        (
            "/loadbalancers",
            json!({"loadbalancer": {"tags": ["ok", long], "vip_subnet_id": SUBNET}}),
            "tags",
            format!("['ok', '{long}']"),
        ),
        (
            "/listeners",
            json!({"listener": {"name": long, "loadbalancer_id": ANY_ID, "protocol": "HTTP", "protocol_port": 80}}),
            "name",
            long.clone(),
        ),
        (
            "/pools",
            json!({"pool": {"description": long, "listener_id": ANY_ID, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}}),
            "description",
            long.clone(),
        ),
        (
            &format!("/pools/{ANY_ID}/members"),
            json!({"member": {"name": long, "address": "10.0.0.9", "protocol_port": 80}}),
            "name",
            long.clone(),
        ),
        (
            "/healthmonitors",
            json!({"healthmonitor": {"name": long, "pool_id": ANY_ID, "type": "TCP", "delay": 5, "timeout": 3, "max_retries": 3}}),
            "name",
            long.clone(),
        ),
    ];
    for (path, body, field, shown) in cases {
        assert_eq!(
            octavia(&c, Method::POST, path, body).await,
            too_long(field, &shown),
            "{path}"
        );
    }
    let at_limit = "x".repeat(255);
    let body = json!({"loadbalancer": {"name": at_limit, "description": at_limit, "tags": [at_limit], "vip_subnet_id": SUBNET}});
    assert_eq!(
        octavia(&c, Method::POST, "/loadbalancers", body).await.0,
        201
    );
}

#[tokio::test]
async fn octavia_refuses_out_of_range_numbers_and_unknown_words() {
    let c = Client::fast().await;
    let listener = |port: Value, protocol: &str| json!({"listener": {"loadbalancer_id": ANY_ID, "protocol": protocol, "protocol_port": port}});
    let member = |extra: Value| {
        let mut m = json!({"address": "10.0.0.9", "protocol_port": 80});
        m.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ "member": m })
    };
    let monitor = |extra: Value| {
        let mut m =
            json!({"pool_id": ANY_ID, "type": "HTTP", "delay": 5, "timeout": 3, "max_retries": 3});
        m.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ "healthmonitor": m })
    };
    let members = format!("/pools/{ANY_ID}/members");
    let cases = [
        (
            "/listeners",
            listener(json!(0), "HTTP"),
            "protocol_port. Value: '0'. Value should be greater or equal to 1",
        ),
        (
            "/listeners",
            listener(json!(65536), "HTTP"),
            "protocol_port. Value: '65536'. Value should be lower or equal to 65535",
        ),
        (
            "/listeners",
            listener(json!(80), "FTP"),
            "protocol. Value: 'FTP'. Value should be one of: HTTP, HTTPS, TCP, TERMINATED_HTTPS, UDP, SCTP, PROMETHEUS",
        ),
        (
            &members,
            member(json!({"weight": 257})),
            "weight. Value: '257'. Value should be lower or equal to 256",
        ),
        (
            &members,
            member(json!({"monitor_port": 0})),
            "monitor_port. Value: '0'. Value should be greater or equal to 1",
        ),
        (
            "/healthmonitors",
            monitor(json!({"max_retries": 11})),
            "max_retries. Value: '11'. Value should be lower or equal to 10",
        ),
        (
            "/healthmonitors",
            monitor(json!({"max_retries_down": 0})),
            "max_retries_down. Value: '0'. Value should be greater or equal to 1",
        ),
        (
            "/healthmonitors",
            monitor(json!({"http_method": "FETCH"})),
            "http_method. Value: 'FETCH'. Value should be one of: GET, HEAD, POST, PUT, DELETE, TRACE, OPTIONS, PATCH, CONNECT",
        ),
        (
            "/healthmonitors",
            monitor(json!({"url_path": "health"})),
            "url_path. Value: 'health'. Value must be a valid URL path",
        ),
        (
            "/healthmonitors",
            monitor(json!({"expected_codes": "2xx"})),
            r"expected_codes. Value: '2xx'. Value should match the pattern ^(\d{3}(\s*,\s*\d{3})*)$|^(\d{3}-\d{3})$",
        ),
    ];
    for (path, body, detail) in cases {
        let refused = fault(&format!("Invalid input for field/attribute {detail}"));
        assert_eq!(
            octavia(&c, Method::POST, path, body).await,
            refused,
            "{detail}"
        );
    }
    let batch = json!({"members": [{"address": "10.0.0.9", "protocol_port": 0}]});
    let refused = fault(
        "Invalid input for field/attribute protocol_port. Value: '0'. Value should be greater or equal to 1",
    );
    assert_eq!(octavia(&c, Method::PUT, &members, batch).await, refused);
}

async fn wait_active(c: &Client, lb: &str) {
    for _ in 0..400 {
        let (_, body) = octavia(c, Method::GET, &format!("/loadbalancers/{lb}"), json!(null)).await;
        if body["loadbalancer"]["provisioning_status"] == "ACTIVE" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("load balancer {lb} did not become ACTIVE");
}

#[tokio::test]
async fn octavia_accepts_numbers_at_the_ends_of_their_ranges() {
    let c = Client::fast().await;
    let lb_body = json!({"loadbalancer": {"name": "edge", "vip_subnet_id": SUBNET}});
    let lb =
        octavia(&c, Method::POST, "/loadbalancers", lb_body).await.1["loadbalancer"]["id"].clone();
    let lb = lb.as_str().unwrap();
    wait_active(&c, lb).await;
    let listener =
        json!({"listener": {"loadbalancer_id": lb, "protocol": "TCP", "protocol_port": 65535}});
    let (status, body) = octavia(&c, Method::POST, "/listeners", listener).await;
    assert_eq!(status, 201);
    wait_active(&c, lb).await;
    let pool = json!({"pool": {"listener_id": body["listener"]["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}});
    let (status, body) = octavia(&c, Method::POST, "/pools", pool).await;
    assert_eq!(status, 201);
    let pool = body["pool"]["id"].as_str().unwrap().to_string();
    wait_active(&c, lb).await;
    let member = json!({"member": {"address": "10.0.0.9", "protocol_port": 65535, "weight": 256, "monitor_port": 1}});
    let members = format!("/pools/{pool}/members");
    assert_eq!(octavia(&c, Method::POST, &members, member).await.0, 201);
    wait_active(&c, lb).await;
    let hm = json!({"healthmonitor": {"pool_id": pool, "type": "HTTP", "delay": 0, "timeout": 0, "max_retries": 10, "max_retries_down": 10, "http_method": "HEAD", "url_path": "/healthz", "expected_codes": "200-204"}});
    assert_eq!(
        octavia(&c, Method::POST, "/healthmonitors", hm).await.0,
        201
    );
}
