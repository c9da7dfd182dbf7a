//! Terminated-https listeners' certificates: Octavia reads each Barbican secret a
//! create or update names (as its own service user, through the ACL it sets with the
//! caller's token, so only the caller's project's secrets) and parses it as PKCS#12.
//! The words are the real Octavia 19's (`sim/barbican-wire.md`).

use axum::response::Response;
use serde_json::{Map, Value};

use super::envelope::Cx;
use crate::world::World;

const UNREADABLE: &str = "The PKCS12 bundle is unreadable. Please check the PKCS12 bundle validity. In addition, make sure it does not require a pass phrase. Error: Could not deserialize PKCS12 data";

/// The certificate references of a listener request of `protocol` (`creating`: a
/// create, which must name one when it terminates TLS), against `w`'s Barbican whose
/// secrets live under `barbican` (their URLs' prefix).
pub(super) fn check(
    cx: &Cx,
    w: &World,
    barbican: &str,
    req: &Map<String, Value>,
    protocol: &str,
    creating: bool,
) -> Result<(), Response> {
    let default = req.get("default_tls_container_ref").and_then(Value::as_str);
    let sni: Vec<&str> = req
        .get("sni_container_refs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let refs: Vec<&str> = default.into_iter().chain(sni.iter().copied()).collect();
    if protocol != "TERMINATED_HTTPS" {
        return match refs.is_empty() {
            true => Ok(()),
            false => Err(cx.err(400, &format!("Validation failure: Certificate container references are not allowed on {protocol} protocol listeners."))),
        };
    }
    if creating && refs.is_empty() {
        return Err(cx.err(400, "Validation failure: An SNI or default certificate container reference must be provided for TERMINATED_HTTPS protocol listeners."));
    }
    let mut bad = Vec::new();
    for r in refs {
        let secret = r
            .strip_prefix(barbican)
            .and_then(|id| w.barbican.secrets.get(id));
        match secret {
            Some(s) if !looks_like_pkcs12(&s.payload) => return Err(cx.err(400, UNREADABLE)),
            Some(_) => {}
            None => bad.push(format!("'{r}'")),
        }
    }
    match bad.is_empty() {
        true => Ok(()),
        false => Err(cx.err(
            400,
            &format!("Could not retrieve certificate: [{}]", bad.join(", ")),
        )),
    }
}

/// A DER PFX: a SEQUENCE that opens with version 3.
fn looks_like_pkcs12(der: &[u8]) -> bool {
    let header = match der.get(1) {
        Some(&len) if len < 0x80 => 2,
        Some(&len) => 2 + usize::from(len & 0x7f),
        None => return false,
    };
    der.first() == Some(&0x30) && der.get(header..header + 3) == Some(&[0x02, 0x01, 0x03][..])
}
