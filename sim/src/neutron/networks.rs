//! Read-only Neutron networks, subnets and ports (list with filters, show by ID).
//! Ports are those Nova and Octavia create (server NICs, load balancer VIPs).

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::envelope::{enter, list_answer};
use crate::model::{Network, Port, Subnet};
use crate::query::Params;
use crate::seed::ADMIN_PROJECT_ID;
use crate::state::Sim;
use crate::wire;
use crate::world::World;

pub(super) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/network/v2.0/networks", get(list_networks))
        .route("/network/v2.0/networks/{id}", get(get_network))
        .route("/network/v2.0/subnets", get(list_subnets))
        .route("/network/v2.0/subnets/{id}", get(get_subnet))
        .route("/network/v2.0/ports", get(list_ports))
        .route("/network/v2.0/ports/{id}", get(get_port))
}

fn network(n: &Network) -> Value {
    json!({
        "id": n.id, "name": n.name, "tenant_id": ADMIN_PROJECT_ID, "project_id": ADMIN_PROJECT_ID,
        "admin_state_up": true, "mtu": 1500, "status": "ACTIVE", "subnets": n.subnets, "shared": n.shared,
        "availability_zone_hints": [], "availability_zones": [], "ipv4_address_scope": null,
        "ipv6_address_scope": null, "router:external": n.external, "qinq": false, "vlan_transparent": false,
        "description": "", "port_security_enabled": true, "tags": [],
        "created_at": wire::ts_z(n.created), "updated_at": wire::ts_z(n.created), "revision_number": 2
    })
}

fn subnet(n: &Subnet, external: bool) -> Value {
    json!({
        "id": n.id, "name": n.name, "project_id": ADMIN_PROJECT_ID, "network_id": n.network_id, "ip_version": 4,
        "subnetpool_id": null, "enable_dhcp": n.dhcp, "ipv6_ra_mode": null, "ipv6_address_mode": null,
        "gateway_ip": n.gateway.to_string(), "cidr": n.cidr,
        "allocation_pools": [{"start": n.pool_start.to_string(), "end": n.pool_end.to_string()}],
        "host_routes": [], "dns_nameservers": [], "description": "", "router:external": external,
        "service_types": [], "tags": [], "created_at": wire::ts_z(n.created), "updated_at": wire::ts_z(n.created),
        "revision_number": 0, "tenant_id": ADMIN_PROJECT_ID
    })
}

pub(super) fn port(project: &str, p: &Port) -> Value {
    let fixed: Vec<Value> = match (&p.subnet_id, p.ip) {
        (Some(s), Some(ip)) => vec![json!({"subnet_id": s, "ip_address": ip.to_string()})],
        _ => vec![],
    };
    json!({
        "id": p.id, "name": p.name, "network_id": p.network_id, "tenant_id": project, "project_id": project,
        "mac_address": p.mac, "admin_state_up": true, "status": "ACTIVE", "device_id": p.device_id,
        "device_owner": p.device_owner, "fixed_ips": fixed, "allowed_address_pairs": [], "extra_dhcp_opts": [],
        "security_groups": [], "description": "", "binding:vnic_type": "normal", "port_security_enabled": true,
        "dns_name": "", "tags": [], "created_at": wire::ts_z(p.created), "updated_at": wire::ts_z(p.created),
        "revision_number": 1
    })
}

fn subnets(w: &World) -> Vec<Value> {
    let external = |s: &Subnet| {
        w.networks
            .iter()
            .any(|n| n.id == s.network_id && n.external)
    };
    w.subnets.iter().map(|s| subnet(s, external(s))).collect()
}

fn no_extra(_: &Value, _: &str, _: &str) -> Option<bool> {
    None
}

async fn list_networks(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_networks", &headers).await?;
    let items: Vec<Value> = sim
        .world_of(&cx.project)
        .networks
        .iter()
        .map(network)
        .collect();
    list_answer(&cx, "networks", items, &q, &no_extra)
}

async fn get_network(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_network", &headers).await?;
    match sim
        .world_of(&cx.project)
        .networks
        .iter()
        .find(|n| n.id == id)
    {
        Some(n) => Ok(cx.ok(200, &json!({"network": network(n)}))),
        None => Err(cx.err(
            404,
            "NetworkNotFound",
            &format!("Network {id} could not be found."),
        )),
    }
}

async fn list_subnets(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_subnets", &headers).await?;
    let items = subnets(&sim.world_of(&cx.project));
    list_answer(&cx, "subnets", items, &q, &no_extra)
}

async fn get_subnet(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_subnet", &headers).await?;
    match subnets(&sim.world_of(&cx.project))
        .into_iter()
        .find(|s| s["id"] == id.as_str())
    {
        Some(s) => Ok(cx.ok(200, &json!({ "subnet": s }))),
        None => Err(cx.err(
            404,
            "SubnetNotFound",
            &format!("Subnet {id} could not be found."),
        )),
    }
}

/// `fixed_ips=ip_address=…` / `fixed_ips=subnet_id=…` filters on ports.
fn fixed_ips_filter(item: &Value, key: &str, value: &str) -> Option<bool> {
    if key != "fixed_ips" {
        return None;
    }
    let (k, v) = value.split_once('=')?;
    let ips = item["fixed_ips"].as_array()?;
    Some(ips.iter().any(|ip| ip[k].as_str() == Some(v)))
}

async fn list_ports(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_ports", &headers).await?;
    let w = sim.world_of(&cx.project);
    let mut ports: Vec<&Port> = w.ports.values().collect();
    ports.sort_by_key(|p| p.seq);
    let items: Vec<Value> = ports.into_iter().map(|p| port(&cx.project, p)).collect();
    drop(w);
    list_answer(&cx, "ports", items, &q, &fixed_ips_filter)
}

async fn get_port(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_port", &headers).await?;
    match sim.world_of(&cx.project).ports.get(&id) {
        Some(p) => Ok(cx.ok(200, &json!({"port": port(&cx.project, p)}))),
        None => Err(cx.err(
            404,
            "PortNotFound",
            &format!("Port {id} could not be found."),
        )),
    }
}
