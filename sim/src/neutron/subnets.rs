//! Neutron subnets: list (filters, `fields`), show, and create on one's own network
//! (as `openstack subnet create --network N --subnet-range 10.20.0.0/24 S` sends it):
//! the gateway is the first host, the allocation pool the second host to the last
//! before the broadcast address.
//!
//! Deliberately not here: IPv6, subnet pools, chosen gateways, pools, routes or DNS
//! servers (refused as not modelled), update and delete.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use chrono::Utc;
use serde_json::{Map, Value, json};

use super::envelope::{Cx, enter, list_answer};
use super::ipv4::Cidr;
use super::schema::{self, Spec};
use super::{networks, policy};
use crate::model::Subnet;
use crate::query::Params;
use crate::state::Sim;
use crate::wire::{self, py_str};
use crate::world::World;

pub(super) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/network/v2.0/subnets", get(list).post(create))
        .route("/network/v2.0/subnets/{id}", get(get_one))
}

const SPEC: Spec = Spec {
    required: &["network_id", "ip_version"],
    read_only: &["id", "created_at", "updated_at", "revision_number"],
    create_only: &[
        "network_id",
        "ip_version",
        "cidr",
        "subnetpool_id",
        "prefixlen",
    ],
    modelled: &["name", "cidr", "enable_dhcp"],
    other: &[
        "tenant_id",
        "project_id",
        "subnetpool_id",
        "prefixlen",
        "gateway_ip",
        "allocation_pools",
        "dns_nameservers",
        "host_routes",
        "ipv6_ra_mode",
        "ipv6_address_mode",
        "description",
        "service_types",
        "segment_id",
        "use_default_subnetpool",
        "dns_publish_fixed_ip",
        "tags",
    ],
};

fn view(n: &Subnet, external: bool) -> Value {
    json!({
        "id": n.id, "name": n.name, "project_id": n.project_id, "network_id": n.network_id, "ip_version": 4,
        "subnetpool_id": null, "enable_dhcp": n.dhcp, "ipv6_ra_mode": null, "ipv6_address_mode": null,
        "gateway_ip": n.gateway.to_string(), "cidr": n.cidr,
        "allocation_pools": [{"start": n.pool_start.to_string(), "end": n.pool_end.to_string()}],
        "host_routes": [], "dns_nameservers": [], "description": "", "router:external": external,
        "service_types": [], "tags": [], "created_at": wire::ts_z(n.created), "updated_at": wire::ts_z(n.created),
        "revision_number": 0, "tenant_id": n.project_id
    })
}

fn views(w: &World) -> Vec<Value> {
    let external = |s: &Subnet| {
        w.networks
            .iter()
            .any(|n| n.id == s.network_id && n.external)
    };
    w.subnets.iter().map(|s| view(s, external(s))).collect()
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_subnets", &headers).await?;
    let items = views(&sim.world_of(&cx.project));
    list_answer(&cx, "subnets", items, &q, &|_, _, _| None)
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_subnet", &headers).await?;
    match views(&sim.world_of(&cx.project))
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

/// What a valid create body asks for.
struct Wanted {
    name: String,
    network_id: String,
    cidr: Option<Cidr>,
    dhcp: bool,
}

/// Checks a create body's attributes and values, in the attribute map's order.
fn check(cx: &Cx, req: &Map<String, Value>) -> Result<Wanted, Response> {
    schema::attributes(cx, req, &SPEC, true)?;
    let name = schema::text(cx, req, "name")?.unwrap_or_default();
    let version = &req["ip_version"];
    match version.as_u64().or_else(|| version.as_str()?.parse().ok()) {
        Some(4) => {}
        Some(6) => {
            let msg = "The simulator models IPv4 subnets only.";
            return Err(cx.err(400, "HTTPBadRequest", msg));
        }
        _ => {
            let why = format!("'{}' is not in [4, 6]", py_str(version));
            return Err(schema::invalid(cx, "ip_version", &why));
        }
    }
    let network_id =
        schema::uuid(&req["network_id"]).map_err(schema::invalid_for(cx, "network_id"))?;
    let cidr = match req.get("cidr").filter(|c| !c.is_null()) {
        Some(c) => Some(schema::cidr(c).map_err(schema::invalid_for(cx, "cidr"))?),
        None => None,
    };
    let dhcp = match req.get("enable_dhcp") {
        Some(v) => schema::boolean(cx, v)?,
        None => true,
    };
    schema::unknown(cx, req, &SPEC)?;
    Ok(Wanted {
        name,
        network_id,
        cidr,
        dhcp,
    })
}

/// The CIDR, which must not overlap another subnet of the network.
fn place(cx: &Cx, w: &World, wanted: &Wanted) -> Result<Cidr, Response> {
    let Some(cidr) = wanted.cidr else {
        let msg = "Bad subnets request: a subnetpool must be specified in the absence of a cidr.";
        return Err(cx.err(400, "BadRequest", msg));
    };
    if cidr.prefix > 30 {
        let msg = "Subnets smaller than /30 are not modelled by the simulator.";
        return Err(cx.err(400, "HTTPBadRequest", msg));
    }
    let mine = w
        .subnets
        .iter()
        .filter(|s| s.network_id == wanted.network_id);
    if mine
        .filter_map(|s| Cidr::parse(&s.cidr))
        .any(|c| c.overlaps(cidr))
    {
        let msg = format!(
            "Invalid input for operation: Requested subnet with cidr: {} for network: {} overlaps with another subnet.",
            cidr.canonical(),
            wanted.network_id
        );
        return Err(cx.err(400, "InvalidInput", &msg));
    }
    Ok(cidr)
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_subnet", &headers).await?;
    let req = schema::body(&cx, &bytes, "subnet")?;
    let wanted = check(&cx, &req)?;
    let mut w = sim.world_of(&cx.project);
    let net = networks::find(&cx, &w, &wanted.network_id)?;
    policy::may_create_on(&cx, &net, "subnet")?;
    policy::enforce(&cx, "create_subnet", policy::owns(&cx, &net), &[])?;
    let cidr = place(&cx, &w, &wanted)?;
    let host = |n: u32| std::net::Ipv4Addr::from(u32::from(cidr.network()) + n);
    let subnet = Subnet {
        id: w.uuid(),
        name: wanted.name,
        project_id: cx.project.clone(),
        network_id: net.id.clone(),
        cidr: cidr.canonical(),
        gateway: host(1),
        pool_start: host(2),
        pool_end: std::net::Ipv4Addr::from(u32::from(cidr.broadcast()) - 1),
        dhcp: wanted.dhcp,
        created: Utc::now(),
    };
    let answer = json!({"subnet": view(&subnet, net.external)});
    if let Some(n) = w.networks.iter_mut().find(|n| n.id == net.id) {
        n.subnets.push(subnet.id.clone());
        n.revision += 1;
        n.updated = subnet.created;
    }
    w.subnets.push(subnet);
    Ok(cx.ok(201, &answer))
}
