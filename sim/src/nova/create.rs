//! `POST /servers`: schema checks (by microversion, in `schema.rs`), reference checks
//! (flavor, image, networks and ports in `nics.rs`, key pair, security groups, zone,
//! group hint), the metadata and instance quotas, and scheduling. The 202 answer is
//! tiny, as recorded; the build completes lazily.

use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::Utc;
use rand::Rng;
use serde_json::{Map, Value, json};

use super::envelope::{Cx, body, enter};
use super::{boot_volume, metadata, nics, scheduler, schema};
use crate::model::{Server, Status};
use crate::state::Sim;
use crate::world::World;

/// What a valid create request asks for.
struct Request {
    name: String,
    flavor_id: String,
    image_id: String,
    networks: Vec<nics::Wanted>,
    group: Option<String>,
    server: Map<String, Value>,
    boot: Option<boot_volume::Boot>,
}

pub(super) async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_server", &headers).await?;
    let req = body(&cx, &bytes)?;
    let mut w = sim.world_of(&cx.project);
    let request = validate(&cx, &w, &req)?;
    quota(&cx, &w)?;
    // Only a create that passed validation consumes a ServerError fault.
    let doom_by_fault = sim
        .faults
        .server_error(super::envelope::SERVICE, "create_server");
    let boot = request.boot.clone();
    let mut server = build(&mut w, request, doom_by_fault);
    let id = server.id.clone();
    if let Some(boot) = boot
        && server.doomed.is_none()
    {
        server.doomed = boot_volume::make(&mut w, &id, &boot);
    }
    let groups: Vec<Value> = server
        .security_groups
        .iter()
        .map(|g| json!({"name": g}))
        .collect();
    if let Some(t) = server.until {
        w.schedule(t);
    }
    w.servers.insert(id.clone(), server);
    let admin_pass: String = (0..12)
        .map(|_| char::from(b'a' + w.rng.random_range(0..26u8)))
        .collect();
    let body = json!({"server": {
        "id": id, "links": cx.link("servers", &id), "OS-DCF:diskConfig": "MANUAL",
        "security_groups": groups, "adminPass": admin_pass
    }});
    let location = format!("{}/compute/v2.1/servers/{id}", cx.base);
    Ok(cx.ok_with(202, &body, ("location", location)))
}

fn validate(cx: &Cx, w: &World, req: &Value) -> Result<Request, Response> {
    schema::create(cx.minor, req).map_err(|m| cx.err(400, &m))?;
    let Some(server) = req.get("server").and_then(Value::as_object) else {
        return Err(cx.err(400, "'server' is a required property"));
    };
    let flavor_id = last_segment(server["flavorRef"].as_str().unwrap_or_default());
    if !w.flavors.iter().any(|f| f.id == flavor_id) {
        return Err(cx.err(400, &format!("Flavor {flavor_id} could not be found.")));
    }
    let boot = boot_volume::requested(cx, w, server.get("block_device_mapping_v2"))?;
    let image_id = match &boot {
        Some(b) => b.image_id.clone(),
        None => last_segment(
            server
                .get("imageRef")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        ),
    };
    if !w.images.iter().any(|i| i.id == image_id) {
        return Err(cx.err(400, "Can not find requested image"));
    }
    let items = server.get("metadata").and_then(Value::as_object);
    metadata::quota(cx, items.map_or(0, |m| m.len()))?;
    let networks = nics::requested(cx, w, server.get("networks"))?;
    check_references(cx, w, server)?;
    let group = match req
        .pointer("/os:scheduler_hints/group")
        .and_then(Value::as_str)
    {
        Some(g) if w.groups.contains_key(g) => Some(g.to_string()),
        Some(g) => return Err(cx.err(400, &format!("Instance group {g} could not be found."))),
        None => None,
    };
    let name = server["name"].as_str().unwrap_or_default().to_string();
    Ok(Request {
        name,
        flavor_id,
        image_id,
        networks,
        group,
        server: server.clone(),
        boot,
    })
}

fn last_segment(r: &str) -> String {
    r.rsplit('/').next().unwrap_or(r).to_string()
}

fn check_references(cx: &Cx, w: &World, server: &Map<String, Value>) -> Result<(), Response> {
    if let Some(key) = server.get("key_name").and_then(Value::as_str)
        && !w.keypairs.iter().any(|k| k == key)
    {
        return Err(cx.err(400, "Invalid key_name provided."));
    }
    for sg in server
        .get("security_groups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = sg["name"].as_str().unwrap_or_default();
        if w.security_group(name).is_none() {
            return Err(cx.err(400, &format!("Security group {name} not found.")));
        }
    }
    if let Some(az) = server.get("availability_zone").and_then(Value::as_str)
        && (!w.zones.iter().any(|z| z == az) || w.disabled_zones.contains(az))
    {
        return Err(cx.err(400, "The requested availability zone is not available"));
    }
    Ok(())
}

fn quota(cx: &Cx, w: &World) -> Result<(), Response> {
    let used = w.servers.len();
    let limit = w.instance_quota;
    if used < limit {
        return Ok(());
    }
    let msg = format!(
        "Quota exceeded for instances: Requested 1, but already used {used} of {limit} instances"
    );
    Err(cx.err(403, &msg))
}

/// Why the build will end in ERROR, if it will: no host, or an injected fault.
fn doom(host: &Option<String>, by_fault: bool, id: &str) -> Option<String> {
    match (host, by_fault) {
        (None, _) => Some(scheduler::NO_VALID_HOST.to_string()),
        (Some(_), true) => Some(format!(
            "Exceeded maximum number of retries. Exhausted all hosts available for retrying build failures for instance {id}."
        )),
        _ => None,
    }
}

fn strings(v: Option<&Value>, pick: fn(&Value) -> Option<&str>) -> Vec<String> {
    let items = v.and_then(Value::as_array).into_iter().flatten();
    items.filter_map(|x| pick(x).map(str::to_string)).collect()
}

fn build(w: &mut World, r: Request, doom_by_fault: bool) -> Server {
    let id = w.uuid();
    let zone = r.server.get("availability_zone").and_then(Value::as_str);
    let host = scheduler::place(w, r.group.as_deref().and_then(|g| w.groups.get(g)), zone);
    let doomed = doom(&host, doom_by_fault, &id);
    let s = &r.server;
    let mut security_groups = strings(s.get("security_groups"), |g| g["name"].as_str());
    if security_groups.is_empty() {
        security_groups.push("default".into());
    }
    let nics = match &doomed {
        Some(_) => vec![],
        None => nics::attach(w, &r.networks, &id, &security_groups),
    };
    if let Some(g) = r.group.as_deref().and_then(|g| w.groups.get_mut(g)) {
        g.members.push(id.clone());
    }
    let str_of = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_string);
    let metadata = s
        .get("metadata")
        .and_then(Value::as_object)
        .into_iter()
        .flatten();
    let now = Utc::now();
    Server {
        seq: w.next_seq(),
        name: r.name,
        status: Status::Build,
        until: Some(Instant::now() + w.build_delay),
        deleting: false,
        doomed,
        created: now,
        updated: now,
        launched: None,
        flavor_id: r.flavor_id,
        resize_to: None,
        image_id: r.image_id,
        boot_from_volume: r.boot.is_some(),
        nics,
        host,
        metadata: metadata
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect(),
        tags: strings(s.get("tags"), Value::as_str).into_iter().collect(),
        description: str_of("description"),
        key_name: str_of("key_name"),
        user_data: str_of("user_data"),
        security_groups,
        availability_zone: str_of("availability_zone"),
        fault: None,
        scheduler_hints: r
            .group
            .as_ref()
            .map_or_else(|| json!({}), |g| json!({"group": [g]})),
        group: r.group,
        id,
    }
}
