//! Load balancers: create (VIP on a subnet or network, a Neutron VIP port), show,
//! list, update, delete (400 with children unless `cascade=true`), status tree, stats.

use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::envelope::{
    Cx, body, enter, lb_not_found, list_answer, new_meta, str_field, update_meta,
};
use super::{schema, views};
use crate::query::Params;
use crate::state::Sim;
use crate::world::World;
use crate::world::octavia::{LoadBalancer, Prov};
use crate::world::octavia_lifecycle as lifecycle;
use crate::world::octavia_lifecycle::Operating;

pub(super) fn routes(r: Router<Sim>, p: &str) -> Router<Sim> {
    r.route(&format!("{p}/loadbalancers"), get(list).post(create))
        .route(
            &format!("{p}/loadbalancers/{{id}}"),
            get(get_one).put(update).delete(delete),
        )
        .route(&format!("{p}/loadbalancers/{{id}}/status"), get(status))
        .route(&format!("{p}/loadbalancers/{{id}}/stats"), get(stats))
}

/// The VIP: (subnet ID, network ID, an existing port to use).
type Vip = (String, String, Option<String>);

fn vip(cx: &Cx, w: &World, req: &serde_json::Map<String, Value>) -> Result<Vip, Response> {
    if let Some(port) = str_field(req, "vip_port_id") {
        let p = w
            .ports
            .get(&port)
            .ok_or_else(|| cx.err(400, &format!("Port {port} not found.")))?;
        let subnet = p.fixed_ips.first().map(|f| f.subnet_id.clone());
        let subnet = subnet.unwrap_or_default();
        return Ok((subnet, p.network_id.clone(), Some(port)));
    }
    if let Some(subnet) = str_field(req, "vip_subnet_id") {
        let s = w
            .subnets
            .iter()
            .find(|s| s.id == subnet)
            .ok_or_else(|| cx.err(400, &format!("Subnet {subnet} not found.")))?;
        return Ok((s.id.clone(), s.network_id.clone(), None));
    }
    if let Some(net) = str_field(req, "vip_network_id") {
        let n = w
            .networks
            .iter()
            .find(|n| n.id == net)
            .ok_or_else(|| cx.err(400, &format!("Network {net} not found.")))?;
        let s = n.subnets.first().ok_or_else(|| {
            cx.err(
                400,
                "Validation failure: Supplied network does not contain a subnet.",
            )
        })?;
        return Ok((s.clone(), n.id.clone(), None));
    }
    Err(cx.err(
        400,
        "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.",
    ))
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_load_balancer", &headers).await?;
    let req = body(&cx, &bytes, "loadbalancer")?;
    schema::check(&cx, schema::LOAD_BALANCER, &req)?;
    let mut w = sim.world_of(&cx.project);
    let (subnet_id, network_id, existing) = vip(&cx, &w, &req)?;
    // The VIP is not chosen before the graph is checked: its subnet tells its IP version.
    let vip_family = w
        .subnets
        .iter()
        .find(|s| s.id == subnet_id)
        .map_or_else(String::new, |s| s.pool_start.to_string());
    let barbican = crate::barbican::secrets_prefix(&sim);
    super::populated::check(&cx, (&w, &barbican), &req, &vip_family)?;
    let flavor_id = str_field(&req, "flavor_id");
    if let Some(f) = flavor_id
        .as_deref()
        .filter(|f| !w.octavia.flavors.iter().any(|x| x.id == *f))
    {
        return Err(cx.err(400, &format!("Validation failure: Flavor {f} not found.")));
    }
    let zone = str_field(&req, "availability_zone");
    if zone
        .as_deref()
        .is_some_and(|z| !w.zones.iter().any(|x| x == z))
    {
        return Err(cx.err(400, "Validation failure: Invalid availability zone."));
    }
    let meta = new_meta(&mut w, &req);
    let port = match existing.and_then(|p| w.ports.get(&p).cloned()) {
        Some(p) => p,
        None => {
            let (name, device) = (format!("octavia-lb-{}", meta.id), format!("lb-{}", meta.id));
            w.create_port(&network_id, &name, &device, "Octavia")
        }
    };
    let at = Instant::now() + w.lb_delay;
    let lb = LoadBalancer {
        vip_address: port.ip().map(|ip| ip.to_string()).unwrap_or_default(),
        vip_port_id: port.id,
        vip_subnet_id: subnet_id,
        vip_network_id: network_id,
        flavor_id,
        availability_zone: zone,
        settle_at: Some(at),
        meta,
    };
    w.schedule(at);
    let id = lb.meta.id.clone();
    w.octavia.lbs.insert(id.clone(), lb);
    super::populated::build(&cx, &mut w, &id, &req)?;
    let body = json!({"loadbalancer": views::lb(&Operating::of(&w), &w.octavia.lbs[&id])});
    Ok(cx.ok(201, &body))
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_load_balancer", &headers).await?;
    let w = sim.world_of(&cx.project);
    let lb = w
        .octavia
        .lbs
        .get(&id)
        .ok_or_else(|| lb_not_found(&cx, &id))?;
    Ok(cx.ok(
        200,
        &json!({"loadbalancer": views::lb(&Operating::of(&w), lb)}),
    ))
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_load_balancers", &headers).await?;
    let w = sim.world_of(&cx.project);
    let mut lbs: Vec<&LoadBalancer> = w.octavia.lbs.values().collect();
    lbs.sort_by_key(|l| l.meta.seq);
    let op = Operating::of(&w);
    let items: Vec<Value> = lbs.into_iter().map(|l| views::lb(&op, l)).collect();
    drop(w);
    list_answer(&cx, "loadbalancers", items, &q)
}

fn invalid_state(cx: &Cx, lb: &LoadBalancer) -> Option<Response> {
    let msg = format!(
        "Invalid state {} of loadbalancer resource {}",
        lb.meta.prov.as_str(),
        lb.meta.id
    );
    lb.meta.prov.pending().then(|| cx.err(409, &msg))
}

async fn update(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "update_load_balancer", &headers).await?;
    let req = body(&cx, &bytes, "loadbalancer")?;
    schema::check(&cx, schema::LOAD_BALANCER, &req)?;
    let mut w = sim.world_of(&cx.project);
    let lb = w
        .octavia
        .lbs
        .get_mut(&id)
        .ok_or_else(|| lb_not_found(&cx, &id))?;
    if let Some(resp) = invalid_state(&cx, lb) {
        return Err(resp);
    }
    update_meta(&mut lb.meta, &req);
    lifecycle::lock_tree(&mut w, &id);
    let body = json!({"loadbalancer": views::lb(&Operating::of(&w), &w.octavia.lbs[&id])});
    Ok(cx.ok(200, &body))
}

async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_load_balancer", &headers).await?;
    let cascade = q
        .iter()
        .any(|(k, v)| k == "cascade" && v.eq_ignore_ascii_case("true"));
    let mut w = sim.world_of(&cx.project);
    let lb = w
        .octavia
        .lbs
        .get(&id)
        .ok_or_else(|| lb_not_found(&cx, &id))?;
    if let Some(resp) = invalid_state(&cx, lb) {
        return Err(resp);
    }
    let o = &mut w.octavia;
    let children =
        o.listeners.values().any(|l| l.lb_id == id) || o.pools.values().any(|p| p.lb_id == id);
    if children && !cascade {
        return Err(cx.err(
            400,
            &format!("Validation failure: Cannot delete Load Balancer {id} - it has children"),
        ));
    }
    for l in o.listeners.values_mut().filter(|l| l.lb_id == id) {
        l.meta.prov = Prov::PendingDelete;
    }
    for p in o.pools.values_mut().filter(|p| p.lb_id == id) {
        p.meta.prov = Prov::PendingDelete;
        for m in &mut p.members {
            m.meta.prov = Prov::PendingDelete;
        }
        if let Some(hm) = p.monitor_id.as_ref().and_then(|m| o.monitors.get_mut(m)) {
            hm.meta.prov = Prov::PendingDelete;
        }
    }
    if let Some(lb) = o.lbs.get_mut(&id) {
        lb.meta.prov = Prov::PendingDelete;
    }
    lifecycle::lock_tree(&mut w, &id);
    Ok(cx.empty(204))
}

async fn status(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_status_tree", &headers).await?;
    let w = sim.world_of(&cx.project);
    let lb = w
        .octavia
        .lbs
        .get(&id)
        .ok_or_else(|| lb_not_found(&cx, &id))?;
    Ok(cx.ok(200, &views::status_tree(&Operating::of(&w), lb)))
}

async fn stats(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_load_balancer_stats", &headers).await?;
    let w = sim.world_of(&cx.project);
    w.octavia
        .lbs
        .get(&id)
        .ok_or_else(|| lb_not_found(&cx, &id))?;
    let stats = json!({"stats": {"bytes_in": 0, "bytes_out": 0, "active_connections": 0, "total_connections": 0, "request_errors": 0}});
    Ok(cx.ok(200, &stats))
}
