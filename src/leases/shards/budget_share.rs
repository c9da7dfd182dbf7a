//! A project's request budget kept when several shards act in it. Each member publishes,
//! on its member Lease, the projects its namespaces act in (as fingerprints: a Lease in
//! the operator's namespace is no place for the list of a cluster's tenants), and each
//! divides a project's budget by the live members publishing it, itself included.
//!
//! A member learns of another's project at that member's next renewal (a third of the
//! lease duration): a namespace newly taken into a project another member acts in is
//! spent from at the old share until then. A member that died keeps its share counted
//! until it counts as dead, as its namespaces wait for it. One acting in more projects
//! than an annotation can name says "every project" instead.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;

use crate::fnv::fnv1a64;

/// The member Lease's annotation naming the projects its replica acts in.
pub const ANNOTATION: &str = "verda.linecorp.com/projects";

/// The most projects a member names: 17 bytes each, 136 KB of the 256 KB the API
/// server allows an object's annotations in all.
const MOST_NAMED: usize = 8_000;

/// Published instead of a list by a member acting in more projects than it can name:
/// every other member then counts it in every project it acts in, and spends less, never
/// more, than its part.
const EVERY_PROJECT: &str = "*";

/// A project as members publish it.
fn fingerprint(project: &str) -> String {
    format!("{:016x}", fnv1a64(project.as_bytes()))
}

/// The annotation's value for `projects`.
pub fn published(projects: &BTreeSet<String>) -> String {
    if projects.len() > MOST_NAMED {
        return EVERY_PROJECT.to_owned();
    }
    let prints: BTreeSet<String> = projects.iter().map(|p| fingerprint(p)).collect();
    prints.into_iter().collect::<Vec<_>>().join(",")
}

/// For each of `ours` that other members act in too, how many members spend its
/// budget: this one and each of `others` that publishes it.
pub fn sharers<'a>(
    ours: &BTreeSet<String>,
    others: impl IntoIterator<Item = &'a Lease>,
) -> HashMap<String, u32> {
    let theirs: Vec<BTreeSet<&str>> = others
        .into_iter()
        .map(|lease| {
            let value = lease.annotations().get(ANNOTATION);
            value.map(|v| v.split(',').collect()).unwrap_or_default()
        })
        .collect();
    ours.iter()
        .filter_map(|project| {
            let print = fingerprint(project);
            let also = theirs
                .iter()
                .filter(|p| p.contains(print.as_str()) || p.contains(EVERY_PROJECT))
                .count();
            let also = u32::try_from(also).unwrap_or(u32::MAX);
            (also > 0).then(|| (project.clone(), also.saturating_add(1)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;

    use super::*;

    fn member(projects: &[&str]) -> Lease {
        let ours: BTreeSet<String> = projects.iter().map(|p| (*p).to_owned()).collect();
        Lease {
            metadata: ObjectMeta {
                annotations: Some([(ANNOTATION.to_owned(), published(&ours))].into()),
                ..ObjectMeta::default()
            },
            spec: None,
        }
    }

    fn set(projects: &[&str]) -> BTreeSet<String> {
        projects.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn a_project_is_shared_by_the_members_that_publish_it_and_no_other() {
        let others = [member(&["p1", "p2"]), member(&["p1"]), member(&[])];
        let unannotated = Lease::default();
        let shares = sharers(
            &set(&["p1", "p2", "p3"]),
            others.iter().chain([&unannotated]),
        );
        assert_eq!(shares.get("p1"), Some(&3), "two others and this one");
        assert_eq!(shares.get("p2"), Some(&2));
        assert_eq!(shares.get("p3"), None, "spent by this one alone");
        assert_eq!(shares.len(), 2);
    }

    #[test]
    fn projects_are_published_as_fingerprints_only() {
        let value = published(&set(&["b2a1c3d4e5f60718293a4b5c6d7e8f90", "other"]));
        assert!(!value.contains("b2a1c3d4e5f6"), "{value}");
        assert_eq!(value.split(',').count(), 2);
        assert_eq!(published(&set(&[])), "");
        assert!(sharers(&set(&["p"]), [&member(&[])]).is_empty());
    }

    #[test]
    fn a_member_in_more_projects_than_it_can_name_is_counted_in_every_one() {
        let many: BTreeSet<String> = (0..=MOST_NAMED).map(|i| format!("project-{i}")).collect();
        let value = published(&many);
        assert_eq!(value, EVERY_PROJECT);
        let limit = published(&many.iter().skip(1).cloned().collect());
        // Room left of the API server's 256 KB for every other annotation.
        assert!(limit.len() < 192 * 1024, "{} bytes", limit.len());
        let everywhere = Lease {
            metadata: ObjectMeta {
                annotations: Some([(ANNOTATION.to_owned(), value)].into()),
                ..ObjectMeta::default()
            },
            spec: None,
        };
        let shares = sharers(&set(&["p1", "p2"]), [&everywhere, &member(&["p1"])]);
        assert_eq!(shares.get("p1"), Some(&3));
        assert_eq!(shares.get("p2"), Some(&2));
    }
}
