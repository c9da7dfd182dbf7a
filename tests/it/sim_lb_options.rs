//! Octavia's listener and pool options, as the real Octavia 19 answered them
//! (`sim/octavia-options.md`): timeouts, connection limit, allowed CIDRs and inserted
//! headers edited in place; session persistence set and cleared; which pool protocols a
//! listener passes to. Each refusal is the recorded one, word for word.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use crate::sim_load_balancer::{get, wait_active};
use reqwest::Method;
use serde_json::{Value, json};
use sim_support::{Client, json_of};

const SUBNET: &str = "3d5443ce-8418-4529-a819-73f717122551";
const LB: &str = "/load-balancer/v2/lbaas";

pub(crate) async fn send(c: &Client, method: Method, path: &str, body: Value) -> (u16, Value) {
    let resp = c
        .req(method, &format!("{LB}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), json_of(resp).await)
}

pub(crate) async fn load_balancer(c: &Client) -> String {
    let body = json!({"loadbalancer": {"name": "opts", "vip_subnet_id": SUBNET}});
    let (status, made) = send(c, Method::POST, "/loadbalancers", body).await;
    assert_eq!(status, 201, "{made}");
    let id = made["loadbalancer"]["id"].as_str().unwrap().to_owned();
    wait_active(c, &id).await;
    id
}

pub(crate) async fn listener(c: &Client, lb: &str, body: Value) -> (u16, Value) {
    let mut body = body;
    body["loadbalancer_id"] = json!(lb);
    send(c, Method::POST, "/listeners", json!({ "listener": body })).await
}

pub(crate) fn fault(answer: &(u16, Value)) -> (u16, &str) {
    (answer.0, answer.1["faultstring"].as_str().unwrap_or(""))
}

#[tokio::test]
async fn listener_options_are_kept_shown_and_reset_in_place() {
    let c = Client::fast().await;
    let lb = load_balancer(&c).await;
    let body = json!({"protocol": "HTTP", "protocol_port": 84, "connection_limit": 100,
        "timeout_client_data": 90000, "allowed_cidrs": ["10.0.0.0/8"],
        "insert_headers": {"X-Forwarded-For": "true"}});
    let (status, made) = listener(&c, &lb, body).await;
    assert_eq!(status, 201, "{made}");
    let id = made["listener"]["id"].as_str().unwrap().to_owned();
    wait_active(&c, &lb).await;
    let shown = &get(&c, &format!("/listeners/{id}")).await["listener"];
    assert_eq!(shown["connection_limit"], 100);
    assert_eq!(shown["timeout_client_data"], 90000);
    assert_eq!(shown["timeout_member_connect"], 5000);
    assert_eq!(shown["allowed_cidrs"], json!(["10.0.0.0/8"]));
    assert_eq!(shown["insert_headers"], json!({"X-Forwarded-For": "true"}));
    // Empty lists and maps reset them: Octavia shows no CIDRs as null.
    let reset = json!({"listener": {"allowed_cidrs": [], "insert_headers": {},
        "timeout_client_data": 50000, "connection_limit": -1}});
    let (status, _) = send(&c, Method::PUT, &format!("/listeners/{id}"), reset).await;
    assert_eq!(status, 200);
    wait_active(&c, &lb).await;
    let shown = &get(&c, &format!("/listeners/{id}")).await["listener"];
    assert_eq!(shown["allowed_cidrs"], Value::Null);
    assert_eq!(shown["insert_headers"], json!({}));
    assert_eq!(shown["connection_limit"], -1);
    assert_eq!(shown["timeout_client_data"], 50000);
}

#[tokio::test]
async fn listener_options_octavia_refuses_are_refused_in_its_words() {
    let c = Client::fast().await;
    let lb = load_balancer(&c).await;
    let cases = [
        (
            json!({"protocol": "TCP", "protocol_port": 81, "insert_headers": {"X-Forwarded-For": "true"}}),
            "insert-headers is not a valid option for a TCP protocol listener.",
        ),
        (
            json!({"protocol": "HTTP", "protocol_port": 82, "insert_headers": {"X-Bogus": "true"}}),
            "dict_keys(['X-Bogus']) is not a valid option for insert_headers",
        ),
        (
            json!({"protocol": "HTTP", "protocol_port": 82, "insert_headers": {"X-SSL-Client-DN": "true"}}),
            "['X-SSL-Client-DN'] is not a valid option for HTTP protocol listener.",
        ),
        (
            json!({"protocol": "HTTP", "protocol_port": 82, "allowed_cidrs": ["10.0.0.0/33"]}),
            "Invalid input for field/attribute allowed_cidrs. Value: '['10.0.0.0/33']'. Value should be IPv4 or IPv6 CIDR format",
        ),
        (
            json!({"protocol": "HTTP", "protocol_port": 82, "timeout_client_data": 31_536_000_001_u64}),
            "Invalid input for field/attribute timeout_client_data. Value: '31536000001'. Value should be lower or equal to 2073600000",
        ),
    ];
    for (body, words) in cases {
        let answer = listener(&c, &lb, body.clone()).await;
        assert_eq!(fault(&answer), (400, words), "{body}");
    }
    let vip = get(&c, &format!("/loadbalancers/{lb}")).await["loadbalancer"]["vip_address"]
        .as_str()
        .unwrap()
        .to_owned();
    let v6 = json!({"protocol": "HTTP", "protocol_port": 82, "allowed_cidrs": ["fd00::/8"]});
    let answer = listener(&c, &lb, v6).await;
    let words = format!(
        "Validation failure: CIDR fd00::/8 IP version incompatible with all VIPs ['{vip}'] IP version."
    );
    assert_eq!(fault(&answer), (400, words.as_str()));
    // An empty header map is no header: a TCP listener takes it.
    let empty =
        json!({"protocol": "TCP", "protocol_port": 83, "insert_headers": {}, "allowed_cidrs": []});
    assert_eq!(listener(&c, &lb, empty).await.0, 201);
}

#[tokio::test]
async fn pool_protocols_and_session_persistence_follow_octavias_rules() {
    let c = Client::fast().await;
    let lb = load_balancer(&c).await;
    let (_, made) = listener(&c, &lb, json!({"protocol": "HTTP", "protocol_port": 84})).await;
    let l = made["listener"]["id"].clone();
    wait_active(&c, &lb).await;
    let pool = |extra: Value| {
        let mut body = json!({"listener_id": l, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"});
        if let (Some(b), Value::Object(e)) = (body.as_object_mut(), extra) {
            b.extend(e);
        }
        json!({ "pool": body })
    };
    let cases = [
        (
            json!({"protocol": "HTTPS"}),
            "Validation failure: The pool protocol 'HTTPS' is invalid while the listener protocol is 'HTTP'.",
        ),
        (
            json!({"session_persistence": {"type": "APP_COOKIE"}}),
            "Validation failure: Field \"cookie_name\" must be specified when using the \"APP_COOKIE\" session persistence type.",
        ),
        (
            json!({"session_persistence": {"type": "HTTP_COOKIE", "cookie_name": "x"}}),
            "Validation failure: Field \"cookie_name\" can only be specified with session persistence of type \"APP_COOKIE\".",
        ),
        (
            json!({"session_persistence": {"type": "BOGUS"}}),
            "Invalid input for field/attribute type. Value: 'BOGUS'. Value should be one of: HTTP_COOKIE, SOURCE_IP, APP_COOKIE",
        ),
    ];
    for (extra, words) in cases {
        let answer = send(&c, Method::POST, "/pools", pool(extra.clone())).await;
        assert_eq!(fault(&answer), (400, words), "{extra}");
    }
    let proxy = json!({"protocol": "PROXY", "lb_algorithm": "LEAST_CONNECTIONS",
        "session_persistence": {"type": "APP_COOKIE", "cookie_name": "sid"}});
    let (status, made) = send(&c, Method::POST, "/pools", pool(proxy)).await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(
        made["pool"]["session_persistence"],
        json!({"type": "APP_COOKIE", "cookie_name": "sid", "persistence_timeout": null, "persistence_granularity": null})
    );
    let id = made["pool"]["id"].as_str().unwrap().to_owned();
    wait_active(&c, &lb).await;
    let clear = json!({"pool": {"lb_algorithm": "SOURCE_IP", "session_persistence": null}});
    let (status, updated) = send(&c, Method::PUT, &format!("/pools/{id}"), clear).await;
    assert_eq!(status, 200);
    assert_eq!(updated["pool"]["session_persistence"], Value::Null);
    assert_eq!(updated["pool"]["lb_algorithm"], "SOURCE_IP");
    wait_active(&c, &lb).await;
    let app = json!({"pool": {"session_persistence": {"type": "APP_COOKIE"}}});
    let answer = send(&c, Method::PUT, &format!("/pools/{id}"), app).await;
    assert_eq!(
        fault(&answer),
        (
            400,
            "Validation failure: Field \"cookie_name\" must be specified when using the \"APP_COOKIE\" session persistence type."
        )
    );
}

#[tokio::test]
async fn udp_pools_keep_sessions_by_source_ip_only() {
    let c = Client::fast().await;
    let lb = load_balancer(&c).await;
    let (_, made) = listener(
        &c,
        &lb,
        json!({"protocol": "UDP", "protocol_port": 85, "timeout_client_data": 1000}),
    )
    .await;
    assert_eq!(made["listener"]["timeout_client_data"], 1000);
    wait_active(&c, &lb).await;
    let body = |kind: &str| {
        json!({"pool": {"listener_id": made["listener"]["id"], "protocol": "UDP",
            "lb_algorithm": "ROUND_ROBIN", "session_persistence": {"type": kind}}})
    };
    let answer = send(&c, Method::POST, "/pools", body("HTTP_COOKIE")).await;
    assert_eq!(
        fault(&answer),
        (
            400,
            "Validation failure: Session persistence of type HTTP_COOKIE is not supported for UDP/SCTP protocol pools."
        )
    );
    assert_eq!(
        send(&c, Method::POST, "/pools", body("SOURCE_IP")).await.0,
        201
    );
}
