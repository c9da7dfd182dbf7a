//! CEL rules shared by the kinds: immutability of fields Nova or Octavia cannot change.

use kube::core::{Message, Rule};

/// A transition rule that refuses any change to `spec.<field>`, including setting or
/// removing it. `why` tells the reader what to do instead.
pub(crate) fn immutable_spec_field(field: &str, why: &str) -> Rule {
    Rule::new(format!(
        "has(self.spec.{field}) == has(oldSelf.spec.{field}) && \
         (!has(self.spec.{field}) || self.spec.{field} == oldSelf.spec.{field})"
    ))
    .message(Message::Message(format!(
        "spec.{field} is immutable: {why}"
    )))
    .field_path(format!(".spec.{field}"))
}
