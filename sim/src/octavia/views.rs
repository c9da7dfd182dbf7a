//! JSON views of Octavia objects, in the shapes recorded from Octavia 19 (no-op
//! drivers), with operating status derived by `lifecycle.rs`.

use serde_json::{Value, json};

use crate::wire::ts_naive;
use crate::world::World;
use crate::world::octavia::{Listener, LoadBalancer, Member, Meta, Monitor, Pool, Prov};
use crate::world::octavia_lifecycle::Operating;

fn meta(w: &World, m: &Meta, operating: &str) -> Value {
    json!({
        "id": m.id, "name": m.name, "description": m.description,
        "provisioning_status": m.prov.as_str(), "operating_status": operating,
        "admin_state_up": m.admin_state_up, "project_id": w.project_id, "tenant_id": w.project_id,
        "created_at": ts_naive(m.created), "updated_at": m.updated.map(ts_naive), "tags": m.tags
    })
}

fn merge(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

fn ids<'a>(it: impl Iterator<Item = &'a String>) -> Value {
    Value::Array(it.map(|id| json!({ "id": id })).collect())
}

pub(super) fn lb(op: &Operating, lb: &LoadBalancer) -> Value {
    let w = op.w;
    let o = &w.octavia;
    let mut listeners: Vec<&Listener> = o
        .listeners
        .values()
        .filter(|l| l.lb_id == lb.meta.id)
        .collect();
    listeners.sort_by_key(|l| l.meta.seq);
    let mut pools: Vec<&Pool> = o.pools.values().filter(|p| p.lb_id == lb.meta.id).collect();
    pools.sort_by_key(|p| p.meta.seq);
    merge(
        meta(w, &lb.meta, op.lb(&lb.meta.id)),
        json!({
            "vip_address": lb.vip_address, "vip_port_id": lb.vip_port_id, "vip_subnet_id": lb.vip_subnet_id,
            "vip_network_id": lb.vip_network_id, "vip_sg_ids": [], "additional_vips": [],
            "listeners": ids(listeners.iter().map(|l| &l.meta.id)), "pools": ids(pools.iter().map(|p| &p.meta.id)),
            "provider": "amphora", "flavor_id": lb.flavor_id, "vip_qos_policy_id": null,
            "availability_zone": lb.availability_zone, "vip_vnic_type": "normal"
        }),
    )
}

pub(super) fn listener(w: &World, l: &Listener) -> Value {
    let operating = if l.meta.prov == Prov::PendingCreate {
        "OFFLINE"
    } else {
        "ONLINE"
    };
    let o = &l.options;
    merge(
        meta(w, &l.meta, operating),
        json!({
            "protocol": l.protocol, "protocol_port": l.protocol_port, "connection_limit": l.connection_limit,
            "default_tls_container_ref": o.default_tls_container_ref, "sni_container_refs": o.sni_container_refs, "default_pool_id": l.default_pool_id,
            "l7policies": [], "insert_headers": o.insert_headers, "loadbalancers": [{"id": l.lb_id}],
            "timeout_client_data": o.timeout_client_data, "timeout_member_connect": o.timeout_member_connect,
            "timeout_member_data": o.timeout_member_data, "timeout_tcp_inspect": o.timeout_tcp_inspect,
            "client_ca_tls_container_ref": null, "client_authentication": "NONE", "client_crl_container_ref": null,
            "allowed_cidrs": (!o.allowed_cidrs.is_empty()).then_some(&o.allowed_cidrs), "tls_ciphers": null, "tls_versions": null,
            "alpn_protocols": null, "hsts_max_age": null, "hsts_include_subdomains": false, "hsts_preload": false
        }),
    )
}

pub(super) fn pool(op: &Operating, p: &Pool) -> Value {
    merge(
        meta(op.w, &p.meta, op.pool(p)),
        json!({
            "protocol": p.protocol, "lb_algorithm": p.lb_algorithm, "session_persistence": persistence(p),
            "loadbalancers": [{"id": p.lb_id}], "listeners": ids(p.listener_id.iter()),
            "members": ids(p.members.iter().map(|m| &m.meta.id)), "healthmonitor_id": p.monitor_id,
            "tls_container_ref": null, "ca_tls_container_ref": null, "crl_container_ref": null,
            "tls_enabled": false, "tls_ciphers": null, "tls_versions": null, "alpn_protocols": null
        }),
    )
}

/// Octavia shows every session persistence field, null where not set.
fn persistence(p: &Pool) -> Value {
    let Some(sp) = &p.session_persistence else {
        return Value::Null;
    };
    json!({
        "type": sp.get("type"), "cookie_name": sp.get("cookie_name"),
        "persistence_timeout": null, "persistence_granularity": null
    })
}

pub(super) fn member(op: &Operating, p: &Pool, m: &Member) -> Value {
    let mut v = merge(
        meta(op.w, &m.meta, op.member(p, m)),
        json!({
            "address": m.address, "protocol_port": m.protocol_port, "weight": m.weight, "backup": m.backup,
            "subnet_id": m.subnet_id, "monitor_address": m.monitor_address, "monitor_port": m.monitor_port,
            "vnic_type": "normal"
        }),
    );
    if let Some(o) = v.as_object_mut() {
        o.remove("description");
    }
    v
}

pub(super) fn monitor(w: &World, m: &Monitor) -> Value {
    let operating = if m.meta.prov == Prov::PendingCreate {
        "OFFLINE"
    } else {
        "ONLINE"
    };
    let mut v = merge(
        meta(w, &m.meta, operating),
        json!({
            "type": m.kind, "delay": m.delay, "timeout": m.timeout, "max_retries": m.max_retries,
            "max_retries_down": m.max_retries_down, "http_method": m.http_method, "url_path": m.url_path,
            "expected_codes": m.expected_codes, "pools": [{"id": m.pool_id}], "http_version": null, "domain_name": null
        }),
    );
    if let Some(o) = v.as_object_mut() {
        o.remove("description");
    }
    v
}

/// `GET /loadbalancers/{id}/status`: the nested status tree.
pub(super) fn status_tree(op: &Operating, lb: &LoadBalancer) -> Value {
    let o = &op.w.octavia;
    let mut listeners: Vec<&Listener> = o
        .listeners
        .values()
        .filter(|l| l.lb_id == lb.meta.id)
        .collect();
    listeners.sort_by_key(|l| l.meta.seq);
    let pool_status = |p: &Pool| {
        let hm = p.monitor_id.as_ref().and_then(|m| o.monitors.get(m)).map(|m| {
            json!({"id": m.meta.id, "name": m.meta.name, "type": m.kind, "provisioning_status": m.meta.prov.as_str(),
                   "operating_status": if m.meta.prov == Prov::PendingCreate { "OFFLINE" } else { "ONLINE" }})
        });
        let members: Vec<Value> = p.members.iter().map(|m| json!({
            "id": m.meta.id, "name": m.meta.name, "operating_status": op.member(p, m),
            "provisioning_status": m.meta.prov.as_str(), "address": m.address, "protocol_port": m.protocol_port
        })).collect();
        let mut v = json!({"id": p.meta.id, "name": p.meta.name, "provisioning_status": p.meta.prov.as_str(),
                           "operating_status": op.pool(p), "members": members});
        if let Some(hm) = hm {
            v["health_monitor"] = hm;
        }
        v
    };
    let listeners: Vec<Value> = listeners
        .iter()
        .map(|l| {
            let pools: Vec<Value> = o.pools.values().filter(|p| p.listener_id.as_deref() == Some(l.meta.id.as_str())).map(pool_status).collect();
            json!({"id": l.meta.id, "name": l.meta.name, "operating_status": if l.meta.prov == Prov::PendingCreate { "OFFLINE" } else { "ONLINE" },
                   "provisioning_status": l.meta.prov.as_str(), "pools": pools})
        })
        .collect();
    json!({"statuses": {"loadbalancer": {
        "id": lb.meta.id, "name": lb.meta.name, "operating_status": op.lb(&lb.meta.id),
        "provisioning_status": lb.meta.prov.as_str(), "listeners": listeners
    }}})
}
