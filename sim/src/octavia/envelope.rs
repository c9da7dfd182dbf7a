//! The request envelope of the simulated Octavia: the request context (request ID,
//! microversion where the service has one, answers and fault bodies), entering through
//! the gate, and the body and listing helpers every resource uses.

use crate::gate::{self, Reject};
use crate::query::{self, encode_query};
use crate::state::Sim;
use crate::wire::{self, JSON};
use crate::world::World;
use crate::world::octavia::{Meta, Prov};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};

pub(crate) const SERVICE: &str = "load-balancer";

/// The request context of one Octavia call.
pub(crate) struct Cx {
    rid: String,
    base: String,
    /// The project of the request's token: whose world it sees.
    pub project: String,
}

impl Cx {
    fn headers(&self) -> Vec<(&'static str, String)> {
        vec![("x-openstack-request-id", self.rid.clone())]
    }

    pub fn ok(&self, status: u16, body: &Value) -> Response {
        wire::respond(status, Some(JSON), &self.headers(), Some(body))
    }

    /// 202/204 answers carry no body and no `Content-Type`.
    pub fn empty(&self, status: u16) -> Response {
        wire::respond(status, None, &self.headers(), None)
    }

    pub fn err(&self, status: u16, message: &str) -> Response {
        wire::respond(
            status,
            Some(JSON),
            &self.headers(),
            Some(&wire::octavia_error(status, message)),
        )
    }

    fn reject(&self, r: Reject) -> Response {
        if r == Reject::Unauthorized {
            let h = [(
                "www-authenticate",
                format!("Keystone uri=\"{}/identity\"", self.base),
            )];
            return wire::respond(401, Some(JSON), &h, Some(&wire::middleware_401()));
        }
        let mut h = self.headers();
        h.extend(r.retry_after());
        wire::respond(
            r.status(),
            Some(JSON),
            &h,
            Some(&wire::octavia_error(r.status(), &r.message())),
        )
    }
}

pub(crate) async fn enter(
    sim: &Sim,
    operation: &'static str,
    headers: &HeaderMap,
) -> Result<Cx, Response> {
    let cx = Cx {
        rid: wire::request_id(),
        base: sim.base.clone(),
        project: String::new(),
    };
    let project = gate::enter(sim, SERVICE, operation, headers, true)
        .await
        .map_err(|r| cx.reject(r))?;
    Ok(Cx { project, ..cx })
}

/// Refuses a child write with Octavia's 409 while the tree is locked.
pub(crate) fn ensure_mutable(
    cx: &Cx,
    w: &World,
    lb_id: &str,
    pool_id: Option<&str>,
) -> Result<(), Response> {
    if let Some(pool) = pool_id
        .and_then(|p| w.octavia.pools.get(p))
        .filter(|p| p.meta.prov.pending())
    {
        let message = format!("Pool {} is immutable and cannot be updated.", pool.meta.id);
        return Err(cx.err(409, &message));
    }
    match w.octavia.lbs.get(lb_id) {
        Some(lb) if lb.meta.prov.pending() => Err(cx.err(
            409,
            &format!("Load Balancer {lb_id} is immutable and cannot be updated."),
        )),
        _ => Ok(()),
    }
}

/// The object under `key` of a JSON body (`{"loadbalancer": {...}}`).
/// Octavia's 404 for a load balancer that does not exist.
pub(crate) fn lb_not_found(cx: &Cx, id: &str) -> Response {
    cx.err(404, &format!("Load Balancer {id} not found."))
}

/// Octavia's 404 for a pool that does not exist.
pub(crate) fn pool_not_found(cx: &Cx, id: &str) -> Response {
    cx.err(404, &format!("Pool {id} not found."))
}

pub(crate) fn body(cx: &Cx, bytes: &[u8], key: &str) -> Result<Map<String, Value>, Response> {
    let v = wire::parse_body(bytes).ok_or_else(|| cx.err(400, "Invalid JSON body"))?;
    v.get(key)
        .and_then(Value::as_object)
        .cloned()
        .ok_or_else(|| cx.err(400, &format!("Missing mandatory field {key}")))
}

pub(crate) fn mandatory<'a>(
    cx: &Cx,
    req: &'a Map<String, Value>,
    field: &str,
) -> Result<&'a Value, Response> {
    req.get(field).filter(|v| !v.is_null()).ok_or_else(|| {
        cx.err(
            400,
            &format!(
                "Invalid input for field/attribute {field}. Value: 'None'. Mandatory field missing."
            ),
        )
    })
}

pub(crate) fn str_field(req: &Map<String, Value>, field: &str) -> Option<String> {
    req.get(field).and_then(Value::as_str).map(str::to_string)
}

pub(crate) fn u64_field(req: &Map<String, Value>, field: &str) -> Option<u64> {
    req.get(field).and_then(Value::as_u64)
}

fn tags(req: &Map<String, Value>) -> Option<Vec<String>> {
    req.get("tags").and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect()
    })
}

/// Common fields of a new object, `PENDING_CREATE`.
pub(crate) fn new_meta(w: &mut World, req: &Map<String, Value>) -> Meta {
    Meta {
        id: w.uuid(),
        seq: w.next_seq(),
        name: str_field(req, "name").unwrap_or_default(),
        description: str_field(req, "description").unwrap_or_default(),
        prov: Prov::PendingCreate,
        admin_state_up: req
            .get("admin_state_up")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        tags: tags(req).unwrap_or_default(),
        created: Utc::now(),
        updated: None,
    }
}

/// Applies the common updatable fields and marks the object `PENDING_UPDATE`.
pub(crate) fn update_meta(meta: &mut Meta, req: &Map<String, Value>) {
    if let Some(n) = str_field(req, "name") {
        meta.name = n;
    }
    if let Some(d) = str_field(req, "description") {
        meta.description = d;
    }
    if let Some(t) = tags(req) {
        meta.tags = t;
    }
    if let Some(a) = req.get("admin_state_up").and_then(Value::as_bool) {
        meta.admin_state_up = a;
    }
    meta.prov = Prov::PendingUpdate;
    meta.updated = Some(Utc::now());
}

/// Filters by attributes (unknown filters are ignored, as Octavia does), `loadbalancer_id`
/// via the `loadbalancers` list, pages with a `next` link, projects `fields`.
pub(crate) fn list_answer(
    cx: &Cx,
    collection: &str,
    items: Vec<Value>,
    q: &query::Params,
) -> Result<Response, Response> {
    let extra = |item: &Value, key: &str, value: &str| match key {
        "loadbalancer_id" => Some(
            item["loadbalancers"]
                .as_array()
                .is_some_and(|a| a.iter().any(|l| l["id"] == value)),
        ),
        "pool_id" => Some(
            item["pools"]
                .as_array()
                .is_some_and(|a| a.iter().any(|p| p["id"] == value)),
        ),
        _ if item.get(key).is_none() => Some(true),
        _ => None,
    };
    let filtered =
        query::filter(items, q, &extra).map_err(|k| cx.err(400, &format!("Invalid filter {k}")))?;
    let (page, next) = query::paginate(filtered, q).map_err(|m| cx.err(400, &m))?;
    let mut links = Vec::new();
    if let Some(marker) = next {
        let mut p: Vec<(String, String)> =
            q.iter().filter(|(k, _)| k != "marker").cloned().collect();
        p.push(("marker".into(), marker));
        links.push(json!({"rel": "next", "href": format!("{}/load-balancer/v2/lbaas/{collection}?{}", cx.base, encode_query(&p))}));
    }
    Ok(cx.ok(
        200,
        &json!({ collection: query::project(page, q), format!("{collection}_links"): links }),
    ))
}
