//! The simulator's Barbican and Octavia's reading of it, as the real Barbican 23 and
//! Octavia 19 answered (`sim/barbican-wire.md`): secrets stored as base64 payloads,
//! listed by `name` as SQL `LIKE` in `limit`/`offset` pages, deleted; a
//! TERMINATED_HTTPS listener needs a readable PKCS#12 secret of its own project, and
//! no other listener takes one. Each refusal is the recorded one, word for word.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};
use sim_support::Client;

use crate::sim_lb_options::{fault, listener, load_balancer};
use crate::sim_load_balancer::{get, wait_active};

const SECRETS: &str = "/key-manager/v1/secrets";

pub(crate) async fn send(
    c: &Client,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = c.req(method, path);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn store_body(name: &str, payload: &[u8]) -> Value {
    json!({"name": name, "secret_type": "opaque",
        "payload": base64::engine::general_purpose::STANDARD.encode(payload),
        "payload_content_type": "application/octet-stream", "payload_content_encoding": "base64"})
}

async fn store(c: &Client, name: &str, payload: &[u8]) -> String {
    let (status, body) = send(c, Method::POST, SECRETS, Some(store_body(name, payload))).await;
    assert_eq!(status, 201, "{body}");
    body["secret_ref"].as_str().unwrap().to_owned()
}

/// A PKCS#12 bundle of a test certificate, as the operator packs it.
fn pkcs12() -> Vec<u8> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");
    let read = |f: &str| std::fs::read(format!("{dir}/{f}")).unwrap();
    let bundle =
        verda_operator::tls_bundle::bundle(&read("web.crt"), &read("web.key"), chrono::Utc::now());
    bundle.unwrap().pkcs12
}

fn description(answer: &(u16, Value)) -> (u16, &str) {
    (answer.0, answer.1["description"].as_str().unwrap_or(""))
}

#[tokio::test]
async fn secrets_are_stored_listed_by_name_pattern_in_pages_and_deleted() {
    let c = Client::fast().await;
    let mut refs = Vec::new();
    for i in 0..3 {
        refs.push(store(&c, &format!("pg-{i}"), b"hello").await);
    }
    store(&c, "other", b"hello").await;
    assert!(refs[0].starts_with(&format!("{}{SECRETS}/", c.base)));
    let (_, page) = send(
        &c,
        Method::GET,
        &format!("{SECRETS}?limit=2&name=pg-%25"),
        None,
    )
    .await;
    assert_eq!(page["total"], 3);
    assert_eq!(page["secrets"].as_array().unwrap().len(), 2);
    assert_eq!(page["secrets"][0]["secret_type"], "opaque");
    assert_eq!(
        page["secrets"][0]["content_types"]["default"],
        "application/octet-stream"
    );
    let next = page["next"].as_str().unwrap();
    assert!(
        next.contains("offset=2") && next.contains("name=pg-%25"),
        "{next}"
    );
    let (_, rest) = send(&c, Method::GET, &next.replace(&c.base, ""), None).await;
    assert_eq!(rest["secrets"].as_array().unwrap().len(), 1);
    assert!(rest.get("next").is_none() && rest["previous"].is_string());
    // `_` is any one character, as in SQL.
    let (_, one) = send(&c, Method::GET, &format!("{SECRETS}?name=pg_1"), None).await;
    assert_eq!(one["secrets"][0]["name"], "pg-1");

    let id = refs[0].rsplit('/').next().unwrap();
    let (status, _) = send(&c, Method::DELETE, &format!("{SECRETS}/{id}"), None).await;
    assert_eq!(status, 204);
    let again = send(&c, Method::DELETE, &format!("{SECRETS}/{id}"), None).await;
    assert_eq!(description(&again), (404, "Secret not found."));
    let shown = send(&c, Method::GET, &format!("{SECRETS}/{id}"), None).await;
    assert_eq!(
        description(&shown),
        (404, "Not Found. Provided secret id is invalid.")
    );
}

#[tokio::test]
async fn a_store_barbican_refuses_is_refused_in_its_words() {
    let c = Client::fast().await;
    let schema = "Provided object does not match schema 'Secret': ";
    let mut no_type = store_body("p", b"hello");
    no_type
        .as_object_mut()
        .unwrap()
        .remove("payload_content_type");
    let mut no_encoding = store_body("p", b"hello");
    no_encoding
        .as_object_mut()
        .unwrap()
        .remove("payload_content_encoding");
    let mut weird = store_body("p", b"hello");
    weird["secret_type"] = json!("weird");
    let mut empty = store_body("p", b"hello");
    empty["payload"] = json!("");
    let cases = [
        (
            no_type,
            400,
            format!(
                "{schema}If 'payload' is supplied, 'payload_content_type' must also be supplied.. Invalid property: 'payload_content_type'"
            ),
        ),
        (
            no_encoding,
            400,
            format!(
                "{schema}payload_content_encoding is not one of ['base64', 'binary']. Invalid property: 'payload_content_encoding'"
            ),
        ),
        (
            weird,
            400,
            format!(
                "{schema}'weird' is not one of ['symmetric', 'passphrase', 'private', 'public', 'certificate', 'opaque']. Invalid property: 'secret_type'"
            ),
        ),
        (
            empty,
            400,
            format!(
                "{schema}If 'payload' specified, must be non empty. Invalid property: 'payload'"
            ),
        ),
        (
            store_body("big", &[0u8; 18_000]),
            413,
            "Provided information too large to process".to_owned(),
        ),
        (
            store_body("bigger", &[0u8; 19_000]),
            400,
            "Malformed JSON".to_owned(),
        ),
    ];
    for (body, status, words) in cases {
        let answer = send(&c, Method::POST, SECRETS, Some(body)).await;
        assert_eq!(description(&answer), (status, words.as_str()));
    }
    let (_, listed) = send(&c, Method::GET, SECRETS, None).await;
    assert_eq!(listed["total"], 0, "nothing refused was stored");
}

#[tokio::test]
async fn a_terminated_https_listener_reads_pkcs12_secrets_of_its_project_only() {
    let c = Client::fast().await;
    let lb = load_balancer(&c).await;
    let good = store(&c, "web", &pkcs12()).await;
    let text = store(&c, "text", b"hello").await;
    let missing = format!("{}{SECRETS}/00000000-0000-0000-0000-000000000000", c.base);
    let tls = |refs: Value| {
        let mut l = json!({"protocol": "TERMINATED_HTTPS", "protocol_port": 443});
        l.as_object_mut()
            .unwrap()
            .extend(refs.as_object().unwrap().clone());
        l
    };
    let cases = [
        (tls(json!({})), "Validation failure: An SNI or default certificate container reference must be provided for TERMINATED_HTTPS protocol listeners.".to_owned()),
        (tls(json!({"default_tls_container_ref": missing})), format!("Could not retrieve certificate: ['{missing}']")),
        (tls(json!({"default_tls_container_ref": text})), "The PKCS12 bundle is unreadable. Please check the PKCS12 bundle validity. In addition, make sure it does not require a pass phrase. Error: Could not deserialize PKCS12 data".to_owned()),
        (json!({"protocol": "HTTP", "protocol_port": 80, "default_tls_container_ref": good}), "Validation failure: Certificate container references are not allowed on HTTP protocol listeners.".to_owned()),
        (json!({"protocol": "HTTP", "protocol_port": 81, "sni_container_refs": [good]}), "Validation failure: Certificate container references are not allowed on HTTP protocol listeners.".to_owned()),
    ];
    for (body, words) in cases {
        let answer = listener(&c, &lb, body).await;
        assert_eq!(fault(&answer), (400, words.as_str()));
    }
    let answer = listener(
        &c,
        &lb,
        tls(json!({"default_tls_container_ref": good, "sni_container_refs": [good]})),
    )
    .await;
    assert_eq!(answer.0, 201, "{}", answer.1);
    let id = answer.1["listener"]["id"].as_str().unwrap().to_owned();
    wait_active(&c, &lb).await;
    let shown = &get(&c, &format!("/listeners/{id}")).await["listener"];
    assert_eq!(shown["default_tls_container_ref"], json!(good));
    assert_eq!(shown["sni_container_refs"], json!([good]));
    // An update is read as a create is; an empty SNI list takes them off.
    let path = format!("/load-balancer/v2/lbaas/listeners/{id}");
    let bad = send(
        &c,
        Method::PUT,
        &path,
        Some(json!({"listener": {"sni_container_refs": [text]}})),
    )
    .await;
    assert_eq!(fault(&bad).0, 400);
    let cleared = send(
        &c,
        Method::PUT,
        &path,
        Some(json!({"listener": {"sni_container_refs": []}})),
    )
    .await;
    assert_eq!(cleared.0, 200);
    assert_eq!(cleared.1["listener"]["sni_container_refs"], json!([]));
    assert_eq!(
        cleared.1["listener"]["default_tls_container_ref"],
        json!(good)
    );
}

/// Version discovery as python-barbicanclient does it: the catalog URL answers the
/// version list, `/v1/` the microversions, and the collection takes a trailing slash.
#[tokio::test]
async fn the_barbican_client_discovers_the_api_as_on_the_real_barbican() {
    let c = Client::fast().await;
    let (status, versions) = send(&c, Method::GET, "/key-manager", None).await;
    assert_eq!(status, 300);
    let v1 = &versions["versions"]["values"][0];
    assert_eq!(v1["id"], "v1");
    assert_eq!(
        v1["links"][0]["href"],
        format!("{}{SECRETS}", c.base).replace("/secrets", "/")
    );
    let resp = c
        .req(Method::GET, "/key-manager/v1/")
        .header("openstack-api-version", "key-manager 1.1")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["openstack-api-version"], "key-manager 1.1");
    let doc: Value = resp.json().await.unwrap();
    assert_eq!(doc["version"]["max_version"], "1.2");
    let body = store_body("slash", b"hello");
    let (status, _) = send(&c, Method::POST, &format!("{SECRETS}/"), Some(body)).await;
    assert_eq!(status, 201);
}
