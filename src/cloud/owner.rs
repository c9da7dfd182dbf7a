//! How a cloud resource records the Kubernetes object that owns it — the one place that
//! knows these names, so controllers and tests never spell them by hand.
//!
//! - Nova servers: metadata `verda.linecorp.com:uid`, `:namespace`, `:name` (Nova refuses
//!   `/` in metadata keys: `^[a-zA-Z0-9-_:. ]{1,255}$`), plus the tag `verda-uid-<uid>`
//!   so `list_servers` can filter by owner server-side (Nova tag filters need
//!   microversion 2.26, tags at create 2.52).
//! - Octavia objects: the tag `verda-uid-<uid>`.
//! - Servers and load balancers also carry [`MANAGED_TAG`], so one paginated list per
//!   service finds everything the operator owns (the shared cloud view's refresh).
//! - Nova server groups (no tags or metadata): the name `verda-<namespace>-<name>-<uid>`,
//!   found again by its `-<uid>` suffix; the name part is shortened to fit Nova's 255.
//! - Neutron floating IPs (no tags at create): the description `verda-uid-<uid>`.
//!
//! Deliberately not here: deciding *whether* to create anything (controllers do that).

use std::collections::BTreeMap;

/// Prefix of every metadata key the operator writes; `spec.metadata` may not use it.
pub const META_PREFIX: &str = "verda.linecorp.com:";
pub const META_UID: &str = "verda.linecorp.com:uid";
pub const META_NAMESPACE: &str = "verda.linecorp.com:namespace";
pub const META_NAME: &str = "verda.linecorp.com:name";
/// Nova's longest server group name.
const MAX_GROUP_NAME: usize = 255;
const TAG_PREFIX: &str = "verda-uid-";
/// The tag of every server and load balancer the operator creates.
pub const MANAGED_TAG: &str = "verda-managed";

/// The Kubernetes object a cloud resource belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: String,
    pub namespace: String,
    pub name: String,
}

impl Owner {
    pub fn new(
        uid: impl Into<String>,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Self {
            uid: uid.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The Nova/Octavia tag that records this owner.
    pub fn tag(&self) -> String {
        owner_tag(&self.uid)
    }

    /// The tags a new server or load balancer carries: its owner's and [`MANAGED_TAG`].
    pub fn tags(&self) -> Vec<String> {
        vec![self.tag(), MANAGED_TAG.to_owned()]
    }

    /// Server metadata recording this owner (merge it into the user's metadata).
    pub fn server_metadata(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (META_UID.to_owned(), self.uid.clone()),
            (META_NAMESPACE.to_owned(), self.namespace.clone()),
            (META_NAME.to_owned(), self.name.clone()),
        ])
    }

    /// The name of this owner's server group; see [`is_server_group_of`].
    pub fn server_group_name(&self) -> String {
        let suffix = format!("-{}", self.uid);
        let mut head = format!("verda-{}-{}", self.namespace, self.name);
        // Names are ASCII (DNS labels), so any byte index is a character boundary.
        head.truncate(MAX_GROUP_NAME.saturating_sub(suffix.len()));
        head + &suffix
    }

    /// Read an owner back from server metadata, if all three keys are present.
    pub fn from_metadata(metadata: &BTreeMap<String, String>) -> Option<Self> {
        Some(Self {
            uid: metadata.get(META_UID)?.clone(),
            namespace: metadata.get(META_NAMESPACE)?.clone(),
            name: metadata.get(META_NAME)?.clone(),
        })
    }
}

/// `verda-uid-<uid>`: the tag (Nova, Octavia) or description (floating IP) of an owner.
pub fn owner_tag(uid: &str) -> String {
    format!("{TAG_PREFIX}{uid}")
}

/// The owner UID recorded in a list of tags, if any.
pub fn uid_from_tags(tags: &[String]) -> Option<&str> {
    tags.iter().find_map(|t| t.strip_prefix(TAG_PREFIX))
}

/// Whether a server group name belongs to the owner with this UID.
pub fn is_server_group_of(group_name: &str, uid: &str) -> bool {
    group_name.starts_with("verda-") && group_name.ends_with(&format!("-{uid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner::new("3f1c2a4e-0000-4000-8000-000000000001", "default", "web")
    }

    #[test]
    fn tag_fits_novas_sixty_character_limit_and_has_no_forbidden_characters() {
        let tag = owner().tag();
        assert_eq!(tag, "verda-uid-3f1c2a4e-0000-4000-8000-000000000001");
        assert!(tag.len() <= 60);
        assert!(!tag.contains('/') && !tag.contains(','));
        assert_eq!(uid_from_tags(&[tag]), Some(owner().uid.as_str()));
    }

    #[test]
    fn metadata_round_trips_to_the_owner() {
        let md = owner().server_metadata();
        assert_eq!(
            md.get("verda.linecorp.com:namespace").map(String::as_str),
            Some("default")
        );
        assert_eq!(Owner::from_metadata(&md), Some(owner()));
        assert_eq!(Owner::from_metadata(&BTreeMap::new()), None);
    }

    #[test]
    fn metadata_keys_match_novas_key_pattern() {
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-_:. ".contains(c);
        for key in owner().server_metadata().keys() {
            assert!(key.starts_with(META_PREFIX), "{key}");
            assert!(key.len() <= 255 && key.chars().all(allowed), "{key}");
        }
    }

    #[test]
    fn server_group_name_fits_nova_and_keeps_the_uid_suffix() {
        let long = Owner::new(owner().uid, "n".repeat(63), "g".repeat(253));
        let name = long.server_group_name();
        assert_eq!(name.len(), 255);
        assert!(is_server_group_of(&name, &long.uid));
    }

    #[test]
    fn server_group_is_found_by_uid_suffix_only() {
        let o = owner();
        assert!(is_server_group_of(&o.server_group_name(), &o.uid));
        assert!(!is_server_group_of("verda-default-web-other", &o.uid));
        assert!(!is_server_group_of(&format!("manual-{}", o.uid), &o.uid));
    }
}
