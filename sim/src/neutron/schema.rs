//! Neutron's attribute validators (`neutron_lib.api.validators`, run by
//! `AttributeInfo.convert_values` on every POST and PUT) for the floating IP fields the
//! operator sends: `description` is `type:string` of at most 255 characters
//! (`DESCRIPTION_FIELD_SIZE`). A refusal is `HTTPBadRequest` with
//! `Invalid input for <attribute>. Reason: <validator's message>.`, in the recorded
//! `NeutronError` body.
//!
//! Deliberately not here: ID formats (the handlers look the IDs up), attributes not
//! allowed in POST and policy (the handlers answer those as recorded).

use axum::response::Response;
use serde_json::{Map, Value};

use super::envelope::Cx;
use crate::wire::py_str;

const DESCRIPTION_FIELD_SIZE: usize = 255;

/// A floating IP body (create or update).
pub(super) fn floating_ip(cx: &Cx, body: &Map<String, Value>) -> Result<(), Response> {
    let Some(why) = body
        .get("description")
        .and_then(|d| string(d, DESCRIPTION_FIELD_SIZE))
    else {
        return Ok(());
    };
    let msg = format!("Invalid input for description. Reason: {why}.");
    Err(cx.err(400, "HTTPBadRequest", &msg))
}

/// `validate_string(data, max_len)`.
fn string(data: &Value, max_len: usize) -> Option<String> {
    let shown = py_str(data);
    match data.as_str() {
        None => Some(format!("'{shown}' is not a valid string")),
        Some(s) if s.chars().count() > max_len => {
            Some(format!("'{shown}' exceeds maximum length of {max_len}"))
        }
        Some(_) => None,
    }
}
