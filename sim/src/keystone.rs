//! Keystone v3: version documents and `/v3/auth/tokens` (issue with password,
//! application credential or token; validate; revoke), with the service catalog.
//! No users/projects/roles CRUD: the identities are the seeded ones (`seed.rs`).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use chrono::Utc;
use serde_json::{Value, json};

use super::faults::lock;
use super::gate::{self, Reject};
use super::seed::{self, REGIONS};
use super::state::{Sim, Token};
use super::wire::{self, JSON};

const SERVICE: &str = "identity";

pub(crate) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/identity", get(versions))
        .route("/identity/", get(versions))
        .route("/identity/v3", get(version))
        .route("/identity/v3/", get(version))
        .route(
            "/identity/v3/auth/tokens",
            get(validate).post(issue).delete(revoke),
        )
}

fn version_doc(sim: &Sim) -> Value {
    json!({
        "id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
        "links": [{"rel": "self", "href": format!("{}/identity/v3/", sim.base)}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}]
    })
}

fn std_headers(rid: &str) -> Vec<(&'static str, String)> {
    vec![
        ("vary", "X-Auth-Token".into()),
        ("x-openstack-request-id", rid.to_string()),
    ]
}

async fn versions(State(sim): State<Sim>) -> Response {
    sim.counters.bump(SERVICE, "versions");
    let mut headers = std_headers(&wire::request_id());
    headers.push(("location", format!("{}/identity/v3/", sim.base)));
    let body = json!({"versions": {"values": [version_doc(&sim)]}});
    wire::respond(300, Some(JSON), &headers, Some(&body))
}

async fn version(State(sim): State<Sim>) -> Response {
    sim.counters.bump(SERVICE, "versions");
    wire::respond(
        200,
        Some(JSON),
        &std_headers(&wire::request_id()),
        Some(&json!({"version": version_doc(&sim)})),
    )
}

fn error(sim: &Sim, status: u16, message: &str, extra: Option<(&'static str, String)>) -> Response {
    let mut headers = std_headers(&wire::request_id());
    if status == 401 {
        headers.push((
            "www-authenticate",
            format!("Keystone uri=\"{}/identity/v3\"", sim.base),
        ));
    }
    headers.extend(extra);
    wire::respond(
        status,
        Some(JSON),
        &headers,
        Some(&wire::keystone_error(status, message)),
    )
}

fn reject(sim: &Sim, r: Reject) -> Response {
    error(sim, r.status(), &r.message(), r.retry_after())
}

fn bad_request(sim: &Sim, what: &str, within: &str) -> Response {
    let msg = format!(
        "Expecting to find {what} in {within}. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error."
    );
    error(sim, 400, &msg, None)
}

/// Outcome of checking the credentials in an auth request, with whose they are (an
/// index into the seeded identities).
enum Identity {
    Password(usize),
    AppCred(usize),
    Token(usize),
}

impl Identity {
    fn who(&self) -> usize {
        match self {
            Identity::Password(i) | Identity::AppCred(i) | Identity::Token(i) => *i,
        }
    }
}

async fn issue(State(sim): State<Sim>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = gate::enter(&sim, SERVICE, "issue_token", &headers, false).await {
        return reject(&sim, r);
    }
    let Some(req) = wire::parse_body(&body) else {
        return error(&sim, 400, "Malformed request body.", None);
    };
    let Some(identity) = req.pointer("/auth/identity") else {
        return bad_request(&sim, "identity", "auth");
    };
    let methods: Vec<String> = identity["methods"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let kind = match methods.first().map(String::as_str) {
        Some("password") if identity.get("password").is_none() => {
            return bad_request(&sim, "password", "identity");
        }
        Some("password") => {
            password_ok(&sim, &identity["password"]["user"]).map(Identity::Password)
        }
        Some("application_credential") if identity.get("application_credential").is_none() => {
            return bad_request(&sim, "application_credential", "identity");
        }
        Some("application_credential") => {
            app_cred_ok(&sim, &identity["application_credential"]).map(Identity::AppCred)
        }
        Some("token") => token_ok(&sim, &identity["token"]).map(Identity::Token),
        Some(_) => None,
        None => return bad_request(&sim, "methods", "identity"),
    };
    let Some(kind) = kind else {
        return error(&sim, 401, wire::UNAUTHORIZED_MSG, None);
    };
    let scope = req.pointer("/auth/scope");
    let scoped = match (&kind, scope) {
        (Identity::AppCred(_), Some(_)) => {
            return error(
                &sim,
                401,
                "Application credentials cannot request a scope.",
                None,
            );
        }
        (Identity::AppCred(_), None) => true,
        (_, None) => false,
        (_, Some(s)) if project_ok(&sim, &s["project"], kind.who()) => true,
        (_, Some(_)) => return error(&sim, 401, wire::UNAUTHORIZED_MSG, None),
    };
    let app_cred = matches!(kind, Identity::AppCred(_));
    let (id, token) = mint(&sim, methods, scoped, app_cred, kind.who());
    let body = token_body(&sim, &token);
    let mut headers = vec![("x-subject-token", id)];
    headers.extend(std_headers(&wire::request_id()));
    wire::respond(201, Some(JSON), &headers, Some(&body))
}

fn domain_ok(d: &Value) -> bool {
    d["id"].as_str() == Some(seed::DOMAIN_ID) || d["name"].as_str() == Some(seed::DOMAIN)
}

/// The identity a user reference names.
fn user_of(sim: &Sim, u: &Value) -> Option<usize> {
    sim.identities.iter().position(|i| {
        u["id"].as_str() == Some(i.user_id.as_str())
            || (u["name"].as_str() == Some(i.username.as_str()) && domain_ok(&u["domain"]))
    })
}

fn password_ok(sim: &Sim, u: &Value) -> Option<usize> {
    user_of(sim, u).filter(|&i| u["password"].as_str() == Some(sim.identities[i].password.as_str()))
}

fn app_cred_ok(sim: &Sim, a: &Value) -> Option<usize> {
    let user = user_of(sim, &a["user"]);
    let identities = &sim.identities;
    (0..identities.len()).find(|&who| {
        let i = &identities[who];
        let named = a["id"].as_str() == Some(i.application_credential_id.as_str())
            || (a["name"].as_str() == Some(i.application_credential_name.as_str())
                && user == Some(who));
        named && a["secret"].as_str() == Some(i.application_credential_secret.as_str())
    })
}

fn token_ok(sim: &Sim, t: &Value) -> Option<usize> {
    let id = t["id"].as_str().unwrap_or_default();
    lock(&sim.tokens)
        .get(id)
        .filter(|t| crate::state::live(sim, t))
        .map(|t| t.identity)
}

/// Whether `p` names the project of identity `who` (a user may scope only to its own).
fn project_ok(sim: &Sim, p: &Value, who: usize) -> bool {
    let identity = &sim.identities[who];
    p["id"].as_str() == Some(identity.project_id.as_str())
        || (p["name"].as_str() == Some(identity.project_name.as_str()) && domain_ok(&p["domain"]))
}

fn mint(
    sim: &Sim,
    methods: Vec<String>,
    scoped: bool,
    app_cred: bool,
    identity: usize,
) -> (String, Token) {
    let id = format!(
        "gAAAAAB{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let issued = Utc::now();
    let lifetime = sim.config.token_lifetime;
    let token = Token {
        methods,
        scoped,
        app_cred,
        issued,
        expires: issued + chrono::Duration::from_std(lifetime).unwrap_or(chrono::Duration::days(1)),
        valid_until: Instant::now() + lifetime,
        audit_id: uuid::Uuid::new_v4().simple().to_string()[..22].to_string(),
        identity,
    };
    lock(&sim.tokens).insert(id.clone(), token.clone());
    (id, token)
}

fn token_body(sim: &Sim, t: &Token) -> Value {
    let who = &sim.identities[t.identity];
    let domain = json!({"id": seed::DOMAIN_ID, "name": seed::DOMAIN});
    let mut token = json!({
        "methods": t.methods,
        "user": {"domain": domain, "id": who.user_id, "name": who.username, "password_expires_at": null},
        "audit_ids": [t.audit_id],
        "expires_at": wire::ts_micro_z(t.expires),
        "issued_at": wire::ts_micro_z(t.issued),
    });
    if t.scoped {
        token["project"] =
            json!({"domain": domain, "id": who.project_id, "name": who.project_name});
        token["is_domain"] = json!(false);
        token["roles"] = json!([
            {"id": "66d13cecc9a74aca9f87065c6f8c174e", "name": "reader"},
            {"id": "d827a96a6fb946fb8f3c91960b9bf1f4", "name": "load-balancer_member"},
            {"id": "25f78737996f4797b232255102351e7b", "name": "member"}
        ]);
        token["catalog"] = catalog(&sim.base, &who.project_id);
    }
    if t.app_cred {
        token["application_credential"] = json!({
            "id": who.application_credential_id,
            "name": who.application_credential_name,
            "restricted": true
        });
    }
    json!({ "token": token })
}

/// The service catalog: every service in both regions, three interfaces each. Cinder
/// is listed as `block-storage` and `volumev3` (what Nova looks up), its URL naming
/// the token's project, as the real catalog has it.
pub(crate) fn catalog(base: &str, project: &str) -> Value {
    let cinder = format!("{base}/volume/v3/{project}");
    let services = [
        ("block-storage", "cinder", cinder.clone()),
        ("volumev3", "cinderv3", cinder),
        ("compute", "nova", format!("{base}/compute/v2.1")),
        ("image", "glance", format!("{base}/image")),
        ("network", "neutron", format!("{base}/network")),
        ("load-balancer", "octavia", format!("{base}/load-balancer")),
        ("key-manager", "barbican", format!("{base}/key-manager")),
        ("dns", "designate", format!("{base}/dns")),
        ("identity", "keystone", format!("{base}/identity/v3")),
    ];
    let entries: Vec<Value> = services
        .iter()
        .map(|(kind, name, url)| {
            let mut endpoints = Vec::new();
            for region in REGIONS {
                for iface in ["public", "internal", "admin"] {
                    endpoints.push(json!({
                        "id": hex_id(&(kind, region, iface)), "interface": iface,
                        "region_id": region, "url": url, "region": region
                    }));
                }
            }
            json!({"endpoints": endpoints, "id": hex_id(kind), "type": kind, "name": name})
        })
        .collect();
    Value::Array(entries)
}

/// A stable 32-hex-digit ID derived from `key`.
fn hex_id(key: &impl Hash) -> String {
    let mut a = DefaultHasher::new();
    key.hash(&mut a);
    let first = a.finish();
    first.hash(&mut a);
    format!("{first:016x}{:016x}", a.finish())
}

async fn validate(State(sim): State<Sim>, headers: HeaderMap) -> Response {
    if let Err(r) = gate::enter(&sim, SERVICE, "validate_token", &headers, true).await {
        return reject(&sim, r);
    }
    let subject = headers
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let token = lock(&sim.tokens)
        .get(&subject)
        .filter(|t| crate::state::live(&sim, t))
        .cloned();
    match token {
        Some(t) => {
            let mut h = vec![("x-subject-token", subject)];
            h.extend(std_headers(&wire::request_id()));
            wire::respond(200, Some(JSON), &h, Some(&token_body(&sim, &t)))
        }
        None => error(&sim, 404, "Could not recognize Fernet token", None),
    }
}

async fn revoke(State(sim): State<Sim>, headers: HeaderMap) -> Response {
    if let Err(r) = gate::enter(&sim, SERVICE, "revoke_token", &headers, true).await {
        return reject(&sim, r);
    }
    let subject = headers
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    match lock(&sim.tokens).remove(subject) {
        Some(_) => wire::respond(204, None, &std_headers(&wire::request_id()), None),
        None => error(&sim, 404, "Could not recognize Fernet token", None),
    }
}
