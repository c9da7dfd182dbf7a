//! Designate (DNS v2) as the real Designate 23 answers it (`sim/designate-wire.md`,
//! recorded from `../shared/real-systems`): zones created (`PENDING` until their name
//! servers serve them, with their NS and SOA record sets), listed by name, shown and
//! deleted; A and AAAA record sets created, listed by name and type in `limit`/`marker`
//! pages, updated and deleted. A change is `PENDING` for the simulator's `lb_delay`,
//! then `ACTIVE`; a record set's change leaves its zone `PENDING` `UPDATE` as long, and
//! a zone deleted meanwhile ends `ERROR` `DELETE` until deleted again. Deliberately not
//! here: other record types' syntax, shared zones, imports, exports, transfers, quotas.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use chrono::Utc;
use serde_json::{Map, Value, json};

use crate::gate::{self, Reject};
use crate::query::{Params, encode_query};
use crate::state::Sim;
use crate::wire::{self, JSON};
use crate::world::World;
use crate::world::designate::{DnsZone, RecordSet};

pub(crate) const SERVICE: &str = "dns";
const P: &str = "/dns/v2";
/// Designate's `default_limit_v2` and `max_limit_v2`.
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 1000;
/// The name server the real systems' pool announces.
const NAME_SERVER: &str = "ns1.osharness.test.";

pub(crate) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route(&format!("{P}/zones"), get(list_zones).post(create_zone))
        .route(
            &format!("{P}/zones/{{zone}}"),
            get(get_zone).patch(update_zone).delete(delete_zone),
        )
        .route(
            &format!("{P}/zones/{{zone}}/nameservers"),
            get(zone_nameservers),
        )
        .route(
            &format!("{P}/zones/{{zone}}/recordsets"),
            get(list_record_sets).post(create_record_set),
        )
        .route(
            &format!("{P}/zones/{{zone}}/recordsets/{{id}}"),
            get(get_record_set)
                .put(update_record_set)
                .delete(delete_record_set),
        )
}

/// Designate's error body.
fn err(status: u16, type_: &str, message: &str) -> Response {
    let body = json!({"code": status, "type": type_, "message": message,
        "request_id": wire::request_id()});
    wire::respond(status, Some(JSON), &[], Some(&body))
}

fn zone_not_found() -> Response {
    err(404, "zone_not_found", "Could not find Zone")
}

/// The name of `zone`, or Designate's 404.
fn zone_name(w: &World, zone: &str) -> Result<String, Response> {
    let z = w.designate.zones.get(zone).ok_or_else(zone_not_found)?;
    Ok(z.name.clone())
}

/// Record set `id` of `zone`, or Designate's 404.
fn record_set_in<'a>(w: &'a World, zone: &str, id: &str) -> Result<&'a RecordSet, Response> {
    w.designate
        .record_sets
        .get(id)
        .filter(|r| r.zone_id == zone)
        .ok_or_else(record_set_not_found)
}

fn record_set_not_found() -> Response {
    err(404, "recordset_not_found", "Could not find RecordSet")
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
            other => err(other.status(), "service_unavailable", &other.message()),
        })
}

fn body_of(bytes: &Bytes) -> Result<Map<String, Value>, Response> {
    serde_json::from_slice(bytes).map_err(|_| err(400, "invalid_json", "Invalid JSON"))
}

fn pending_until(ready_at: Instant) -> &'static str {
    if Instant::now() < ready_at {
        "PENDING"
    } else {
        "ACTIVE"
    }
}

fn zone_view(sim: &Sim, project: &str, z: &DnsZone) -> Value {
    let status = z.status(Instant::now());
    json!({"id": z.id, "pool_id": "794ccc2c-d751-44fe-b57f-8894c9f5c842", "project_id": project,
        "name": z.name, "email": z.email, "description": z.description, "ttl": z.ttl,
        "serial": shown_serial(z, status), "shared": false, "status": status,
        "action": if status == "ACTIVE" { "NONE" } else { z.action }, "version": z.version,
        "attributes": {}, "type": "PRIMARY", "masters": [], "created_at": z.created,
        "updated_at": z.updated, "transferred_at": null,
        "links": {"self": format!("{}{P}/zones/{}", sim.base, z.id)}})
}

/// The serial served: a change still `PENDING` has not reached the SOA yet.
fn shown_serial(z: &DnsZone, status: &str) -> u64 {
    match (status, z.action) {
        ("PENDING", "UPDATE") => z.serial - 1,
        _ => z.serial,
    }
}

fn record_set_view(sim: &Sim, project: &str, zone: &str, r: &RecordSet) -> Value {
    let status = pending_until(r.ready_at);
    json!({"id": r.id, "zone_id": r.zone_id, "project_id": project, "name": r.name,
        "zone_name": zone, "type": r.type_, "records": r.records,
        "description": r.description, "ttl": r.ttl, "status": status,
        "action": if status == "PENDING" { r.action } else { "NONE" },
        "version": r.version, "created_at": r.created, "updated_at": r.updated,
        "links": {"self": format!("{}{P}/zones/{}/recordsets/{}", sim.base, r.zone_id, r.id)}})
}

/// One page of `items` (in creation order) after `marker`, with Designate's `links`
/// and `metadata`.
fn page(
    sim: &Sim,
    path: &str,
    q: &Params,
    items: Vec<(String, Value)>,
    key: &str,
) -> Result<Response, Response> {
    let param = |k: &str| q.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    let limit = match param("limit") {
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| *l > 0)
            .ok_or_else(|| err(400, "invalid_limit", "limit should be an integer > 0"))?
            .min(MAX_LIMIT),
        None => DEFAULT_LIMIT,
    };
    let total = items.len();
    let start = match param("marker") {
        Some(m) => items
            .iter()
            .position(|(id, _)| id == m)
            .map(|i| i + 1)
            .ok_or_else(|| err(400, "invalid_marker", "invalid marker"))?,
        None => 0,
    };
    let shown: Vec<(String, Value)> = items.into_iter().skip(start).take(limit).collect();
    let url = |params: &Params| match params.is_empty() {
        true => format!("{}{P}{path}", sim.base),
        false => format!("{}{P}{path}?{}", sim.base, encode_query(params)),
    };
    let mut links = json!({"self": url(q)});
    if start + shown.len() < total
        && let Some((last, _)) = shown.last()
    {
        let mut next: Params = q.iter().filter(|(k, _)| k != "marker").cloned().collect();
        if param("limit").is_none() {
            next.push(("limit".into(), limit.to_string()));
        }
        next.push(("marker".into(), last.clone()));
        links["next"] = json!(url(&next));
    }
    let values: Vec<Value> = shown.into_iter().map(|(_, v)| v).collect();
    let body = json!({key: values, "links": links, "metadata": {"total_count": total}});
    Ok(wire::respond(200, Some(JSON), &[], Some(&body)))
}

async fn list_zones(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let project = enter(&sim, "list_zones", &headers).await?;
    let name = q.iter().find(|(k, _)| k == "name").map(|(_, v)| v.clone());
    let w = sim.world_of(&project);
    let mut zones: Vec<&DnsZone> = w
        .designate
        .zones
        .values()
        .filter(|z| name.as_ref().is_none_or(|n| glob(n, &z.name)))
        .collect();
    zones.sort_by_key(|z| z.seq);
    let items = zones
        .into_iter()
        .map(|z| (z.id.clone(), zone_view(&sim, &project, z)))
        .collect();
    page(&sim, "/zones", &q, items, "zones")
}

/// Designate's filters take `*` as any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(tail) = text.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len()).any(|i| tail.is_char_boundary(i) && glob(rest, &tail[i..]))
        }
    }
}

async fn create_zone(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let project = enter(&sim, "create_zone", &headers).await?;
    let req = body_of(&bytes)?;
    let name = req
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let email = req
        .get("email")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    check_zone(&name, &email)?;
    // Zone names are Designate's, not a project's: another project's counts too.
    let own = sim.worlds.get(&project);
    let elsewhere = sim.worlds.values().any(|world| {
        let other = own.is_some_and(|own| !std::ptr::eq(own, world));
        other
            && crate::faults::lock(world)
                .designate
                .zones
                .values()
                .any(|z| z.name == name)
    });
    if elsewhere {
        let message = "Zone already exists, owned by a different tenant";
        return Err(err(409, "duplicate_zone", message));
    }
    let mut w = sim.world_of(&project);
    if w.designate.zones.values().any(|z| z.name == name) {
        return Err(err(409, "duplicate_zone", "Duplicate Zone"));
    }
    let ttl = req.get("ttl").and_then(Value::as_i64).unwrap_or(3600);
    let description = req
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let ready_at = Instant::now() + w.lb_delay;
    let zone = new_zone(&mut w, name, email, ttl, description, ready_at);
    let view = zone_view(&sim, &project, &zone);
    let location = format!("{}{P}/zones/{}", sim.base, zone.id);
    Ok(wire::respond(
        202,
        Some(JSON),
        &[("location", location)],
        Some(&view),
    ))
}

/// Designate's refusal of a zone's name or email.
fn check_zone(name: &str, email: &str) -> Result<(), Response> {
    if !name.ends_with('.') || name.len() < 2 {
        let message = format!("'{name}' is not a 'domainname'");
        return Err(err(400, "invalid_object", &message));
    }
    if email.is_empty() {
        return Err(err(400, "invalid_object", "'email' is a required property"));
    }
    Ok(())
}

/// A zone in `w` with its NS and SOA record sets, as Designate makes them.
fn new_zone(
    w: &mut World,
    name: String,
    email: String,
    ttl: i64,
    description: Option<String>,
    ready_at: Instant,
) -> DnsZone {
    let seq = next_seq(w);
    let zone = DnsZone {
        id: w.uuid(),
        name,
        email,
        ttl,
        description,
        created: wire::ts_micro_naive(Utc::now()),
        updated: None,
        serial: 1_796_209_978 + seq,
        version: 1,
        action: "CREATE",
        ready_at,
        delete_fails: false,
        seq,
    };
    let soa = format!(
        "{NAME_SERVER} {} 1 3552 600 86400 3600",
        zone.email.replace('@', ".")
    );
    for (type_, record) in [("NS", NAME_SERVER.to_owned()), ("SOA", soa)] {
        let apex = zone.name.clone();
        insert_record_set(
            w,
            &zone.id,
            apex,
            type_,
            vec![record],
            None,
            None,
            Instant::now(),
        );
    }
    w.designate.zones.insert(zone.id.clone(), zone.clone());
    zone
}

fn next_seq(w: &mut World) -> u64 {
    w.seq += 1;
    w.seq
}

#[allow(clippy::too_many_arguments)]
fn insert_record_set(
    w: &mut World,
    zone: &str,
    name: String,
    type_: &str,
    records: Vec<String>,
    ttl: Option<i64>,
    description: Option<String>,
    ready_at: Instant,
) -> RecordSet {
    let set = RecordSet {
        id: w.uuid(),
        zone_id: zone.to_owned(),
        name,
        type_: type_.to_owned(),
        records,
        ttl,
        description,
        created: wire::ts_micro_naive(Utc::now()),
        updated: None,
        version: 1,
        action: "CREATE",
        ready_at,
        seq: next_seq(w),
    };
    w.designate.record_sets.insert(set.id.clone(), set.clone());
    set
}

async fn get_zone(
    State(sim): State<Sim>,
    Path(zone): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let project = enter(&sim, "get_zone", &headers).await?;
    let w = sim.world_of(&project);
    let z = w.designate.zones.get(&zone).ok_or_else(zone_not_found)?;
    Ok(wire::respond(
        200,
        Some(JSON),
        &[],
        Some(&zone_view(&sim, &project, z)),
    ))
}

/// `email`, `ttl` and `description` become the request's (the others are Designate's
/// to keep); 202 while the name servers are told, the serial one up.
async fn update_zone(
    State(sim): State<Sim>,
    Path(zone): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let project = enter(&sim, "update_zone", &headers).await?;
    let req = body_of(&bytes)?;
    if let Some(key) = req
        .keys()
        .find(|k| !["email", "ttl", "description"].contains(&k.as_str()))
    {
        let message =
            format!("Provided object does not match schema. Keys ['{key}'] are not valid for zone");
        return Err(err(400, "invalid_object", &message));
    }
    let mut w = sim.world_of(&project);
    let delay = w.lb_delay;
    let z = w
        .designate
        .zones
        .get_mut(&zone)
        .ok_or_else(zone_not_found)?;
    if let Some(email) = req.get("email").and_then(Value::as_str) {
        z.email = email.to_owned();
    }
    if let Some(ttl) = req.get("ttl").and_then(Value::as_i64) {
        z.ttl = ttl;
    }
    if req.contains_key("description") {
        z.description = req
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    // The serial the name servers will serve: shown once they do.
    z.serial += 1;
    z.change("UPDATE", Instant::now() + delay);
    let view = zone_view(&sim, &project, z);
    Ok(wire::respond(202, Some(JSON), &[], Some(&view)))
}

/// The pool's name servers.
async fn zone_nameservers(
    State(sim): State<Sim>,
    Path(zone): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let project = enter(&sim, "list_nameservers", &headers).await?;
    let w = sim.world_of(&project);
    zone_name(&w, &zone)?;
    let body = json!({"nameservers": [{"hostname": NAME_SERVER, "priority": 1}]});
    Ok(wire::respond(200, Some(JSON), &[], Some(&body)))
}

/// Deletes the zone and every record set in it once the name servers dropped it: until
/// then Designate still shows it, `PENDING` `DELETE`. A delete that races a change still
/// being published ends in `ERROR` `DELETE` (see [`DnsZone::delete_fails`]).
async fn delete_zone(
    State(sim): State<Sim>,
    Path(zone): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let project = enter(&sim, "delete_zone", &headers).await?;
    let mut w = sim.world_of(&project);
    let ready_at = Instant::now() + w.lb_delay;
    let z = w
        .designate
        .zones
        .get_mut(&zone)
        .ok_or_else(zone_not_found)?;
    z.delete(Instant::now(), ready_at);
    let view = zone_view(&sim, &project, z);
    w.schedule(ready_at);
    Ok(wire::respond(202, Some(JSON), &[], Some(&view)))
}

async fn list_record_sets(
    State(sim): State<Sim>,
    Path(zone): Path<String>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let project = enter(&sim, "list_record_sets", &headers).await?;
    let param = |k: &str| q.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    let (name, type_) = (param("name"), param("type"));
    let w = sim.world_of(&project);
    let z = w.designate.zones.get(&zone).ok_or_else(zone_not_found)?;
    let mut sets: Vec<&RecordSet> = w
        .designate
        .record_sets
        .values()
        .filter(|r| r.zone_id == zone)
        .filter(|r| name.as_ref().is_none_or(|n| glob(n, &r.name)))
        .filter(|r| type_.as_ref().is_none_or(|t| t == &r.type_))
        .collect();
    sets.sort_by_key(|r| r.seq);
    let items = sets
        .into_iter()
        .map(|r| (r.id.clone(), record_set_view(&sim, &project, &z.name, r)))
        .collect();
    page(
        &sim,
        &format!("/zones/{zone}/recordsets"),
        &q,
        items,
        "recordsets",
    )
}

/// The records of an A or AAAA record set, each an address of its family; Designate's
/// refusal otherwise.
fn check_records(type_: &str, records: &[Value]) -> Result<Vec<String>, Response> {
    let mut out = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let text = r.as_str().unwrap_or_default();
        let fits = match type_ {
            "A" => text.parse::<Ipv4Addr>().is_ok(),
            "AAAA" => text.parse::<Ipv6Addr>().is_ok(),
            _ => !text.is_empty(),
        };
        if !fits {
            let body = json!({"code": 400, "type": "invalid_object", "errors": {"errors": [{
                "path": ["records", i], "message": format!("'{text}' is not a '{type_}' Record"),
                "validator": "format", "validator_value": [type_]}]},
                "request_id": wire::request_id()});
            return Err(wire::respond(400, Some(JSON), &[], Some(&body)));
        }
        out.push(text.to_owned());
    }
    Ok(out)
}

async fn create_record_set(
    State(sim): State<Sim>,
    Path(zone): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let project = enter(&sim, "create_record_set", &headers).await?;
    let req = body_of(&bytes)?;
    let text = |k: &str| req.get(k).and_then(Value::as_str).map(str::to_owned);
    let (name, type_) = (
        text("name").unwrap_or_default(),
        text("type").unwrap_or_default(),
    );
    let records = req
        .get("records")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let records = check_records(&type_, &records)?;
    let mut w = sim.world_of(&project);
    let zone_name = placed(&w, &zone, &name, &type_)?;
    let ttl = req.get("ttl").and_then(Value::as_i64);
    let ready_at = Instant::now() + w.lb_delay;
    let set = insert_record_set(
        &mut w,
        &zone,
        name,
        &type_,
        records,
        ttl,
        text("description"),
        ready_at,
    );
    publish_change(&mut w, &zone, ready_at);
    let view = record_set_view(&sim, &project, &zone_name, &set);
    let location = format!("{}{P}/zones/{zone}/recordsets/{}", sim.base, set.id);
    Ok(wire::respond(
        202,
        Some(JSON),
        &[("location", location)],
        Some(&view),
    ))
}

/// A record set of `zone` was created, changed or deleted: the zone publishes it until
/// `ready_at`.
fn publish_change(w: &mut World, zone: &str, ready_at: Instant) {
    if let Some(z) = w.designate.zones.get_mut(zone) {
        z.record_set_changed(ready_at);
    }
}

/// The zone's name, when `name` belongs in it and has no record set of `type_` yet;
/// Designate's refusal otherwise.
fn placed(w: &World, zone: &str, name: &str, type_: &str) -> Result<String, Response> {
    let zone_name = zone_name(w, zone)?;
    if name != zone_name && !name.ends_with(&format!(".{zone_name}")) {
        return Err(err(
            400,
            "invalid_recordset_location",
            "RecordSet is not contained within it's parent zone",
        ));
    }
    let sets = w.designate.record_sets.values();
    if sets
        .filter(|r| r.zone_id == zone)
        .any(|r| r.name == name && r.type_ == type_)
    {
        return Err(err(409, "duplicate_recordset", "Duplicate RecordSet"));
    }
    Ok(zone_name)
}

async fn get_record_set(
    State(sim): State<Sim>,
    Path((zone, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let project = enter(&sim, "get_record_set", &headers).await?;
    let w = sim.world_of(&project);
    let name = zone_name(&w, &zone)?;
    let r = record_set_in(&w, &zone, &id)?;
    Ok(wire::respond(
        200,
        Some(JSON),
        &[],
        Some(&record_set_view(&sim, &project, &name, r)),
    ))
}

/// `records` and `ttl` (and `description`) become the request's; 202 while the name
/// servers are told.
async fn update_record_set(
    State(sim): State<Sim>,
    Path((zone, id)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let project = enter(&sim, "update_record_set", &headers).await?;
    let req = body_of(&bytes)?;
    let mut w = sim.world_of(&project);
    let zone_name = zone_name(&w, &zone)?;
    let delay = w.lb_delay;
    let set = record_set_in(&w, &zone, &id)?;
    let records = match req.get("records").and_then(Value::as_array) {
        Some(records) => check_records(&set.type_, records)?,
        None => set.records.clone(),
    };
    let set = w
        .designate
        .record_sets
        .get_mut(&id)
        .ok_or_else(record_set_not_found)?;
    set.records = records;
    if req.contains_key("ttl") {
        set.ttl = req.get("ttl").and_then(Value::as_i64);
    }
    if req.contains_key("description") {
        set.description = req
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    set.version += 1;
    set.updated = Some(wire::ts_micro_naive(Utc::now()));
    set.action = "UPDATE";
    set.ready_at = Instant::now() + delay;
    let ready_at = set.ready_at;
    let view = record_set_view(&sim, &project, &zone_name, set);
    publish_change(&mut w, &zone, ready_at);
    Ok(wire::respond(202, Some(JSON), &[], Some(&view)))
}

/// Gone from the API at once (a GET answers 404), as Designate does; the name servers
/// follow some seconds later.
async fn delete_record_set(
    State(sim): State<Sim>,
    Path((zone, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let project = enter(&sim, "delete_record_set", &headers).await?;
    let mut w = sim.world_of(&project);
    let zone_name = zone_name(&w, &zone)?;
    record_set_in(&w, &zone, &id)?;
    let set = w
        .designate
        .record_sets
        .remove(&id)
        .ok_or_else(record_set_not_found)?;
    let mut view = record_set_view(&sim, &project, &zone_name, &set);
    view["status"] = json!("PENDING");
    view["action"] = json!("DELETE");
    let ready_at = Instant::now() + w.lb_delay;
    publish_change(&mut w, &zone, ready_at);
    Ok(wire::respond(202, Some(JSON), &[], Some(&view)))
}

/// Creates zone `name` (with its final dot) in `w`, as `POST /v2/zones` would, ready at
/// once: what a test starts from.
pub(crate) fn add_zone(w: &mut World, name: &str) -> String {
    let email = format!("hostmaster@{}", name.trim_end_matches('.'));
    new_zone(w, name.to_owned(), email, 3600, None, Instant::now()).id
}

/// The record sets of `zone` (by name) in `w`: name, type and records, in creation
/// order (tests look at what resolvers would be told).
pub(crate) fn record_sets_of(w: &World, zone: &str) -> Vec<crate::SimRecordSet> {
    let Some(z) = w.designate.zones.values().find(|z| z.name == zone) else {
        return Vec::new();
    };
    let mut sets: Vec<&RecordSet> = w
        .designate
        .record_sets
        .values()
        .filter(|r| r.zone_id == z.id)
        .collect();
    sets.sort_by_key(|r| r.seq);
    sets.into_iter()
        .map(|r| {
            (
                r.name.clone(),
                r.type_.clone(),
                r.records.clone(),
                r.description.clone(),
            )
        })
        .collect()
}
