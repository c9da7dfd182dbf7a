//! ObjectMeta checks every kind gets from the apiserver: the name format (RFC 1123 subdomain, or label for
//! Namespaces) and label keys/values (qualified names, at most 63 characters), with the real messages.
//!
//! Not covered: annotation size limits, ownerReference and finalizer name formats.

use serde_json::Value;

use crate::error::Cause;

const SUBDOMAIN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
const DNS_LABEL: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
const LABEL_VALUE: &str = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";

fn matches(re: &str, s: &str) -> bool {
    super::pattern::is_match(re, s).unwrap_or(false)
}

/// `metadata.name` of a new object; `label` for kinds whose names must be DNS labels (Namespaces).
pub fn name(name: &str, label: bool) -> Vec<Cause> {
    let v = Value::from(name);
    let mut causes = Vec::new();
    if label {
        if name.len() > 63 {
            causes.push(Cause::invalid(
                "metadata.name",
                &v,
                "must be no more than 63 characters",
            ));
        }
        if !matches(DNS_LABEL, name) {
            causes.push(Cause::invalid("metadata.name", &v, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"));
        }
    } else {
        if name.len() > 253 {
            causes.push(Cause::invalid(
                "metadata.name",
                &v,
                "must be no more than 253 characters",
            ));
        }
        if !matches(SUBDOMAIN, name) {
            causes.push(Cause::invalid("metadata.name", &v, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));
        }
    }
    causes
}

/// `metadata.labels`: keys are `[prefix/]name` (name ≤ 63, prefix a DNS subdomain), values ≤ 63 characters.
pub fn labels(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (k, v) in obj["metadata"]["labels"].as_object().into_iter().flatten() {
        let (prefix, key_name) = k
            .rsplit_once('/')
            .map_or((None, k.as_str()), |(p, n)| (Some(p), n));
        let key_ok = !key_name.is_empty()
            && key_name.len() <= 63
            && matches(LABEL_VALUE, key_name)
            && prefix.is_none_or(|p| p.len() <= 253 && matches(SUBDOMAIN, p));
        if !key_ok {
            causes.push(Cause::invalid("metadata.labels", &Value::from(k.as_str()), "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"));
        }
        let value = v.as_str().unwrap_or_default();
        if value.len() > 63 {
            causes.push(Cause::invalid(
                "metadata.labels",
                v,
                "must be no more than 63 characters",
            ));
        }
        if !matches(LABEL_VALUE, value) {
            causes.push(Cause::invalid("metadata.labels", v, "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_labels_follow_the_apiserver_formats() {
        assert!(name("vm-a.b", false).is_empty());
        assert_eq!(name("Vm_A", false).len(), 1);
        assert_eq!(name("a.b", true).len(), 1);
        assert_eq!(name(&"x".repeat(254), false).len(), 1);
        assert!(
            labels(&json!({"metadata": {"labels": {"verda.linecorp.com/group": "g1", "app": ""}}}))
                .is_empty()
        );
        assert_eq!(
            labels(&json!({"metadata": {"labels": {"app": "x".repeat(64)}}})).len(),
            1
        );
        assert_eq!(
            labels(&json!({"metadata": {"labels": {"bad key": "v"}}})).len(),
            1
        );
    }
}
