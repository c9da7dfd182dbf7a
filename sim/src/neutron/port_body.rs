//! A port's request body (`POST /v2.0/ports`, `PUT /v2.0/ports/{id}`) checked as
//! Neutron checks it before looking at the cloud: the attribute rules of
//! `schema.rs`, then each value in the port attribute map's order (`name`,
//! `network_id`, `admin_state_up`, `fixed_ips`, `security_groups`,
//! `allowed_address_pairs`, `description`, `device_id`, `device_owner`). The address-pair validator raises its own
//! errors (their types and words are `neutron_lib.api.definitions.allowedaddresspairs`').
//!
//! Deliberately not here: whether the network, subnets, groups and addresses exist or
//! are free (`ports.rs`, `addresses.rs`), and policy (`policy.rs`).

use std::net::IpAddr;

use axum::response::Response;
use serde_json::{Map, Value};

use super::envelope::Cx;
use super::schema::{self, Spec};
use crate::wire::py_str;

/// `cfg.CONF.max_allowed_address_pair`.
const MAX_PAIRS: usize = 10;

const SPEC: Spec = Spec {
    required: &["network_id"],
    read_only: &[
        "id",
        "status",
        "binding:vif_type",
        "binding:vif_details",
        "created_at",
        "updated_at",
        "revision_number",
        "ip_allocation",
        "resource_request",
    ],
    create_only: &["network_id", "tags"],
    modelled: &[
        "name",
        "description",
        "fixed_ips",
        "allowed_address_pairs",
        "security_groups",
        "tags",
        "admin_state_up",
        "device_id",
        "device_owner",
    ],
    other: &[
        "mac_address",
        "tenant_id",
        "project_id",
        "port_security_enabled",
        "binding:host_id",
        "binding:vnic_type",
        "binding:profile",
        "extra_dhcp_opts",
        "qos_policy_id",
        "dns_name",
        "dns_domain",
        "propagate_uplink_status",
        "numa_affinity_policy",
        "hints",
        "trusted",
    ],
};

/// One `fixed_ips` item: a subnet, an address, or both.
pub(super) struct WantedIp {
    pub subnet_id: Option<String>,
    pub ip: Option<IpAddr>,
}

/// One `allowed_address_pairs` item.
pub(super) struct WantedPair {
    pub ip_address: String,
    pub mac_address: Option<String>,
}

/// The attributes a valid body sets; `None` = not given.
#[derive(Default)]
pub(super) struct PortBody {
    pub network_id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub fixed_ips: Option<Vec<WantedIp>>,
    pub pairs: Option<Vec<WantedPair>>,
    pub security_groups: Option<Vec<String>>,
    /// The server (or other device) it is bound to, and who binds it; `""` unbinds.
    pub device_id: Option<String>,
    pub device_owner: Option<String>,
    /// The keys of each `fixed_ips` and `allowed_address_pairs` item, for policy.
    pub fixed_ip_keys: Vec<String>,
    pub pair_keys: Vec<String>,
}

/// Checks a create (`create`) or update body.
pub(super) fn check(cx: &Cx, req: &Map<String, Value>, create: bool) -> Result<PortBody, Response> {
    schema::attributes(cx, req, &SPEC, create)?;
    let mut body = PortBody {
        name: schema::text(cx, req, "name")?,
        ..PortBody::default()
    };
    if let Some(v) = req.get("network_id") {
        body.network_id = Some(schema::uuid(v).map_err(schema::invalid_for(cx, "network_id"))?);
    }
    if let Some(v) = req.get("admin_state_up")
        && !schema::boolean(cx, v)?
    {
        let msg = "A port with admin_state_up false is not modelled by the simulator.";
        return Err(cx.err(400, "HTTPBadRequest", msg));
    }
    if let Some(v) = req.get("fixed_ips") {
        body.fixed_ips = Some(fixed_ips(v).map_err(schema::invalid_for(cx, "fixed_ips"))?);
        body.fixed_ip_keys = item_keys(v);
    }
    if let Some(v) = req.get("security_groups") {
        body.security_groups =
            Some(schema::uuid_list(v).map_err(schema::invalid_for(cx, "security_groups"))?);
    }
    if let Some(v) = req.get("allowed_address_pairs") {
        body.pairs = Some(address_pairs(cx, v)?);
        body.pair_keys = item_keys(v);
    }
    body.description = schema::text(cx, req, "description")?;
    body.device_id = schema::text(cx, req, "device_id")?;
    body.device_owner = schema::text(cx, req, "device_owner")?;
    schema::unknown(cx, req, &SPEC)?;
    Ok(body)
}

/// The keys of every item of a list of dicts, item after item.
fn item_keys(v: &Value) -> Vec<String> {
    let items = v.as_array().into_iter().flatten();
    let keys = items.filter_map(Value::as_object).flat_map(|o| o.keys());
    keys.cloned().collect()
}

/// `validate_fixed_ips`.
fn fixed_ips(v: &Value) -> Result<Vec<WantedIp>, String> {
    let format = |v: &Value| format!("Invalid data format for fixed IP: '{}'", py_str(v));
    let items = v.as_array().ok_or_else(|| format(v))?;
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for item in items {
        let fixed = item.as_object().ok_or_else(|| format(item))?;
        let ip = match fixed.get("ip_address") {
            Some(a) if seen.contains(&py_str(a)) => {
                return Err(format!("Duplicate IP address '{}'", py_str(a)));
            }
            Some(a) => {
                seen.push(py_str(a));
                Some(schema::ip(a)?)
            }
            None => None,
        };
        let subnet_id = match fixed.get("subnet_id") {
            Some(s) => Some(schema::uuid(s)?),
            None => None,
        };
        out.push(WantedIp { subnet_id, ip });
    }
    Ok(out)
}

/// `_validate_allowed_address_pairs`: most refusals are raised, not returned, so
/// they carry their own type and no `Invalid input` preamble.
fn address_pairs(cx: &Cx, v: &Value) -> Result<Vec<WantedPair>, Response> {
    let raise = |msg: &str| cx.err(400, "HTTPBadRequest", msg);
    let items = v
        .as_array()
        .ok_or_else(|| raise("Allowed address pairs must be a list."))?;
    if items.len() > MAX_PAIRS {
        let msg = format!("The number of allowed address pair exceeds the maximum {MAX_PAIRS}.");
        return Err(cx.err(400, "AllowedAddressPairExhausted", &msg));
    }
    let mut out: Vec<WantedPair> = Vec::new();
    for item in items {
        let Some(pair) = item.as_object() else {
            let why = format!("'{}' is not a dictionary", py_str(item));
            return Err(schema::invalid(cx, "allowed_address_pairs", &why));
        };
        out.push(address_pair(cx, pair, &out)?);
    }
    Ok(out)
}

fn address_pair(
    cx: &Cx,
    pair: &Map<String, Value>,
    before: &[WantedPair],
) -> Result<WantedPair, Response> {
    let raise = |msg: &str| cx.err(400, "HTTPBadRequest", msg);
    let mac_address = match pair.get("mac_address") {
        Some(m) => Some(schema::mac(m).map_err(|m| raise(&m))?),
        None => None,
    };
    let Some(ip) = pair.get("ip_address") else {
        let msg = "AllowedAddressPair must contain ip_address";
        return Err(cx.err(400, "AllowedAddressPairsMissingIP", msg));
    };
    let ip_address = py_str(ip);
    if before
        .iter()
        .any(|p| p.ip_address == ip_address && p.mac_address == mac_address)
    {
        let mac = mac_address.as_deref().unwrap_or("None");
        let msg = format!(
            "Request contains duplicate address pair: mac_address {mac} ip_address {ip_address}."
        );
        return Err(cx.err(400, "DuplicateAddressPairInRequest", &msg));
    }
    let strange: Vec<&str> = pair
        .keys()
        .map(String::as_str)
        .filter(|k| !["mac_address", "ip_address"].contains(k))
        .collect();
    if !strange.is_empty() {
        return Err(raise(&format!(
            "Unrecognized attribute(s) '{}'",
            strange.join(", ")
        )));
    }
    address_or_cidr(ip).map_err(|m| raise(&m))?;
    Ok(WantedPair {
        ip_address,
        mac_address,
    })
}

/// An address, or with `/` a CIDR (IPv6 ones too).
fn address_or_cidr(ip: &Value) -> Result<(), String> {
    let text = ip.as_str().unwrap_or_default();
    let Some((addr, prefix)) = text.split_once('/') else {
        return schema::ip(ip).map(|_| ());
    };
    let v6 =
        addr.parse::<std::net::Ipv6Addr>().is_ok() && prefix.parse::<u8>().is_ok_and(|p| p <= 128);
    match v6 {
        true => Ok(()),
        false => schema::cidr(ip).map(|_| ()),
    }
}
