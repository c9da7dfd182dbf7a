//! Placement of a new server on one of the simulated hypervisor hosts, enforcing the
//! server group policy like Nova's filters and weighers: hard (anti-)affinity filters,
//! soft policies only weigh. Capacity per host is unlimited (no RAM/CPU accounting).

use crate::model::ServerGroup;
use crate::world::World;

pub(crate) const NO_VALID_HOST: &str =
    "No valid host was found. There are not enough hosts available.";

fn host_name(i: usize) -> String {
    format!("compute-{i}")
}

/// Picks a host (in `zone`, when one is asked for, and in no disabled zone), or `None`
/// when the group policy leaves no valid host.
pub(super) fn place(w: &World, group: Option<&ServerGroup>, zone: Option<&str>) -> Option<String> {
    let hosts: Vec<String> = (0..w.hosts)
        .map(host_name)
        .filter(|h| {
            let at = w.zone_of_host(h);
            zone.is_none_or(|z| at.as_deref() == Some(z))
                && at.is_none_or(|z| !w.disabled_zones.contains(&z) && !w.down_zones.contains(&z))
        })
        .collect();
    let load = |h: &str| {
        w.servers
            .values()
            .filter(|s| s.host.as_deref() == Some(h))
            .count()
    };
    let in_group = |h: &str| {
        group.map_or(0, |g| {
            g.members
                .iter()
                .filter(|m| {
                    w.servers
                        .get(*m)
                        .is_some_and(|s| s.host.as_deref() == Some(h))
                })
                .count()
        })
    };
    let least_loaded =
        |candidates: Vec<&String>| candidates.into_iter().min_by_key(|h| load(h)).cloned();
    let Some(g) = group else {
        return least_loaded(hosts.iter().collect());
    };
    match g.policy.as_str() {
        "anti-affinity" => {
            let max = g.max_server_per_host.unwrap_or(1) as usize;
            least_loaded(hosts.iter().filter(|h| in_group(h) < max).collect())
        }
        "soft-anti-affinity" => hosts.iter().min_by_key(|h| (in_group(h), load(h))).cloned(),
        policy => {
            let used: Vec<&String> = hosts.iter().filter(|h| in_group(h) > 0).collect();
            match (policy, used.is_empty()) {
                (_, true) => least_loaded(hosts.iter().collect()),
                ("affinity", false) if used.len() > 1 => None,
                _ => used.first().map(|h| (*h).clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SimConfig;
    use crate::model::{Server, Status};

    fn world_with(hosts: usize) -> World {
        crate::seed::world(
            &SimConfig {
                hosts,
                ..SimConfig::fast()
            },
            crate::seed::PROJECT_ID,
        )
    }

    fn add_member(w: &mut World, g: &mut ServerGroup, host: Option<String>) {
        let id = w.uuid();
        let now = chrono::Utc::now();
        let server = Server {
            id: id.clone(),
            seq: 0,
            name: id.clone(),
            status: Status::Active,
            until: None,
            deleting: false,
            doomed: None,
            created: now,
            updated: now,
            launched: None,
            flavor_id: "10".into(),
            resize_to: None,
            image_id: String::new(),
            nics: vec![],
            host,
            group: Some(g.id.clone()),
            metadata: Default::default(),
            tags: Default::default(),
            description: None,
            key_name: None,
            user_data: None,
            security_groups: vec![],
            availability_zone: None,
            fault: None,
            scheduler_hints: serde_json::json!({}),
            boot_from_volume: false,
        };
        w.servers.insert(id.clone(), server);
        g.members.push(id);
    }

    fn group(policy: &str) -> ServerGroup {
        ServerGroup {
            id: "g".into(),
            seq: 0,
            name: "g".into(),
            policy: policy.into(),
            max_server_per_host: None,
            members: vec![],
        }
    }

    #[test]
    fn hard_anti_affinity_fails_once_every_host_is_used() {
        let mut w = world_with(2);
        let mut g = group("anti-affinity");
        for _ in 0..2 {
            let host = place(&w, Some(&g), None);
            assert!(host.is_some());
            add_member(&mut w, &mut g, host);
        }
        assert_eq!(place(&w, Some(&g), None), None);
    }

    #[test]
    fn soft_anti_affinity_spreads_then_doubles_up() {
        let mut w = world_with(2);
        let mut g = group("soft-anti-affinity");
        let mut hosts = Vec::new();
        for _ in 0..3 {
            let host = place(&w, Some(&g), None);
            hosts.push(host.clone());
            add_member(&mut w, &mut g, host);
        }
        assert_ne!(hosts[0], hosts[1]);
        assert!(hosts[2].is_some());
    }

    #[test]
    fn affinity_keeps_members_on_one_host() {
        let mut w = world_with(3);
        let mut g = group("affinity");
        let first = place(&w, Some(&g), None);
        add_member(&mut w, &mut g, first.clone());
        assert_eq!(place(&w, Some(&g), None), first);
    }
}
