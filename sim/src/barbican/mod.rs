//! Barbican (key manager v1) as the real Barbican 23 answers it (`sim/barbican-wire.md`,
//! recorded from `../shared/real-systems`): secrets stored with their payload given
//! inline as base64, listed with the `name` filter as SQL `LIKE` and `limit`/`offset`
//! pages, shown, deleted. What Octavia reads of them is in `octavia/tls.rs`.
//! Deliberately not here: orders, containers, consumers, ACL edits, secret stores.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use base64::Engine;
use chrono::Utc;
use serde_json::{Map, Value, json};

use crate::gate::{self, Reject};
use crate::query::{Params, encode_query};
use crate::state::Sim;
use crate::wire::{self, JSON};
use crate::world::barbican::StoredSecret;

pub(crate) const SERVICE: &str = "key-manager";
/// Where the catalog points; the API is under `/v1`.
const P: &str = "/key-manager/v1";
/// `max_allowed_request_size_in_bytes`: a longer body is cut and reads as bad JSON.
const MAX_REQUEST: usize = 25_000;
/// `max_allowed_secret_in_bytes`, of the payload as sent.
const MAX_SECRET: usize = 20_000;
const SECRET_TYPES: &[&str] = &[
    "symmetric",
    "passphrase",
    "private",
    "public",
    "certificate",
    "opaque",
];

pub(crate) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/key-manager", get(versions))
        .route("/key-manager/", get(versions))
        .route(P, get(version))
        .route(&format!("{P}/"), get(version))
        .route(&format!("{P}/secrets"), get(list).post(store))
        // python-barbicanclient writes the collection with a trailing slash.
        .route(&format!("{P}/secrets/"), get(list).post(store))
        .route(&format!("{P}/secrets/{{id}}"), get(get_one).delete(delete))
}

/// The version document at the catalog's URL, where clients negotiate the API.
async fn versions(State(sim): State<Sim>) -> Response {
    let body = json!({"versions": {"values": [{"id": "v1", "status": "stable",
        "links": [{"rel": "self", "href": format!("{}{P}/", sim.base)},
                  {"rel": "describedby", "type": "text/html", "href": "https://docs.openstack.org/"}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.key-manager-v1+json"}]}]}});
    let headers = [
        ("openstack-api-version", "key-manager 1.0".to_owned()),
        ("vary", "openstack-api-version".to_owned()),
    ];
    wire::respond(300, Some(JSON), &headers, Some(&body))
}

/// The v1 document: the microversions (`key-manager 1.0` to `1.2`) a client may ask for.
async fn version(State(sim): State<Sim>, headers: HeaderMap) -> Result<Response, Response> {
    enter(&sim, "get_version", &headers).await?;
    let asked = headers
        .get("openstack-api-version")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("key-manager "))
        .filter(|v| ["1.0", "1.1", "1.2"].contains(v))
        .unwrap_or("1.0");
    let body = json!({"version": {"id": "v1", "status": "CURRENT", "min_version": "1.0",
        "max_version": "1.2",
        "links": [{"rel": "self", "href": format!("{}{P}/", sim.base)},
                  {"rel": "describedby", "type": "text/html", "href": "https://docs.openstack.org/"}]}});
    let headers = [
        ("openstack-api-version", format!("key-manager {asked}")),
        ("vary", "openstack-api-version".to_owned()),
    ];
    Ok(wire::respond(200, Some(JSON), &headers, Some(&body)))
}

/// Barbican's error body.
fn err(status: u16, description: &str) -> Response {
    let body = json!({"code": status, "title": wire::title(status), "description": description});
    wire::respond(status, Some(JSON), &[], Some(&body))
}

fn schema_err(why: &str, property: &str) -> Response {
    err(
        400,
        &format!(
            "Provided object does not match schema 'Secret': {why}. Invalid property: '{property}'"
        ),
    )
}

async fn enter(
    sim: &Sim,
    operation: &'static str,
    headers: &HeaderMap,
) -> Result<String, Response> {
    gate::enter(sim, SERVICE, operation, headers, true)
        .await
        .map_err(|r| match r {
            Reject::Unauthorized => {
                wire::respond(401, Some(JSON), &[], Some(&wire::middleware_401()))
            }
            other => {
                let mut response = err(other.status(), &other.message());
                if let Some((k, v)) = other.retry_after()
                    && let Ok(v) = v.parse()
                {
                    response.headers_mut().insert(k, v);
                }
                response
            }
        })
}

/// The URL of secret `id`: what a listener's `default_tls_container_ref` holds.
fn secret_ref(sim: &Sim, id: &str) -> String {
    format!("{}{id}", secrets_prefix(sim))
}

/// What every secret's URL starts with.
pub(crate) fn secrets_prefix(sim: &Sim) -> String {
    format!("{}{P}/secrets/", sim.base)
}

fn view(sim: &Sim, s: &StoredSecret) -> Value {
    json!({
        "created": s.created, "updated": s.created, "status": "ACTIVE",
        "name": s.name, "secret_type": s.secret_type, "expiration": null,
        "algorithm": null, "bit_length": null, "mode": null,
        "content_types": {"default": s.content_type},
        "secret_ref": secret_ref(sim, &s.id),
    })
}

async fn store(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let project = enter(&sim, "store_secret", &headers).await?;
    let req: Map<String, Value> = (bytes.len() <= MAX_REQUEST)
        .then(|| serde_json::from_slice(&bytes).ok())
        .flatten()
        .ok_or_else(|| err(400, "Malformed JSON"))?;
    let payload = validate(&req)?;
    let mut w = sim.world_of(&project);
    let id = w.uuid();
    w.seq += 1;
    let secret = StoredSecret {
        id: id.clone(),
        name: req.get("name").and_then(Value::as_str).map(str::to_owned),
        secret_type: req
            .get("secret_type")
            .and_then(Value::as_str)
            .unwrap_or("opaque")
            .to_owned(),
        content_type: req
            .get("payload_content_type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        payload,
        created: wire::ts_naive(Utc::now()),
        seq: w.seq,
    };
    w.barbican.secrets.insert(id.clone(), secret);
    Ok(wire::respond(
        201,
        Some(JSON),
        &[("location", secret_ref(&sim, &id))],
        Some(&json!({"secret_ref": secret_ref(&sim, &id)})),
    ))
}

/// The payload a store request carries, decoded, or Barbican's refusal in its words.
fn validate(req: &Map<String, Value>) -> Result<Vec<u8>, Response> {
    if let Some(name) = req.get("name").and_then(Value::as_str)
        && name.chars().count() > 255
    {
        return Err(schema_err(&format!("'{name}' is too long"), "name"));
    }
    if let Some(kind) = req.get("secret_type").and_then(Value::as_str)
        && !SECRET_TYPES.contains(&kind)
    {
        let known = SECRET_TYPES
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(schema_err(
            &format!("'{kind}' is not one of [{known}]"),
            "secret_type",
        ));
    }
    let payload = req
        .get("payload")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if req.contains_key("payload") && payload.is_empty() {
        return Err(schema_err(
            "If 'payload' specified, must be non empty",
            "payload",
        ));
    }
    if !req.contains_key("payload_content_type") {
        return Err(schema_err(
            "If 'payload' is supplied, 'payload_content_type' must also be supplied.",
            "payload_content_type",
        ));
    }
    let encoding = req.get("payload_content_encoding").and_then(Value::as_str);
    if !matches!(encoding, Some("base64" | "binary")) {
        return Err(schema_err(
            "payload_content_encoding is not one of ['base64', 'binary']",
            "payload_content_encoding",
        ));
    }
    if payload.len() > MAX_SECRET {
        return Err(err(413, "Provided information too large to process"));
    }
    Ok(base64::engine::general_purpose::STANDARD
        .decode(payload)
        .unwrap_or_else(|_| payload.as_bytes().to_vec()))
}

/// SQL `LIKE`: `%` any run, `_` any one character.
fn like(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    fn go(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('%', rest)) => (0..=t.len()).any(|i| go(rest, &t[i..])),
            Some(('_', rest)) => !t.is_empty() && go(rest, &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && go(rest, &t[1..]),
        }
    }
    go(&p, &t)
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let project = enter(&sim, "list_secrets", &headers).await?;
    let param = |k: &str| q.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    let limit = param("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(10usize)
        .min(100);
    let offset = param("offset")
        .and_then(|o| o.parse().ok())
        .unwrap_or(0usize);
    let w = sim.world_of(&project);
    let mut found: Vec<&StoredSecret> = w
        .barbican
        .secrets
        .values()
        .filter(|s| {
            param("name").is_none_or(|n| s.name.as_deref().is_some_and(|name| like(n, name)))
        })
        .collect();
    found.sort_by_key(|s| s.seq);
    let total = found.len();
    let items: Vec<Value> = found
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|s| view(&sim, s))
        .collect();
    let mut body = json!({"secrets": items, "total": total});
    let page = |at: usize| {
        let mut params: Params = vec![
            ("limit".into(), limit.to_string()),
            ("offset".into(), at.to_string()),
        ];
        params.extend(
            q.iter()
                .filter(|(k, _)| k != "limit" && k != "offset")
                .cloned(),
        );
        format!("{}{P}/secrets?{}", sim.base, encode_query(&params))
    };
    if offset + limit < total {
        body["next"] = json!(page(offset + limit));
    }
    if offset > 0 {
        body["previous"] = json!(page(offset.saturating_sub(limit)));
    }
    Ok(wire::respond(200, Some(JSON), &[], Some(&body)))
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let project = enter(&sim, "get_secret", &headers).await?;
    let w = sim.world_of(&project);
    let s = w
        .barbican
        .secrets
        .get(&id)
        .ok_or_else(|| err(404, "Not Found. Provided secret id is invalid."))?;
    Ok(wire::respond(200, Some(JSON), &[], Some(&view(&sim, s))))
}

async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let project = enter(&sim, "delete_secret", &headers).await?;
    let mut w = sim.world_of(&project);
    match w.barbican.secrets.remove(&id) {
        Some(_) => Ok(wire::respond(204, None, &[], None)),
        None => Err(err(404, "Secret not found.")),
    }
}

#[cfg(test)]
mod tests {
    use super::like;

    #[test]
    fn names_match_as_sql_like_does() {
        assert!(like("verda-lb-1-%", "verda-lb-1-abc"));
        assert!(like("pg_1", "pg-1"));
        assert!(!like("verda-lb-1-%", "verda-lb-12-abc"));
        assert!(like("exact", "exact"));
        assert!(!like("exact", "exactly"));
    }
}
