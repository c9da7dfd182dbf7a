//! Barbican secrets of terminated-https listeners: list by name, store, delete.
//! Barbican's `name` filter is SQL `LIKE`: a trailing `%` lists by prefix.

use base64::Engine;
use http::Method;
use serde_json::json;

use super::OpenStackClient;
use crate::cloud::auth::Service;
use crate::cloud::model::key_manager::StoredSecret;
use crate::cloud::services::CloudResult;
use crate::cloud::transport::Request;

/// Barbican's largest page.
const PAGE: &str = "100";

fn barbican(op: &'static str, method: Method, path: impl Into<String>) -> Request {
    Request::new(Service::KeyManager, op, method, path)
}

pub(super) async fn list(client: &OpenStackClient, prefix: &str) -> CloudResult<Vec<StoredSecret>> {
    let req = barbican("list_secrets", Method::GET, "/secrets")
        .query("name", format!("{prefix}%"))
        .query("limit", PAGE);
    let action = format!("list the Barbican secrets named {prefix}…");
    let listed: Vec<StoredSecret> = client.list_all(req, "secrets", &action).await?;
    // `LIKE` takes `_` as any one character: keep the names that do start so.
    Ok(listed
        .into_iter()
        .filter(|s| s.name.as_deref().is_some_and(|n| n.starts_with(prefix)))
        .collect())
}

/// Stores `payload` as an opaque secret (binary, sent as base64), as Octavia reads a
/// PKCS#12 bundle.
pub(super) async fn store(
    client: &OpenStackClient,
    name: &str,
    payload: &[u8],
) -> CloudResult<StoredSecret> {
    let req = barbican("store_secret", Method::POST, "/secrets").json(json!({
        "name": name,
        "secret_type": "opaque",
        "payload": base64::engine::general_purpose::STANDARD.encode(payload),
        "payload_content_type": "application/octet-stream",
        "payload_content_encoding": "base64",
    }));
    let action = format!("store Barbican secret {name}");
    let secret_ref: String = client.fetch(&req, "secret_ref", &action).await?;
    Ok(StoredSecret {
        secret_ref,
        name: Some(name.to_owned()),
    })
}

pub(super) async fn delete(client: &OpenStackClient, secret: &StoredSecret) -> CloudResult<()> {
    let uuid = secret.uuid();
    let req = barbican("delete_secret", Method::DELETE, format!("/secrets/{uuid}"));
    let name = secret.name.as_deref().unwrap_or(uuid);
    client
        .execute(&req, &format!("delete Barbican secret {name}"))
        .await
}
