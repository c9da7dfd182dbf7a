//! Neutron address groups: create (CIDRs only, host bits cleared, each once, sorted as
//! strings), list (ordered by ID; no tags, so a tag filter is refused), show, update
//! (`name`, `description`; `addresses` is read-only there), `add_addresses` and
//! `remove_addresses` (bare addresses become `/32` or `/128`; all or nothing) and
//! delete (refused while a rule names the group as its remote). The revision counts
//! the addresses added and removed, as Neutron's does (`neutron-security-groups.md`).
//!
//! Deliberately not here: tags (Neutron has none on address groups: their paths are
//! not routed, 404 `HTTPNotFound` as there), sharing (RBAC) and other projects' groups.

use std::collections::BTreeSet;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, put};
use chrono::Utc;
use serde_json::{Map, Value, json};

use super::envelope::{Cx, enter, list_answer, no_tag_filters, show};
use super::prefixes::{self, Prefix, py_list};
use super::schema::{self, Spec};
use crate::model::AddressGroup;
use crate::query::Params;
use crate::state::Sim;
use crate::wire::{self, py_str};

pub(super) fn routes(r: Router<Sim>) -> Router<Sim> {
    let one = "/network/v2.0/address-groups/{id}";
    r.route("/network/v2.0/address-groups", get(list).post(create))
        .route(one, get(get_one).put(update).delete(delete))
        .route(&format!("{one}/add_addresses"), put(add_addresses))
        .route(&format!("{one}/remove_addresses"), put(remove_addresses))
}

const SPEC: Spec = Spec {
    required: &[],
    read_only: &[
        "id",
        "shared",
        "created_at",
        "updated_at",
        "revision_number",
    ],
    create_only: &["addresses"],
    modelled: &["name", "description", "addresses"],
    other: &["tenant_id", "project_id"],
};

fn view(project: &str, a: &AddressGroup) -> Value {
    json!({
        "id": a.id, "name": a.name, "project_id": project, "addresses": a.addresses,
        "revision_number": a.revision, "description": a.description,
        "created_at": wire::ts_z(a.created), "updated_at": wire::ts_z(a.updated),
        "tenant_id": project
    })
}

pub(super) fn not_found(cx: &Cx, id: &str) -> Response {
    let msg = format!("Address group {id} could not be found.");
    cx.err(404, "AddressGroupNotFound", &msg)
}

fn internal(cx: &Cx) -> Response {
    let msg = "Request Failed: internal server error while processing your request.";
    cx.err(500, "HTTPInternalServerError", msg)
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_address_groups", &headers).await?;
    no_tag_filters(&cx, &q)?;
    let w = sim.world_of(&cx.project);
    let mut groups: Vec<&AddressGroup> = w.address_groups.iter().collect();
    groups.sort_by(|a, b| a.id.cmp(&b.id));
    let items: Vec<Value> = groups.into_iter().map(|a| view(&cx.project, a)).collect();
    drop(w);
    list_answer(&cx, "address_groups", items, &q, &|_, _, _| None)
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_address_group", &headers).await?;
    let w = sim.world_of(&cx.project);
    match w.address_groups.iter().find(|a| a.id == id) {
        Some(a) => Ok(show(&cx, "address_group", view(&cx.project, a), &q)),
        None => Err(not_found(&cx, &id)),
    }
}

/// `addresses` of a create body (`validate_subnet` of each): canonical, each once.
fn cidrs(cx: &Cx, v: &Value) -> Result<BTreeSet<String>, Response> {
    let Some(items) = v.as_array() else {
        let why = format!("'{}' is not a list", py_str(v));
        return Err(schema::invalid(cx, "addresses", &why));
    };
    let cidr = |i: &Value| prefixes::subnet(&py_str(i));
    let all: Result<BTreeSet<String>, String> = items.iter().map(cidr).collect();
    all.map_err(schema::invalid_for(cx, "addresses"))
}

/// (name, description, addresses) of a create or update body.
type Body = (Option<String>, Option<String>, BTreeSet<String>);

fn check(cx: &Cx, req: &Map<String, Value>, create: bool) -> Result<Body, Response> {
    schema::attributes(cx, req, &SPEC, create)?;
    let name = schema::text(cx, req, "name")?;
    let description = schema::text(cx, req, "description")?;
    let addresses = match req.get("addresses") {
        Some(v) => cidrs(cx, v)?,
        None => BTreeSet::new(),
    };
    schema::unknown(cx, req, &SPEC)?;
    Ok((name, description, addresses))
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_address_group", &headers).await?;
    let req = schema::body(&cx, &bytes, "address_group")?;
    let (name, description, addresses) = check(&cx, &req, true)?;
    let mut w = sim.world_of(&cx.project);
    let now = Utc::now();
    let group = AddressGroup {
        id: w.uuid(),
        seq: w.next_seq(),
        name: name.unwrap_or_default(),
        description: description.unwrap_or_default(),
        revision: addresses.len() as u64,
        addresses: addresses.into_iter().collect(),
        created: now,
        updated: now,
    };
    let answer = json!({"address_group": view(&cx.project, &group)});
    w.address_groups.push(group);
    Ok(cx.ok(201, &answer))
}

async fn update(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "update_address_group", &headers).await?;
    let req = schema::body(&cx, &bytes, "address_group")?;
    let (name, description, _) = check(&cx, &req, false)?;
    let mut w = sim.world_of(&cx.project);
    let a = w.address_groups.iter_mut().find(|a| a.id == id);
    let a = a.ok_or_else(|| not_found(&cx, &id))?;
    a.name = name.unwrap_or(std::mem::take(&mut a.name));
    a.description = description.unwrap_or(std::mem::take(&mut a.description));
    a.revision += 1;
    a.updated = Utc::now();
    Ok(cx.ok(200, &json!({"address_group": view(&cx.project, a)})))
}

/// The `addresses` of an `add_addresses`/`remove_addresses` body, each as netaddr's
/// `IPNetwork` reads it. A string is read character by character, as Python iterates
/// it; no list at all is the real Neutron's 500.
fn wanted(cx: &Cx, bytes: &[u8]) -> Result<BTreeSet<String>, Response> {
    let req = wire::parse_body(bytes).unwrap_or(Value::Null);
    let items: Vec<String> = match req.get("addresses") {
        Some(Value::Array(items)) => items.iter().map(py_str).collect(),
        Some(Value::String(s)) => s.chars().map(String::from).collect(),
        _ => return Err(internal(cx)),
    };
    let network = |i: &String| match Prefix::parse(i) {
        Some(p) => Ok(p.network()),
        None => Err(cx.err(400, "AddrFormatError", &format!("invalid IPNetwork {i}"))),
    };
    items.iter().map(network).collect()
}

/// Adds (or removes) `addresses`, all or none; the group as the answer shows it.
fn change(cx: &Cx, a: &mut AddressGroup, addresses: BTreeSet<String>, add: bool) -> Value {
    let have: BTreeSet<String> = a.addresses.iter().cloned().collect();
    let now: BTreeSet<String> = match add {
        true => have.union(&addresses).cloned().collect(),
        false => have.difference(&addresses).cloned().collect(),
    };
    a.addresses = now.into_iter().collect();
    a.revision += addresses.len() as u64;
    a.updated = Utc::now();
    let mut v = view(&cx.project, a);
    v["shared"] = json!(false);
    v["standard_attr_id"] = json!(a.seq);
    json!({"address_group": v})
}

/// `add_addresses` (`add`) or `remove_addresses`: 400 `AddressesAlreadyExist` or 404
/// `AddressesNotFound` naming the offending addresses, sorted.
fn addresses(sim: &Sim, cx: &Cx, id: &str, bytes: &[u8], add: bool) -> Result<Response, Response> {
    let addresses = wanted(cx, bytes)?;
    let mut w = sim.world_of(&cx.project);
    let a = w.address_groups.iter_mut().find(|a| a.id == id);
    let a = a.ok_or_else(|| not_found(cx, id))?;
    let wrong: Vec<String> = addresses
        .iter()
        .filter(|x| a.addresses.contains(x) == add)
        .cloned()
        .collect();
    if wrong.is_empty() {
        return Ok(cx.ok(200, &change(cx, a, addresses, add)));
    }
    let listed = py_list(&wrong);
    Err(match add {
        true => {
            let msg = format!("Addresses {listed} already exist in the address group {id}.");
            cx.err(400, "AddressesAlreadyExist", &msg)
        }
        false => {
            let msg = format!("Addresses {listed} not found in the address group {id}.");
            cx.err(404, "AddressesNotFound", &msg)
        }
    })
}

async fn add_addresses(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "add_address_group_addresses", &headers).await?;
    addresses(&sim, &cx, &id, &bytes, true)
}

async fn remove_addresses(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "remove_address_group_addresses", &headers).await?;
    addresses(&sim, &cx, &id, &bytes, false)
}

async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_address_group", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    if !w.address_groups.iter().any(|a| a.id == id) {
        return Err(not_found(&cx, &id));
    }
    if w.address_group_in_use(&id) {
        let msg = format!("Address group {id} is in use on one or more security group rules.");
        return Err(cx.err(409, "AddressGroupInUse", &msg));
    }
    w.address_groups.retain(|a| a.id != id);
    Ok(cx.empty())
}
