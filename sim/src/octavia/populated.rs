//! The fully populated load balancer create: `listeners` in the create body, each with
//! a `default_pool` that holds `members` and a `healthmonitor`. The whole graph is
//! checked before anything is stored (Octavia refuses it whole), and every object is
//! `PENDING_CREATE` until the load balancer settles, in one provisioning cycle.

use axum::response::Response;
use serde_json::{Map, Value};

use super::envelope::{Cx, str_field, u64_field};
use super::{listeners, members, monitors, pools, schema};
use crate::world::World;

/// The listener objects of a create body (none for a bare load balancer).
fn listeners_of(req: &Map<String, Value>) -> impl Iterator<Item = &Map<String, Value>> {
    req.get("listeners")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
}

fn object<'a>(parent: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    parent.get(key).and_then(Value::as_object)
}

fn members_of(pool: &Map<String, Value>) -> impl Iterator<Item = &Map<String, Value>> {
    pool.get("members")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
}

/// Every object of the graph against its single-create type, and the rules across them
/// (`vip`: an address of the VIP's subnet, for the IP version of allowed CIDRs).
/// `barbican`: the prefix of the URLs of `w`'s Barbican secrets.
pub(super) fn check(
    cx: &Cx,
    (w, barbican): (&World, &str),
    req: &Map<String, Value>,
    vip: &str,
) -> Result<(), Response> {
    let mut ports: Vec<(u64, bool)> = Vec::new();
    for listener in listeners_of(req) {
        schema::check(cx, schema::LISTENER_SINGLE, listener)?;
        let port = u64_field(listener, "protocol_port").unwrap_or_default();
        let protocol = str_field(listener, "protocol").unwrap_or_default();
        let udp = listeners::is_udp(&protocol);
        if ports.contains(&(port, udp)) {
            return Err(listeners::port_in_use(cx, &protocol, port));
        }
        ports.push((port, udp));
        super::options::check_listener(cx, listener, &protocol, vip)?;
        super::tls::check(cx, w, barbican, listener, &protocol, true)?;
        let Some(pool) = object(listener, "default_pool") else {
            continue;
        };
        schema::check(cx, schema::POOL_POST, pool)?;
        super::options::check_pool(cx, pool, Some(&protocol))?;
        for member in members_of(pool) {
            schema::check(cx, schema::MEMBER_POST, member)?;
        }
        if let Some(monitor) = object(pool, "healthmonitor") {
            schema::check(cx, schema::MONITOR_SINGLE, monitor)?;
            let num = |f: &str| u64_field(monitor, f).unwrap_or_default();
            monitors::check_timing(cx, num("delay"), num("timeout"))?;
        }
    }
    Ok(())
}

/// Stores the checked graph under the load balancer `lb_id`.
pub(super) fn build(
    cx: &Cx,
    w: &mut World,
    lb_id: &str,
    req: &Map<String, Value>,
) -> Result<(), Response> {
    for listener_req in listeners_of(req) {
        let mut listener = listeners::build(w, lb_id, listener_req);
        if let Some(pool_req) = object(listener_req, "default_pool") {
            let mut pool = pools::build(w, lb_id, Some(listener.meta.id.clone()), pool_req);
            for member_req in members_of(pool_req) {
                pool.members.push(members::fill(cx, w, member_req, None)?);
            }
            if let Some(monitor_req) = object(pool_req, "healthmonitor") {
                let monitor = monitors::build(w, &pool.meta.id, monitor_req);
                pool.monitor_id = Some(monitor.meta.id.clone());
                w.octavia.monitors.insert(monitor.meta.id.clone(), monitor);
            }
            listener.default_pool_id = Some(pool.meta.id.clone());
            w.octavia.pools.insert(pool.meta.id.clone(), pool);
        }
        w.octavia
            .listeners
            .insert(listener.meta.id.clone(), listener);
    }
    Ok(())
}
