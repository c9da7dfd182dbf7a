//! Seed data: what a fresh simulated cloud contains, so the published manifests and
//! the default operator configuration (docs/src/configuration.md) work unchanged. IDs have the shapes
//! a real cloud gives them (32-hex project IDs, UUIDs elsewhere).

use std::net::Ipv4Addr;

use chrono::{TimeZone, Utc};

use super::config::{SimConfig, SimCredentials};
use super::model::{Flavor, Image, Network, SecurityGroup, Subnet};
use super::world::World;
use super::world::octavia::LbFlavor;

pub(crate) const PROJECT_ID: &str = "4fe49c509df94ac8bb7350b83b09a91e";
/// `project`'s world as a fresh simulator starts it. Each project draws its IDs from
/// a sequence of its own: IDs are unique across projects, as in a cloud.
pub(crate) fn world(config: &SimConfig, project: &str) -> World {
    let rng_seed = match project {
        PROJECT_ID => config.seed,
        TEAM_PROJECT_ID => config.seed ^ 0x9e37_79b9_7f4a_7c15,
        // A generated tenant's: FNV-1a of its ID.
        _ => project
            .bytes()
            .fold(config.seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            }),
    };
    let mut w = World::empty(config, project, rng_seed);
    seed_project(&mut w, project);
    w
}

pub(crate) const ADMIN_PROJECT_ID: &str = "af7593a512c04da1afae8bd2b0af25ac";
pub(crate) const USER_ID: &str = "ea9196a4fbbc44919a7493698ff95c7b";
pub(crate) const USER: &str = "demo";
pub(crate) const PASSWORD: &str = "verda-sim-password";
pub(crate) const PROJECT: &str = "demo";
pub(crate) const DOMAIN_ID: &str = "default";
pub(crate) const DOMAIN: &str = "Default";
pub(crate) const APP_CRED_ID: &str = "6d1e3a9c2b4f4d7e8a0b1c2d3e4f5a6b";
pub(crate) const APP_CRED_NAME: &str = "verda-operator";
pub(crate) const APP_CRED_SECRET: &str = "verda-sim-app-secret";
pub(crate) const REGIONS: [&str; 2] = ["RegionOne", "tokyo1"];

pub(crate) const PRIVATE_NET: &str = "89908bff-e0fe-45be-b92d-5828f5ddc763";
pub(crate) const PRIVATE_SUBNET: &str = "3d5443ce-8418-4529-a819-73f717122551";
pub(crate) const PUBLIC_NET: &str = "e2c15e32-2d6a-4d72-bbbe-819de77cd103";
pub(crate) const PUBLIC_SUBNET: &str = "f58bb748-7770-49b2-a614-6aa5c3b7b350";
pub(crate) const CENTOS79: &str = "244965c2-7e98-469d-b7cc-fe423698200a";

/// The second project, for shared-cluster tests: its own user, application
/// credential, servers and networks (of the same names, other IDs).
pub(crate) const TEAM_PROJECT_ID: &str = "7c1f0a3e5b9d4e2f8a6c4b2d0e8f6a4c";
const TEAM_PROJECT: &str = "team-b";
const TEAM_USER_ID: &str = "b3d5f7a9c1e34b6d8f0a2c4e6b8d0f2a";
const TEAM_USER: &str = "team-b";
const TEAM_PASSWORD: &str = "verda-sim-team-b-password";
const TEAM_APP_CRED_ID: &str = "e4f6a8b0c2d44e6f8a0b2c4d6e8f0a2b";
const TEAM_APP_CRED_NAME: &str = "verda-team-b";
const TEAM_APP_CRED_SECRET: &str = "verda-sim-team-b-app-secret";
const TEAM_PRIVATE_NET: &str = "5e0c2a8f-7b1d-4c3e-9f5a-6b7c8d9e0f12";
const TEAM_PRIVATE_SUBNET: &str = "6f1d3b9a-8c2e-4d4f-8a6b-7c8d9e0f1a23";

/// Every identity the simulator knows, with `tenants` generated ones after the two
/// seeded: the first is the default one.
pub(crate) fn identities(tenants: usize) -> Vec<SimCredentials> {
    let identity =
        |project: (&str, &str), user: (&str, &str, &str), app: (&str, &str, &str)| SimCredentials {
            project_id: project.0.into(),
            project_name: project.1.into(),
            user_id: user.0.into(),
            username: user.1.into(),
            password: user.2.into(),
            user_domain: DOMAIN.into(),
            project_domain: DOMAIN.into(),
            application_credential_id: app.0.into(),
            application_credential_name: app.1.into(),
            application_credential_secret: app.2.into(),
        };
    let mut all = vec![
        identity(
            (PROJECT_ID, PROJECT),
            (USER_ID, USER, PASSWORD),
            (APP_CRED_ID, APP_CRED_NAME, APP_CRED_SECRET),
        ),
        identity(
            (TEAM_PROJECT_ID, TEAM_PROJECT),
            (TEAM_USER_ID, TEAM_USER, TEAM_PASSWORD),
            (TEAM_APP_CRED_ID, TEAM_APP_CRED_NAME, TEAM_APP_CRED_SECRET),
        ),
    ];
    all.extend((1..=tenants).map(|i| {
        let name = format!("tenant-{i}");
        identity(
            (&tenant_id(TENANT_PROJECT, i), &name),
            (
                &tenant_id(TENANT_USER, i),
                &name,
                &format!("verda-sim-{name}-password"),
            ),
            (
                &tenant_id(TENANT_APP_CRED, i),
                &format!("verda-{name}"),
                &format!("verda-sim-{name}-app-secret"),
            ),
        )
    }));
    all
}

/// Prefixes of a generated tenant's IDs: 32 hex digits, as Keystone's.
const TENANT_PROJECT: u32 = 0x7e4a_0001;
const TENANT_USER: u32 = 0x7e4a_0002;
const TENANT_APP_CRED: u32 = 0x7e4a_0003;

fn tenant_id(kind: u32, i: usize) -> String {
    format!("{kind:08x}{i:024x}")
}

fn flavor(id: &str, name: &str, vcpus: u64, ram: u64, disk: u64) -> Flavor {
    Flavor {
        id: id.into(),
        name: name.into(),
        ram,
        disk,
        vcpus,
    }
}

fn image(id: &str, name: &str, min_disk: u64) -> Image {
    let created = Utc
        .with_ymd_and_hms(2026, 11, 21, 6, 14, 24)
        .single()
        .unwrap_or_default();
    Image {
        id: id.into(),
        name: name.into(),
        size: 1024,
        min_disk,
        created,
    }
}

/// A project's ID (32 hex digits, unique) in the form of a UUID, its first two digits
/// replaced by `tweak`: a seeded resource's ID, unique across projects.
fn project_uuid(project: &str, tweak: &str) -> String {
    let p = project;
    format!(
        "{tweak}{}-{}-{}-{}-{}",
        &p[2..8],
        &p[8..12],
        &p[12..16],
        &p[16..20],
        &p[20..32]
    )
}

/// The world of `project`: the same flavors, images and names in every project; the
/// private network and subnet have other IDs outside the default project, so an ID
/// carried from one project to another is refused as it would be in a real cloud.
pub(crate) fn seed_project(w: &mut World, project: &str) {
    seed(w);
    w.security_groups = security_groups(project);
    if project == PROJECT_ID {
        return;
    }
    let (net_id, subnet_id) = if project == TEAM_PROJECT_ID {
        (TEAM_PRIVATE_NET.to_owned(), TEAM_PRIVATE_SUBNET.to_owned())
    } else {
        // A generated tenant's: its project ID (unique) in the form of a UUID.
        (project_uuid(project, "5e"), project_uuid(project, "6f"))
    };
    for net in w.networks.iter_mut().filter(|n| n.id == PRIVATE_NET) {
        net.id = net_id.clone();
        net.subnets = vec![subnet_id.clone()];
    }
    for subnet in w.subnets.iter_mut().filter(|s| s.id == PRIVATE_SUBNET) {
        subnet.id = subnet_id.clone();
        subnet.network_id = net_id.clone();
    }
}

fn seed(w: &mut World) {
    w.flavors = vec![
        flavor("1", "m1.tiny", 1, 512, 1),
        flavor("2", "m1.small", 1, 2048, 20),
        flavor("10", "n3-1vcpu-2gb", 1, 2048, 20),
        flavor("11", "n3-2vcpu-4gb", 2, 4096, 40),
        flavor("12", "n3-4vcpu-8gb", 4, 8192, 80),
        flavor("90", "dup-flavor", 1, 1024, 10),
        flavor("91", "dup-flavor", 2, 2048, 10),
    ];
    w.images = vec![
        image(CENTOS79, "centos79", 10),
        image("5b0f9c61-3f7e-4f0e-9a61-0d3c8e0b7a11", "ubuntu2204", 0),
        image("a1f3c2d4-1111-4c2b-8d2e-3f4a5b6c7d01", "dup-image", 0),
        image("a1f3c2d4-2222-4c2b-8d2e-3f4a5b6c7d02", "dup-image", 0),
    ];
    // Cinder's default type first, as a fresh Cinder has it, and one more to choose.
    w.cinder.types = vec![
        (
            "0a45ad66-5a6f-4ff1-aa4b-a032d799934f".into(),
            "__DEFAULT__".into(),
        ),
        ("6c2d8e1f-3a4b-4c5d-9e6f-7a8b9c0d1e2f".into(), "ssd".into()),
    ];
    w.keypairs = vec!["verda-key".into()];
    seed_networks(w);
    w.octavia.flavors = vec![
        LbFlavor {
            id: "1b1c9d5e-6a2f-4c3b-9e8d-7f6a5b4c3d21".into(),
            name: "generic".into(),
            description: "single amphora".into(),
        },
        LbFlavor {
            id: "2c2d0e6f-7b3a-4d4c-8f9e-8a7b6c5d4e32".into(),
            name: "ha".into(),
            description: "active/standby".into(),
        },
    ];
}

fn seed_networks(w: &mut World) {
    let created = Utc
        .with_ymd_and_hms(2026, 11, 21, 6, 9, 52)
        .single()
        .unwrap_or_default();
    let net = |id: &str, name: &str, external: bool, shared: bool, subnets: Vec<String>| Network {
        id: id.into(),
        name: name.into(),
        description: String::new(),
        project_id: ADMIN_PROJECT_ID.into(),
        external,
        shared,
        subnets,
        revision: 2,
        created,
        updated: created,
    };
    w.networks = vec![
        net(
            PRIVATE_NET,
            "private",
            false,
            true,
            vec![PRIVATE_SUBNET.into()],
        ),
        net(
            PUBLIC_NET,
            "public",
            true,
            false,
            vec![PUBLIC_SUBNET.into()],
        ),
        net(
            "c7d8e9f0-1a2b-4c3d-8e4f-5a6b7c8d9e01",
            "dup-network",
            false,
            true,
            vec![],
        ),
        net(
            "c7d8e9f0-1a2b-4c3d-8e4f-5a6b7c8d9e02",
            "dup-network",
            false,
            true,
            vec![],
        ),
    ];
    w.subnets = subnets(created);
}

fn subnets(created: chrono::DateTime<Utc>) -> Vec<Subnet> {
    vec![
        Subnet {
            id: PRIVATE_SUBNET.into(),
            name: "private-subnet".into(),
            project_id: ADMIN_PROJECT_ID.into(),
            network_id: PRIVATE_NET.into(),
            cidr: "10.0.0.0/16".into(),
            gateway: Ipv4Addr::new(10, 0, 0, 1),
            pool_start: Ipv4Addr::new(10, 0, 0, 2),
            pool_end: Ipv4Addr::new(10, 0, 255, 254),
            dhcp: true,
            created,
        },
        Subnet {
            id: PUBLIC_SUBNET.into(),
            name: "public-subnet".into(),
            project_id: ADMIN_PROJECT_ID.into(),
            network_id: PUBLIC_NET.into(),
            cidr: "203.0.113.0/24".into(),
            gateway: Ipv4Addr::new(203, 0, 113, 1),
            pool_start: Ipv4Addr::new(203, 0, 113, 10),
            pool_end: Ipv4Addr::new(203, 0, 113, 250),
            dhcp: false,
            created,
        },
    ]
}

/// Every project's `default` group (Neutron makes it with the project, with its four
/// rules), and `web` (with the two egress rules of any new group).
fn security_groups(project: &str) -> Vec<SecurityGroup> {
    let created = Utc
        .with_ymd_and_hms(2026, 11, 21, 6, 10, 3)
        .single()
        .unwrap_or_default();
    let rule_tweaks = ["e0", "e1", "e2", "e3", "e4", "e5"];
    let mut rule_ids = rule_tweaks.iter().zip(1..);
    let mut group = |tweak: &str, name: &str, description: &str| {
        let mut g = SecurityGroup::new(project_uuid(project, tweak), name, description, true);
        (g.created, g.updated) = (created, created);
        g.rules = g.initial_rules();
        for (rule, (tweak, seq)) in g.rules.iter_mut().zip(rule_ids.by_ref()) {
            (rule.id, rule.seq) = (project_uuid(project, tweak), seq);
        }
        g
    };
    vec![
        group("d0", "default", "Default security group"),
        group("d1", "web", ""),
    ]
}
