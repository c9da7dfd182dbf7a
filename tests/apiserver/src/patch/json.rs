//! JSON patch (RFC 6902) through the `json-patch` crate; any failure (a `test` that does not match, a missing
//! path) is the apiserver's generic 422.

use serde_json::Value;

use crate::error::ApiError;

pub fn apply(doc: &mut Value, body: &[u8]) -> Result<(), ApiError> {
    let ops: json_patch::Patch = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
    json_patch::patch(doc, &ops.0).map_err(|_| ApiError::patch_rejected())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn failing_test_op_leaves_the_document_unchanged() {
        let mut doc = json!({"spec": {"replicas": 2}});
        let body = br#"[{"op":"test","path":"/spec/replicas","value":99},{"op":"replace","path":"/spec/replicas","value":5}]"#;
        let err = apply(&mut doc, body).expect_err("test op must fail");
        assert_eq!(err.code, 422);
        assert_eq!(doc, json!({"spec": {"replicas": 2}}));
    }
}
