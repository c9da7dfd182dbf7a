//! JSON merge patch (RFC 7386): objects merge recursively, `null` deletes a key, everything else (lists
//! included) replaces.

use serde_json::Value;

pub fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let Some(t) = target.as_object_mut() else {
        return;
    };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_deletes_and_lists_are_replaced_whole() {
        let mut doc = json!({"spec": {"a": 1, "b": 2, "l": [1, 2]}});
        merge(
            &mut doc,
            &json!({"spec": {"a": null, "l": [3], "c": {"d": true}}}),
        );
        assert_eq!(doc, json!({"spec": {"b": 2, "l": [3], "c": {"d": true}}}));
    }
}
