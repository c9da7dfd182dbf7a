//! Neutron v2.0: routing, the request envelope (request ID, `NeutronError` bodies)
//! and list answers (exact-match filters, repeated ones meaning any of the values, 400
//! on unknown filters, `fields`, pages with `next`/`previous` links). Networks and
//! subnets are seeded (the admin's) or created by the project; ports are created by
//! the user (fixed IPs, allowed address pairs, security groups; `neutron-ports.md`),
//! by Nova or by Octavia; floating IPs are read-write. Security groups (each
//! project's `default`, the seeded `web`, and those the user creates), their rules,
//! their tags and address groups are read-write, as recorded on the real Neutron
//! (`neutron-security-groups.md`). Body checks follow Neutron's validators
//! (`schema.rs`, `port_body.rs`, `rule_body.rs`), refusals its policy (`policy.rs`).
//!
//! Deliberately not here: routers, network and subnet update or delete, IPv6
//! subnets, sharing security groups or address groups (RBAC), the admin's default
//! security group rules, and the admin's view of other projects.

mod address_groups;
mod addresses;
mod envelope;
mod floating_ips;
mod ipv4;
mod networks;
mod policy;
mod port_body;
mod ports;
mod prefixes;
mod rule_body;
mod schema;
mod security_group_rules;
mod security_group_tags;
mod security_groups;
mod subnets;

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
pub(crate) use envelope::SERVICE;
use serde_json::json;

use super::state::Sim;
use super::wire::{self, JSON};

pub(crate) fn routes(r: Router<Sim>) -> Router<Sim> {
    let r = r
        .route("/network", get(versions))
        .route("/network/", get(versions));
    let r = subnets::routes(networks::routes(r));
    let r = security_groups::routes(ports::routes(r));
    let r = security_group_tags::routes(security_group_rules::routes(r));
    floating_ips::routes(address_groups::routes(r))
}

async fn versions(State(sim): State<Sim>) -> Response {
    sim.counters.bump(SERVICE, "versions");
    let body = json!({"versions": [{"id": "v2.0", "status": "CURRENT", "links": [{"rel": "self", "href": format!("{}/network/v2.0/", sim.base)}]}]});
    wire::respond(200, Some(JSON), &[], Some(&body))
}
