//! How a cloud resource records the Kubernetes object that owns it — the one place that
//! knows these names, so controllers and tests never spell them by hand.
//!
//! - Nova servers: metadata `verda.linecorp.com:uid`, `:namespace`, `:name` (Nova refuses
//!   `/` in metadata keys: `^[a-zA-Z0-9-_:. ]{1,255}$`), plus the tag `verda-uid-<uid>`
//!   so `list_servers` can filter by owner server-side (Nova tag filters need
//!   microversion 2.26, tags at create 2.52).
//! - Octavia objects: the tag `verda-uid-<uid>`; a load balancer also the tag
//!   `verda-namespace-<namespace>` (Octavia takes 255 characters where Nova takes 60), as
//!   its name, `verda-<namespace>-<name>`, cannot tell namespace `team` from `team-a`.
//! - Servers and load balancers also carry [`MANAGED_TAG`], so one paginated list per
//!   service finds everything the operator owns (the shared cloud view's refresh).
//! - Nova server groups (no tags or metadata): the name `verda-<namespace>-<name>-<uid>`,
//!   found again by its `-<uid>` suffix; the name part is shortened to fit Nova's 255.
//! - Neutron floating IPs (no tags at create): the description `verda-uid-<uid>`.
//! - Declared Neutron ports (no tags kept at create): the description
//!   `verda-uid-<uid> verda-cluster-<id>`, for a group's replica `n`
//!   `verda-uid-<group uid>-<n> verda-cluster-<id>` (found by exact match).
//! - Designate record sets (`spec.dns`): the description `verda-uid-<uid>
//!   verda-cluster-<id>`, as a declared port's (found by exact match).
//! - Cinder data volumes: the server's metadata keys plus `verda.linecorp.com:volume`
//!   (the name in the spec) and, for a group's replica, `verda.linecorp.com:index`;
//!   a replica's volumes record the group, not the VirtualMachine, so a new
//!   VirtualMachine of the same index finds them. Found by a metadata filter.
//! - The cluster ([`ClusterId`]) the owner lives in, so clusters sharing a project tell
//!   their resources apart: server metadata `verda.linecorp.com:cluster`, the tag
//!   `verda-cluster-<id>` on servers and load balancers, and a mark of it in server
//!   group names (`verda-<mark>.<namespace>-<name>-<uid>`). A floating IP belongs to the
//!   cluster of its owner's load balancer.
//! - Barbican secrets (a terminated-https listener's certificates; no tags or
//!   metadata): the name `verda-<mark>.tls-<uid>-<fingerprint>`, found by its prefix
//!   (`verda-tls-<uid>-` for an owner recorded without a cluster).
//!
//! Deliberately not here: deciding *whether* to create anything (controllers do that).

use std::collections::BTreeMap;

/// Prefix of every metadata key the operator writes; `spec.metadata` may not use it.
pub const META_PREFIX: &str = "verda.linecorp.com:";
pub const META_UID: &str = "verda.linecorp.com:uid";
pub const META_NAMESPACE: &str = "verda.linecorp.com:namespace";
pub const META_NAME: &str = "verda.linecorp.com:name";
pub const META_CLUSTER: &str = "verda.linecorp.com:cluster";
/// A data volume's name in `spec.volumes`.
pub const META_VOLUME: &str = "verda.linecorp.com:volume";
/// The replica index a group's data volume belongs to.
pub const META_INDEX: &str = "verda.linecorp.com:index";
const CLUSTER_TAG_PREFIX: &str = "verda-cluster-";
/// Nova's longest server group name.
const MAX_GROUP_NAME: usize = 255;
const TAG_PREFIX: &str = "verda-uid-";
const NAMESPACE_TAG_PREFIX: &str = "verda-namespace-";
/// The description recording a declared port's owner: the VirtualMachine, or the group
/// and replica `index`, and the cluster.
pub fn port_record(uid: &str, index: Option<u32>, cluster: &ClusterId) -> String {
    match index {
        Some(n) => format!("{TAG_PREFIX}{uid}-{n} {}", cluster.tag()),
        None => format!("{TAG_PREFIX}{uid} {}", cluster.tag()),
    }
}

/// The owner UID, replica index and cluster a port's description records.
pub fn port_owner(description: &str) -> Option<(&str, Option<u32>, &str)> {
    let (owner, cluster) = description.split_once(' ')?;
    let cluster = cluster.strip_prefix(CLUSTER_TAG_PREFIX)?;
    let rest = owner.strip_prefix(TAG_PREFIX)?;
    // Kubernetes UIDs are UUIDs: 36 characters, then `-<index>` for a replica.
    match rest.get(36..) {
        Some("") | None => Some((rest, None, cluster)),
        Some(tail) => {
            let index = tail.strip_prefix('-')?.parse().ok()?;
            Some((&rest[..36], Some(index), cluster))
        }
    }
}

/// The tag of every server and load balancer the operator creates.
pub const MANAGED_TAG: &str = "verda-managed";

/// The Kubernetes cluster the operator serves: the `kube-system` namespace's UID or a
/// configured name (1-46 of `A-Za-z0-9._-`, so its tag fits Nova's 60 characters).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClusterId(String);

impl ClusterId {
    /// A cluster name, refused unless it fits every place it is recorded.
    pub fn new(id: impl Into<String>) -> Result<Self, String> {
        let id = id.into();
        let valid = (1..=46).contains(&id.len())
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if valid {
            Ok(Self(id))
        } else {
            Err(format!(
                "cluster name {id:?} must be 1-46 letters, digits, '.', '_' or '-'"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `verda-cluster-<id>`: the tag of this cluster's servers and load balancers.
    pub fn tag(&self) -> String {
        format!("{CLUSTER_TAG_PREFIX}{}", self.0)
    }

    /// Eight hex digits of the ID (FNV-1a), the cluster's mark in server group names.
    pub fn mark(&self) -> String {
        format!(
            "{:08x}",
            crate::fnv::fnv1a64(self.0.as_bytes()) & 0xffff_ffff
        )
    }

    /// Whether tags (a server's or a load balancer's) name this cluster.
    pub fn in_tags(&self, tags: &[String]) -> bool {
        tags.iter()
            .any(|t| t.strip_prefix(CLUSTER_TAG_PREFIX) == Some(&self.0))
    }

    /// Whether server metadata names this cluster.
    pub fn in_metadata(&self, metadata: &BTreeMap<String, String>) -> bool {
        metadata.get(META_CLUSTER) == Some(&self.0)
    }

    /// The metadata filter of this cluster's data volumes.
    pub fn volume_filter(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(META_CLUSTER.to_owned(), self.0.clone())])
    }

    /// Whether a server group name carries this cluster's mark.
    pub fn marks_server_group(&self, group_name: &str) -> bool {
        group_name
            .strip_prefix("verda-")
            .and_then(|rest| rest.split_once('.'))
            .is_some_and(|(mark, _)| mark == self.mark())
    }

    /// The start of the name of every Barbican secret of this cluster:
    /// `verda-<mark>.tls-<owner uid>-<fingerprint>`.
    pub fn certificate_prefix(&self) -> String {
        format!("verda-{}.tls-", self.mark())
    }
}

impl std::fmt::Display for ClusterId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The Kubernetes object a cloud resource belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    /// The cluster the object lives in; recorded on what is created for it.
    pub cluster: Option<ClusterId>,
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
            cluster: None,
        }
    }

    /// `namespace/name` of the owner object, as logs, messages and events name it.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The same owner, recording `cluster` on what is created for it.
    pub fn in_cluster(self, cluster: &ClusterId) -> Self {
        Self {
            cluster: Some(cluster.clone()),
            ..self
        }
    }

    /// The Nova/Octavia tag that records this owner.
    pub fn tag(&self) -> String {
        owner_tag(&self.uid)
    }

    /// The start of every Barbican secret name of this owner: `verda-<cluster mark>.tls-<uid>-`
    /// (the mark as in server group names), so clusters sharing a project tell theirs apart.
    pub fn certificate_prefix(&self) -> String {
        match &self.cluster {
            Some(cluster) => format!("{}{}-", cluster.certificate_prefix(), self.uid),
            None => format!("verda-tls-{}-", self.uid),
        }
    }

    /// The tags a new server or load balancer carries: its owner's, [`MANAGED_TAG`] and
    /// its cluster's.
    pub fn tags(&self) -> Vec<String> {
        let mut tags = vec![self.tag(), MANAGED_TAG.to_owned()];
        tags.extend(self.cluster.as_ref().map(ClusterId::tag));
        tags
    }

    /// `verda-<namespace>-<name>`: the name of this owner's load balancer.
    pub fn load_balancer_name(&self) -> String {
        format!(
            "{}{}",
            load_balancer_name_prefix(&self.namespace),
            self.name
        )
    }

    /// The tags a new load balancer carries: [`Owner::tags`] and its owner's namespace,
    /// by which a shard tells the load balancers of its namespaces.
    pub fn load_balancer_tags(&self) -> Vec<String> {
        let mut tags = self.tags();
        tags.push(format!("{NAMESPACE_TAG_PREFIX}{}", self.namespace));
        tags
    }

    /// `tags` (a server's own) plus this owner's [`Owner::tags`], each once: what an
    /// imported server carries.
    pub fn tags_added_to(&self, tags: &[String]) -> Vec<String> {
        with_added(tags, self.tags())
    }

    /// `tags` (a load balancer's own) plus [`Owner::load_balancer_tags`], each once.
    pub fn load_balancer_tags_added_to(&self, tags: &[String]) -> Vec<String> {
        with_added(tags, self.load_balancer_tags())
    }

    /// Server metadata recording this owner (merge it into the user's metadata).
    pub fn server_metadata(&self) -> BTreeMap<String, String> {
        let records = self.metadata_records().into_iter();
        records
            .filter_map(|(key, value)| Some((key.to_owned(), value?.to_owned())))
            .collect()
    }

    /// The keys of [`Owner::server_metadata`], each with its value (none for a cluster
    /// not set), borrowed.
    pub fn metadata_records(&self) -> [(&'static str, Option<&str>); 4] {
        [
            (META_UID, Some(self.uid.as_str())),
            (META_NAMESPACE, Some(self.namespace.as_str())),
            (META_NAME, Some(self.name.as_str())),
            (META_CLUSTER, self.cluster.as_ref().map(ClusterId::as_str)),
        ]
    }

    /// The metadata of this owner's data volume `volume` (of replica `index` when the
    /// owner is a group).
    pub fn volume_metadata(&self, volume: &str, index: Option<u32>) -> BTreeMap<String, String> {
        let mut metadata = self.volume_filter(index);
        metadata.insert(META_NAMESPACE.to_owned(), self.namespace.clone());
        metadata.insert(META_NAME.to_owned(), self.name.clone());
        metadata.extend(
            self.cluster
                .as_ref()
                .map(|c| (META_CLUSTER.to_owned(), c.as_str().to_owned())),
        );
        metadata.insert(META_VOLUME.to_owned(), volume.to_owned());
        metadata
    }

    /// The metadata filter that finds this owner's data volumes (of replica `index`).
    pub fn volume_filter(&self, index: Option<u32>) -> BTreeMap<String, String> {
        let mut filter = BTreeMap::from([(META_UID.to_owned(), self.uid.clone())]);
        if let Some(i) = index {
            filter.insert(META_INDEX.to_owned(), i.to_string());
        }
        filter
    }

    /// The name of this owner's server group; see [`is_server_group_of`].
    pub fn server_group_name(&self) -> String {
        let suffix = format!("-{}", self.uid);
        let mark = match &self.cluster {
            Some(cluster) => format!("{}.", cluster.mark()),
            None => String::new(),
        };
        let mut head = format!("verda-{mark}{}-{}", self.namespace, self.name);
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
            cluster: metadata
                .get(META_CLUSTER)
                .and_then(|c| ClusterId::new(c.clone()).ok()),
        })
    }
}

/// The namespace of the owner recorded in `metadata`, if any.
pub fn namespace_in(metadata: &BTreeMap<String, String>) -> Option<&str> {
    metadata.get(META_NAMESPACE).map(String::as_str)
}

/// A data volume's record: the owner, the name in the spec, the replica index.
pub fn volume_record(metadata: &BTreeMap<String, String>) -> Option<(Owner, String, Option<u32>)> {
    let owner = Owner::from_metadata(metadata)?;
    let name = metadata.get(META_VOLUME)?.clone();
    let index = metadata.get(META_INDEX).and_then(|i| i.parse().ok());
    Some((owner, name, index))
}

/// `verda-uid-<uid>`: the tag (Nova, Octavia) or description (floating IP) of an owner.
pub fn owner_tag(uid: &str) -> String {
    format!("{TAG_PREFIX}{uid}")
}

/// The owner UID recorded in a list of tags, if any.
pub fn uid_from_tags(tags: &[String]) -> Option<&str> {
    tags.iter().find_map(|t| t.strip_prefix(TAG_PREFIX))
}

/// The owner UID at the end of a server group name the operator made, if any.
pub fn server_group_uid(group_name: &str) -> Option<&str> {
    let (head, uid) = group_name.split_at_checked(group_name.len().checked_sub(36)?)?;
    (group_name.starts_with("verda-") && head.ends_with('-') && uuid::Uuid::parse_str(uid).is_ok())
        .then_some(uid)
}

fn with_added(tags: &[String], added: Vec<String>) -> Vec<String> {
    let mut all = tags.to_vec();
    all.extend(added.into_iter().filter(|t| !tags.contains(t)));
    all
}

/// `verda-<namespace>-`: how the names of a namespace's load balancers begin (also
/// those of another namespace when the name goes on with `-`: `team`'s and `team-a`'s).
pub fn load_balancer_name_prefix(namespace: &str) -> String {
    format!("verda-{namespace}-")
}

/// The owner's namespace recorded in a load balancer's tags, if any (one made by an
/// earlier release has none).
pub fn namespace_from_tags(tags: &[String]) -> Option<&str> {
    tags.iter()
        .find_map(|t| t.strip_prefix(NAMESPACE_TAG_PREFIX))
}

/// Everything the operator wrote to record ownership, taken out of a tag list: what a
/// detached resource keeps.
pub fn without_ownership(tags: &[String]) -> Vec<String> {
    tags.iter()
        .filter(|t| {
            ![TAG_PREFIX, CLUSTER_TAG_PREFIX, NAMESPACE_TAG_PREFIX]
                .iter()
                .any(|prefix| t.starts_with(prefix))
                && *t != MANAGED_TAG
        })
        .cloned()
        .collect()
}

/// Metadata (a server's or a volume's) without the operator's keys: what a detached
/// resource keeps.
pub fn without_owner_metadata(metadata: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    metadata
        .iter()
        .filter(|(k, _)| !k.starts_with(META_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Whether a tag list records an owner other than `uid`.
pub fn owned_by_another(tags: &[String], uid: &str) -> Option<String> {
    uid_from_tags(tags).filter(|u| *u != uid).map(str::to_owned)
}

/// Whether a server group name belongs to the owner with this UID.
pub fn is_server_group_of(group_name: &str, uid: &str) -> bool {
    server_group_uid(group_name) == Some(uid)
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
    fn cluster_is_recorded_in_tags_metadata_and_group_names() {
        let cluster = ClusterId::new("3d0f6c1e-5b7a-4c2e-9f00-123456789abc").expect("valid");
        let o = owner().in_cluster(&cluster);
        assert!(cluster.tag().len() <= 60);
        assert!(cluster.in_tags(&o.tags()));
        assert!(cluster.in_metadata(&o.server_metadata()));
        assert_eq!(Owner::from_metadata(&o.server_metadata()), Some(o.clone()));
        let name = o.server_group_name();
        assert!(cluster.marks_server_group(&name), "{name}");
        assert!(is_server_group_of(&name, &o.uid));
        assert_eq!(server_group_uid(&name), Some(o.uid.as_str()));
        let other = ClusterId::new("other").expect("valid");
        assert!(!other.in_tags(&o.tags()) && !other.marks_server_group(&name));
        // A name made before clusters were recorded carries no mark.
        assert!(!cluster.marks_server_group(&owner().server_group_name()));
        assert_eq!(
            without_ownership(&[o.tags(), vec!["team:web".into()]].concat()),
            vec!["team:web".to_owned()]
        );
        assert!(ClusterId::new("a/b").is_err() && ClusterId::new("x".repeat(47)).is_err());
    }

    #[test]
    fn a_replicas_volume_records_the_group_and_the_index_and_is_found_by_them() {
        let cluster = ClusterId::new("c1").expect("valid");
        let group = owner().in_cluster(&cluster);
        let md = group.volume_metadata("data", Some(2));
        assert!(
            group
                .volume_filter(Some(2))
                .iter()
                .all(|(k, v)| md.get(k) == Some(v))
        );
        assert!(
            group
                .volume_filter(Some(1))
                .iter()
                .any(|(k, v)| md.get(k) != Some(v))
        );
        assert_eq!(
            volume_record(&md),
            Some((group, "data".to_owned(), Some(2)))
        );
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-_:. ".contains(c);
        assert!(md.keys().all(|k| k.chars().all(allowed)));
    }

    #[test]
    fn a_load_balancer_records_its_namespace_where_its_name_cannot() {
        // `verda-team-a-web` could be `team`'s `a-web` as well as `team-a`'s `web`.
        let o = Owner::new(owner().uid, "team-a", "web");
        let tags = o.load_balancer_tags();
        assert_eq!(namespace_from_tags(&tags), Some("team-a"));
        assert!(o.tags().iter().all(|t| tags.contains(t)), "{tags:?}");
        assert_eq!(
            namespace_from_tags(&o.tags()),
            None,
            "servers record it in metadata"
        );
        let longest = Owner::new(owner().uid, "n".repeat(63), "web");
        assert!(longest.load_balancer_tags().iter().all(|t| t.len() <= 255));
        // An imported load balancer gains the tag, keeping the user's own.
        let older = [o.tags(), vec!["team:web".into()]].concat();
        let added = o.load_balancer_tags_added_to(&older);
        assert_eq!(namespace_from_tags(&added), Some("team-a"));
        assert_eq!(added.len(), older.len() + 1);
        assert_eq!(without_ownership(&added), vec!["team:web".to_owned()]);
    }

    #[test]
    fn server_group_is_found_by_uid_suffix_only() {
        let o = owner();
        assert!(is_server_group_of(&o.server_group_name(), &o.uid));
        assert!(!is_server_group_of("verda-default-web-other", &o.uid));
        assert!(!is_server_group_of(&format!("manual-{}", o.uid), &o.uid));
    }
}
