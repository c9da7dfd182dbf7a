use std::collections::{BTreeMap, HashSet};

use serde_json::json;

use super::*;
use crate::cloud::ids::ServerId;
use crate::cloud::model::compute::ServerStatus;
use crate::cloud::owner::port_record;

const GONE: &str = "0b6b6f0c-0000-4000-8000-00000000dead";
const LIVE: &str = "0b6b6f0c-0000-4000-8000-0000000011fe";

fn cluster() -> ClusterId {
    ClusterId::new("cluster-a").expect("valid")
}

fn owner(uid: &str, cluster: &ClusterId) -> Owner {
    Owner::new(uid, "team", "web").in_cluster(cluster)
}

fn server(id: &str, owner: &Owner) -> Server {
    Server {
        id: ServerId::new(id),
        name: owner.name.clone(),
        status: ServerStatus::Active,
        task_state: None,
        addresses: vec![],
        metadata: owner.server_metadata(),
        tags: owner.tags(),
        description: None,
        flavor: None,
        image: None,
        fault: None,
        availability_zone: None,
        volumes_attached: vec![],
    }
}

fn lb(id: &str, owner: &Owner) -> LoadBalancer {
    serde_json::from_value(json!({
        "id": id, "name": "verda-team-web", "provisioning_status": "ACTIVE",
        "operating_status": "ONLINE", "tags": owner.load_balancer_tags(),
    }))
    .expect("a load balancer")
}

fn group(id: &str, owner: &Owner, members: &[&str]) -> ServerGroup {
    serde_json::from_value(json!({
        "id": id, "name": owner.server_group_name(), "policy": "anti-affinity",
        "members": members,
    }))
    .expect("a server group")
}

fn fip(id: &str, uid: &str) -> FloatingIp {
    serde_json::from_value(json!({
        "id": id, "floating_ip_address": "203.0.113.7", "floating_network_id": "ext",
        "description": format!("verda-uid-{uid}"),
    }))
    .expect("a floating IP")
}

fn volume(id: &str, owner: &Owner, index: Option<u32>) -> crate::cloud::model::volume::Volume {
    crate::cloud::model::volume::Volume {
        id: id.into(),
        name: Some(format!("web-{id}")),
        status: crate::cloud::model::volume::VolumeState::Available,
        size: 1,
        volume_type: None,
        metadata: owner.volume_metadata("data", index),
        attachments: vec![],
        created_at: None,
    }
}

fn port(id: &str, description: &str) -> Port {
    Port {
        id: id.into(),
        name: id.to_owned(),
        network_id: "net".into(),
        device_id: String::new(),
        device_owner: String::new(),
        fixed_ips: Vec::new(),
        status: "DOWN".into(),
        description: description.to_owned(),
        mac_address: String::new(),
        allowed_address_pairs: Vec::new(),
        security_groups: Vec::new(),
    }
}

/// A Barbican secret of `uid`'s LoadBalancer in `cluster`.
fn certificate(href: &str, cluster: &ClusterId, uid: &str) -> StoredSecret {
    StoredSecret {
        secret_ref: href.to_owned(),
        name: Some(format!(
            "{}{uid}-0123456789abcdef",
            cluster.certificate_prefix()
        )),
    }
}

fn record_set(id: &str, description: Option<&str>) -> RecordSet {
    RecordSet {
        id: id.into(),
        zone_id: "z".into(),
        name: "www.example.test.".to_owned(),
        type_: "A".to_owned(),
        records: vec!["10.0.0.5".to_owned()],
        ttl: None,
        description: description.map(str::to_owned),
        status: "ACTIVE".to_owned(),
    }
}

fn live() -> HashSet<String> {
    HashSet::from([LIVE.to_owned()])
}

#[test]
fn only_this_clusters_resources_of_gone_owners_are_orphans() {
    let ours = cluster();
    let theirs = ClusterId::new("cluster-b").expect("valid");
    let listing = Listing {
        servers: vec![
            server("s-gone", &owner(GONE, &ours)),
            server("s-live", &owner(LIVE, &ours)),
            server("s-other-cluster", &owner(GONE, &theirs)),
            // Created before clusters were recorded: names no cluster, never listed.
            server("s-unmarked", &Owner::new(GONE, "team", "web")),
        ],
        server_groups: vec![
            group("g-gone", &owner(GONE, &ours), &["s-gone"]),
            group("g-other", &owner(GONE, &theirs), &[]),
        ],
        load_balancers: vec![
            lb("lb-gone", &owner(GONE, &ours)),
            lb("lb-theirs", &owner(LIVE, &theirs)),
        ],
        floating_ips: vec![
            fip("f-gone", GONE),
            fip("f-unknown", "0b6b6f0c-0000-4000-8000-00000000beef"),
        ],
        volumes: vec![
            // A retained volume of a live group's scaled-down replica is the group's.
            volume("v-live-group", &owner(LIVE, &ours), Some(3)),
            volume("v-gone", &owner(GONE, &ours), None),
            volume("v-theirs", &owner(GONE, &theirs), None),
        ],
        ports: vec![
            // A retained port of a live group's scaled-down replica is the group's.
            port("p-live-group", &port_record(LIVE, Some(3), &ours)),
            port("p-gone-group", &port_record(GONE, Some(2), &ours)),
            port("p-theirs", &port_record(GONE, None, &theirs)),
            port("p-users", ""),
        ],
        certificates: vec![
            certificate("c-gone", &ours, GONE),
            certificate("c-live", &ours, LIVE),
            certificate("c-theirs", &theirs, GONE),
        ],
        record_sets: vec![
            record_set("r-gone", Some(&port_record(GONE, None, &ours))),
            // A live group's replica name is the group's.
            record_set("r-live-replica", Some(&port_record(LIVE, Some(1), &ours))),
            record_set("r-theirs", Some(&port_record(GONE, None, &theirs))),
            record_set("r-by-hand", Some("made by hand")),
            record_set("r-soa", None),
        ],
        zones: vec![
            zone("zone-gone", Some(&port_record(GONE, None, &ours))),
            zone("zone-live", Some(&port_record(LIVE, None, &ours))),
            zone("zone-theirs", Some(&port_record(GONE, None, &theirs))),
            zone("zone-by-hand", Some("made by hand")),
            zone("zone-bare", None),
        ],
    };
    let found = classify(&listing, &ours, &live());
    let ids: Vec<(&str, &str)> = found
        .iter()
        .map(|o| (o.kind.as_str(), o.id.as_str()))
        .collect();
    assert_eq!(
        ids,
        [
            ("server", "s-gone"),
            ("server-group", "g-gone"),
            ("load-balancer", "lb-gone"),
            ("volume", "v-gone"),
            ("port", "p-gone-group"),
            ("certificate", "c-gone"),
            ("dns-record-set", "z/r-gone"),
            ("dns-zone", "zone-gone"),
            ("floating-ip", "f-gone"),
        ]
    );
    assert_eq!(found[0].owner.as_deref(), Some("team/web"));
    assert_eq!(
        found[2].owner.as_deref(),
        Some("team/web"),
        "from its namespace tag"
    );
    assert!(found.iter().all(|o| o.owner_uid == GONE));
}

fn zone(id: &str, description: Option<&str>) -> crate::cloud::model::dns::DnsZone {
    crate::cloud::model::dns::DnsZone {
        id: id.into(),
        name: format!("{id}.test."),
        description: description.map(str::to_owned),
        ..Default::default()
    }
}

#[test]
fn a_server_group_still_holding_a_kept_server_is_not_an_orphan() {
    let ours = cluster();
    let detached = Server {
        metadata: BTreeMap::new(),
        tags: vec![],
        ..server("s-detached", &owner(GONE, &ours))
    };
    let listing = Listing {
        servers: vec![detached],
        server_groups: vec![group("g", &owner(GONE, &ours), &["s-detached"])],
        ..Listing::default()
    };
    assert!(classify(&listing, &ours, &live()).is_empty());
}
