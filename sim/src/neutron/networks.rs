//! Neutron networks: list (filters, `fields`), show, and create (owned by the
//! caller's project, as `openstack network create` makes one). The seeded networks
//! are the admin's; `private` is shared.
//!
//! Deliberately not here: update and delete, provider attributes, and sharing or
//! external networks made by a member (policy refuses both, as recorded for Neutron).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use chrono::Utc;
use serde_json::{Map, Value, json};

use super::envelope::{Cx, enter, list_answer};
use super::policy;
use super::schema::{self, Spec};
use crate::model::Network;
use crate::query::Params;
use crate::state::Sim;
use crate::wire;
use crate::world::World;

pub(super) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/network/v2.0/networks", get(list).post(create))
        .route("/network/v2.0/networks/{id}", get(get_one))
}

const SPEC: Spec = Spec {
    required: &[],
    read_only: &[
        "id",
        "status",
        "subnets",
        "created_at",
        "updated_at",
        "revision_number",
    ],
    create_only: &[],
    modelled: &[
        "name",
        "description",
        "admin_state_up",
        "shared",
        "router:external",
    ],
    other: &[
        "tenant_id",
        "project_id",
        "mtu",
        "port_security_enabled",
        "availability_zone_hints",
        "dns_domain",
        "qos_policy_id",
        "provider:network_type",
        "provider:physical_network",
        "provider:segmentation_id",
        "segments",
        "is_default",
        "vlan_transparent",
        "qinq",
        "tags",
    ],
};

fn view(n: &Network) -> Value {
    json!({
        "id": n.id, "name": n.name, "tenant_id": n.project_id, "project_id": n.project_id,
        "admin_state_up": true, "mtu": 1500, "status": "ACTIVE", "subnets": n.subnets, "shared": n.shared,
        "availability_zone_hints": [], "availability_zones": [], "ipv4_address_scope": null,
        "ipv6_address_scope": null, "router:external": n.external, "qinq": false, "vlan_transparent": false,
        "description": n.description, "port_security_enabled": true, "tags": [],
        "created_at": wire::ts_z(n.created), "updated_at": wire::ts_z(n.updated),
        "revision_number": n.revision
    })
}

/// The network `id` of the caller's world (a copy), or Neutron's 404.
pub(super) fn find(cx: &Cx, w: &World, id: &str) -> Result<Network, Response> {
    let found = w.networks.iter().find(|n| n.id == id).cloned();
    found.ok_or_else(|| {
        let msg = format!("Network {id} could not be found.");
        cx.err(404, "NetworkNotFound", &msg)
    })
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_networks", &headers).await?;
    let items: Vec<Value> = sim
        .world_of(&cx.project)
        .networks
        .iter()
        .map(view)
        .collect();
    list_answer(&cx, "networks", items, &q, &|_, _, _| None)
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_network", &headers).await?;
    let n = find(&cx, &sim.world_of(&cx.project), &id)?;
    Ok(cx.ok(200, &json!({"network": view(&n)})))
}

/// Checks a create body: (name, description). `shared` and `router:external` are
/// the admin's (policy), `admin_state_up` false is not modelled.
fn check(cx: &Cx, req: &Map<String, Value>) -> Result<(String, String), Response> {
    schema::attributes(cx, req, &SPEC, true)?;
    let name = schema::text(cx, req, "name")?.unwrap_or_default();
    let mut attrs = Vec::new();
    for (key, flag) in [
        ("admin_state_up", true),
        ("shared", false),
        ("router:external", false),
    ] {
        let Some(v) = req.get(key) else { continue };
        match (key, schema::boolean(cx, v)?) {
            ("admin_state_up", false) => {
                let msg = "A network with admin_state_up false is not modelled by the simulator.";
                return Err(cx.err(400, "HTTPBadRequest", msg));
            }
            // Set to its default, an attribute is not "explicitly set" for policy.
            (_, value) if value == flag => {}
            _ => attrs.push(policy::Attr {
                name: key,
                keys: Vec::new(),
                allowed: false,
            }),
        }
    }
    let description = schema::text(cx, req, "description")?.unwrap_or_default();
    schema::unknown(cx, req, &SPEC)?;
    policy::enforce(cx, "create_network", true, &attrs)?;
    Ok((name, description))
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_network", &headers).await?;
    let req = schema::body(&cx, &bytes, "network")?;
    let (name, description) = check(&cx, &req)?;
    let mut w = sim.world_of(&cx.project);
    let now = Utc::now();
    let net = Network {
        id: w.uuid(),
        name,
        description,
        project_id: cx.project.clone(),
        external: false,
        shared: false,
        subnets: Vec::new(),
        revision: 1,
        created: now,
        updated: now,
    };
    let answer = json!({"network": view(&net)});
    w.networks.push(net);
    Ok(cx.ok(201, &answer))
}
