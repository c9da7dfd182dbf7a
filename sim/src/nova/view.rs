//! JSON views of a server: the full view of GET/list-detail (shaped by microversion
//! and state, as recorded for BUILD/ACTIVE/ERROR) and the reduced view of PUT.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Map, Value, json};

use super::envelope::Cx;
use crate::model::{Server, Status};
use crate::seed::USER_ID;
use crate::wire;
use crate::world::World;

/// Nova's `hostId`: a 56-hex-digit digest of project and host.
fn host_id(project: &str, host: &str) -> String {
    let mut out = String::new();
    let mut h = DefaultHasher::new();
    (project, host).hash(&mut h);
    while out.len() < 56 {
        let v = h.finish();
        out.push_str(&format!("{v:016x}"));
        v.hash(&mut h);
    }
    out.truncate(56);
    out
}

/// `addresses`: the fixed IPs of each NIC's port per network name, plus floating IPs
/// bound to the port.
fn addresses(w: &World, s: &Server, full: bool) -> Value {
    let mut map = Map::new();
    if s.status == Status::Build {
        return Value::Object(map);
    }
    for nic in &s.nics {
        // A port deleted under a server takes its addresses with it.
        let Some(port) = w.ports.get(&nic.port_id) else {
            continue;
        };
        let entry = map
            .entry(nic.network_name.clone())
            .or_insert_with(|| json!([]));
        let Some(list) = entry.as_array_mut() else {
            continue;
        };
        let mut ip = |addr: String, kind: &str| {
            let v = match full {
                true => {
                    json!({"version": 4, "addr": addr, "OS-EXT-IPS:type": kind, "OS-EXT-IPS-MAC:mac_addr": port.mac})
                }
                false => json!({"version": 4, "addr": addr}),
            };
            list.push(v);
        };
        for fixed in &port.fixed_ips {
            ip(fixed.ip.to_string(), "fixed");
        }
        for fip in w
            .fips
            .values()
            .filter(|f| f.port_id.as_ref() == Some(&port.id))
        {
            ip(fip.address.to_string(), "floating");
        }
    }
    Value::Object(map)
}

fn flavor(cx: &Cx, w: &World, s: &Server) -> Value {
    let f = w.flavors.iter().find(|f| f.id == s.flavor_id);
    match (cx.at_least(47), f) {
        (true, Some(f)) => json!({
            "vcpus": f.vcpus, "ram": f.ram, "disk": f.disk, "ephemeral": 0, "swap": 0,
            "original_name": f.name, "extra_specs": {}
        }),
        _ => json!({"id": s.flavor_id, "links": cx.bookmark("flavors", &s.flavor_id)}),
    }
}

fn common(cx: &Cx, w: &World, s: &Server, full: bool) -> Map<String, Value> {
    let host_id = match (&s.host, s.status) {
        (Some(h), st) if st != Status::Build => host_id(&w.project_id, h),
        _ => String::new(),
    };
    let v = json!({
        "accessIPv4": "", "accessIPv6": "",
        "addresses": addresses(w, s, full),
        "created": wire::ts_z(s.created),
        "hostId": host_id,
        "id": s.id,
        "image": match s.boot_from_volume {
            true => json!(""),
            false => json!({"id": s.image_id, "links": cx.bookmark("images", &s.image_id)}),
        },
        "links": cx.link("servers", &s.id),
        "metadata": s.metadata,
        "name": s.name,
        "status": s.status.as_str(),
        "tenant_id": w.project_id,
        "user_id": USER_ID,
        "updated": wire::ts_z(s.updated),
        "OS-DCF:diskConfig": "MANUAL",
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// `OS-EXT-AZ:availability_zone`: the zone asked for from the first look on; else the
/// host's once placed; else empty.
fn zone_shown(w: &World, s: &Server, placed: bool) -> String {
    let host_zone = || {
        s.host
            .as_deref()
            .filter(|_| placed)
            .and_then(|h| w.zone_of_host(h))
    };
    s.availability_zone
        .clone()
        .or_else(host_zone)
        .unwrap_or_default()
}

/// The full server view (GET /servers/{id}, /servers/detail).
pub(super) fn server(cx: &Cx, w: &World, s: &Server) -> Value {
    let mut m = common(cx, w, s, true);
    let put = |m: &mut Map<String, Value>, k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put(&mut m, "flavor", flavor(cx, w, s));
    let (task, vm, power) = states(s);
    let placed = !matches!(s.status, Status::Build) && s.host.is_some();
    if s.status != Status::Error {
        put(&mut m, "progress", json!(0));
    }
    put(
        &mut m,
        "OS-EXT-AZ:availability_zone",
        json!(zone_shown(w, s, placed)),
    );
    put(&mut m, "config_drive", json!(""));
    put(&mut m, "key_name", json!(s.key_name));
    put(
        &mut m,
        "OS-SRV-USG:launched_at",
        json!(s.launched.map(wire::ts_micro_naive)),
    );
    put(&mut m, "OS-SRV-USG:terminated_at", Value::Null);
    // The groups of the server's ports, as Nova asks Neutron; none: no key.
    let groups = w.server_security_groups(&s.nics);
    if placed && s.status != Status::Error && !groups.is_empty() {
        let groups = groups.iter().map(|g| json!({"name": g})).collect();
        put(&mut m, "security_groups", Value::Array(groups));
    }
    put(
        &mut m,
        "OS-EXT-STS:task_state",
        if task.is_empty() {
            Value::Null
        } else {
            json!(task)
        },
    );
    put(&mut m, "OS-EXT-STS:vm_state", json!(vm));
    put(&mut m, "OS-EXT-STS:power_state", json!(power));
    put(
        &mut m,
        "os-extended-volumes:volumes_attached",
        volumes_attached(w, s),
    );
    if let Some(f) = &s.fault {
        put(
            &mut m,
            "fault",
            json!({"code": f.code, "created": wire::ts_z(f.created), "message": f.message}),
        );
    }
    versioned(cx, s, &mut m);
    Value::Object(m)
}

/// `os-extended-volumes:volumes_attached`: the server's volumes, boot volume first.
fn volumes_attached(w: &World, s: &Server) -> Value {
    let attached: Vec<Value> = w
        .cinder
        .attached_to(&s.id)
        .iter()
        .map(|v| {
            let on_delete = v
                .attachment
                .as_ref()
                .is_some_and(|a| a.delete_on_termination);
            json!({"id": v.id, "delete_on_termination": on_delete})
        })
        .collect();
    json!(attached)
}

/// `task_state` ("" = none), `vm_state` and `power_state`.
fn states(s: &Server) -> (&'static str, &'static str, u8) {
    match s.status {
        _ if s.deleting => ("deleting", vm_state(s.status), power(s.status)),
        Status::Build => ("scheduling", "building", 0),
        Status::Resize => ("resize_migrating", "active", 1),
        Status::PoweringOff => ("powering-off", "active", 1),
        Status::PoweringOn => ("powering-on", "stopped", 4),
        st => ("", vm_state(st), power(st)),
    }
}

fn vm_state(st: Status) -> &'static str {
    match st {
        Status::Build => "building",
        Status::Active | Status::Resize | Status::PoweringOff => "active",
        Status::Error => "error",
        Status::VerifyResize => "resized",
        Status::Shutoff | Status::PoweringOn => "stopped",
    }
}

fn power(st: Status) -> u8 {
    match st {
        Status::Active | Status::Resize | Status::VerifyResize => 1,
        Status::Shutoff | Status::PoweringOn => 4,
        _ => 0,
    }
}

/// Keys that appear from a given microversion on.
fn versioned(cx: &Cx, s: &Server, m: &mut Map<String, Value>) {
    let mut put = |min: u32, k: &str, v: Value| {
        if cx.at_least(min) {
            m.insert(k.to_string(), v);
        }
    };
    put(9, "locked", json!(false));
    put(19, "description", json!(s.description));
    put(26, "tags", json!(s.tags));
    put(63, "trusted_image_certificates", Value::Null);
    put(
        71,
        "server_groups",
        json!(s.group.iter().collect::<Vec<_>>()),
    );
    put(73, "locked_reason", Value::Null);
    put(90, "OS-EXT-SRV-ATTR:hostname", json!(s.name));
    put(96, "pinned_availability_zone", json!(s.availability_zone));
    put(100, "scheduler_hints", s.scheduler_hints.clone());
    // A server booted from a volume shows `"image": ""`: nothing to add properties to.
    if cx.at_least(98)
        && let Some(image) = m.get_mut("image").and_then(Value::as_object_mut)
    {
        image.insert("properties".into(), json!({}));
    }
}

/// The reduced view answered by `PUT /servers/{id}` (no extended attributes).
pub(super) fn updated(cx: &Cx, w: &World, s: &Server) -> Value {
    let mut m = common(cx, w, s, false);
    m.insert(
        "flavor".into(),
        json!({"id": s.flavor_id, "links": cx.bookmark("flavors", &s.flavor_id)}),
    );
    m.insert("progress".into(), json!(0));
    if cx.at_least(9) {
        m.insert("locked".into(), json!(false));
    }
    if cx.at_least(19) {
        m.insert("description".into(), json!(s.description));
    }
    Value::Object(m)
}

/// The summary view of `GET /servers`.
pub(super) fn summary(cx: &Cx, s: &Server) -> Value {
    json!({"id": s.id, "name": s.name, "links": cx.link("servers", &s.id)})
}
