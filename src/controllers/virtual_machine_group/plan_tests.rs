use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::*;

const TIMEOUT: Duration = Duration::from_secs(60);

/// How a group replaces and removes VirtualMachines, in these tests.
#[derive(Clone, Copy)]
struct Shape {
    rolling: bool,
    stateful: bool,
}

/// Today's defaults: surge 1, none unavailable, no partition, no healing.
fn policy(replicas: u32, shape: Shape, lbs: bool) -> Policy {
    Policy {
        replicas,
        template_hash: "new".into(),
        rolling: shape.rolling,
        stateful: shape.stateful,
        in_place: shape.stateful,
        max_surge: 1,
        max_unavailable: 0,
        partition: 0,
        min_ready: Duration::ZERO,
        serving_required: lbs,
        drain_timeout: TIMEOUT,
        healing: None,
        stalled: false,
    }
}

fn rounds(replicas: u32, shape: Shape, members: &[Member], lbs: bool, now: Timestamp) -> Plan {
    plan(&policy(replicas, shape, lbs), members, now)
}
const ROLLING: Shape = Shape {
    rolling: true,
    stateful: false,
};
const ON_DELETE: Shape = Shape {
    rolling: false,
    stateful: false,
};
const STATEFUL: Shape = Shape {
    rolling: true,
    stateful: true,
};

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

pub(in crate::controllers::virtual_machine_group) fn member(
    index: u32,
    hash: &str,
    ready: bool,
) -> Member {
    Member {
        name: format!("web-{index}"),
        index,
        template_hash: hash.into(),
        ready,
        draining_since: None,
        deleting: false,
        in_pools: ready,
        serving: ready,
        health: match ready {
            true => Health::Healthy { since: at(-3600) },
            false => Health::Starting,
        },
        zone: None,
        misplaced: false,
        surplus: false,
    }
}

fn run(replicas: u32, members: &[Member], lbs: bool) -> Plan {
    rounds(replicas, ROLLING, members, lbs, at(0))
}

#[test]
fn scaling_up_creates_the_lowest_free_indices() {
    let members = [member(0, "new", true), member(2, "new", true)];
    assert_eq!(run(4, &members, false).create, vec![1, 3]);
}

#[test]
fn scaling_down_drains_not_ready_first_then_the_newest() {
    let members = [
        member(0, "new", true),
        member(1, "new", false),
        member(2, "new", true),
        member(3, "new", true),
    ];
    let p = run(2, &members, false);
    assert_eq!(p.drain, vec!["web-1".to_owned(), "web-3".to_owned()]);
    assert!(p.create.is_empty() && p.delete.is_empty());
}

#[test]
fn a_draining_member_is_deleted_only_once_no_pool_lists_it_or_the_drain_times_out() {
    let mut draining = member(2, "new", true);
    draining.draining_since = Some(at(0));
    let members = [
        member(0, "new", true),
        member(1, "new", true),
        draining.clone(),
    ];
    assert!(rounds(2, ROLLING, &members, true, at(1)).delete.is_empty());
    assert_eq!(
        rounds(2, ROLLING, &members, true, at(61)).delete,
        vec!["web-2".to_owned()]
    );
    draining.in_pools = false;
    let members = [member(0, "new", true), member(1, "new", true), draining];
    assert_eq!(
        rounds(2, ROLLING, &members, true, at(1)).delete,
        vec!["web-2".to_owned()]
    );
}

#[test]
fn a_member_whose_deletion_was_asked_for_is_neither_deleted_nor_reported_again() {
    let mut deleting = member(2, "new", false);
    deleting.draining_since = Some(at(0));
    deleting.in_pools = false;
    deleting.deleting = true;
    let members = [member(0, "new", true), member(1, "new", true), deleting];
    let round = rounds(2, ROLLING, &members, true, at(5));
    assert_eq!(round, Plan::default());
    assert!(round.events("web").is_empty());
}

#[test]
fn a_template_change_surges_one_then_drains_an_old_one_when_the_new_one_serves() {
    let old = [member(0, "old", true), member(1, "old", true)];
    assert_eq!(
        run(2, &old, true).create,
        vec![2],
        "one surge VirtualMachine"
    );

    let mut fresh = member(2, "new", true);
    fresh.serving = false;
    let waiting = [
        member(0, "old", true),
        member(1, "old", true),
        fresh.clone(),
    ];
    assert_eq!(
        run(2, &waiting, true),
        Plan::default(),
        "wait until it is in the pools"
    );

    fresh.serving = true;
    let serving = [member(0, "old", true), member(1, "old", true), fresh];
    let p = run(2, &serving, true);
    assert_eq!(p.drain, vec!["web-1".to_owned()], "then one old one goes");
    assert!(p.create.is_empty());
}

#[test]
fn on_delete_strategy_leaves_outdated_members_alone() {
    let old = [member(0, "old", true), member(1, "old", true)];
    assert_eq!(rounds(2, ON_DELETE, &old, false, at(0)), Plan::default());
}

#[test]
fn the_template_hash_is_stable_and_short() {
    let h = template_hash(r#"{"image":"centos79"}"#);
    assert_eq!(h, template_hash(r#"{"image":"centos79"}"#));
    assert_ne!(h, template_hash(r#"{"image":"ubuntu"}"#));
    assert_eq!(h.len(), 10);
}

#[test]
fn a_round_is_told_as_events_naming_the_virtual_machines() {
    let round = Plan {
        create: vec![2, 3],
        drain: vec!["web-0".into()],
        delete: vec!["web-1".into()],
        heal: vec![],
    };
    assert_eq!(
        round.events("web"),
        [
            ("Created", "created VirtualMachines web-2, web-3".to_owned()),
            (
                "Draining",
                "VirtualMachines web-0 leave the load balancers' pools before they are deleted"
                    .to_owned()
            ),
            ("Deleted", "deleted VirtualMachines web-1".to_owned()),
        ]
    );
    assert!(Plan::default().events("web").is_empty());
}

#[test]
fn a_stateful_group_replaces_in_place_and_scales_down_from_the_highest_index() {
    // A template change: no surge; one outdated member drains, its index comes back.
    let old = [member(0, "old", true), member(1, "old", true)];
    let round = rounds(2, STATEFUL, &old, false, at(0));
    assert!(round.create.is_empty(), "{round:?}");
    assert_eq!(round.drain.len(), 1);
    let gone = [member(1, "old", true)];
    assert_eq!(rounds(2, STATEFUL, &gone, false, at(0)).create, vec![0]);
    // A scale-down removes the highest index, even when a lower one is not ready.
    let three = [
        member(0, "new", false),
        member(1, "new", true),
        member(2, "new", true),
    ];
    assert_eq!(
        rounds(2, STATEFUL, &three, false, at(0)).drain,
        vec!["web-2".to_owned()]
    );
    assert_eq!(
        rounds(2, ROLLING, &three, false, at(0)).drain,
        vec!["web-0".to_owned()],
        "without volumes the broken one goes first"
    );
}

#[test]
fn a_scale_down_tells_what_becomes_of_the_removed_replicas_volumes() {
    let group: verda_api::v1alpha1::VirtualMachineGroup = serde_saphyr::from_str(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: db, namespace: team}\nspec:\n  replicas: 2\n  template: {image: centos79, flavor: m1.small, volumes: [{name: data, size: 1}]}\n",
    )
    .expect("a group");
    let vm = |name: &str| -> verda_api::v1alpha1::VirtualMachine {
        serde_saphyr::from_str(&format!(
            "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}, namespace: team}}\nspec: {{image: centos79, flavor: m1.small, volumes: [{{name: data, size: 1}}]}}\n"
        ))
        .expect("a VirtualMachine")
    };
    let vms = [vm("db-0"), vm("db-1"), vm("db-2")];
    let round = Plan {
        delete: vec!["db-2".into()],
        ..Plan::default()
    };
    let events = volume_events(&group, &round, &vms);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "VolumesRetained");
    assert_eq!(
        volume_fate(&group, Some(2)),
        verda_api::v1alpha1::Retention::Retain
    );
    assert_eq!(
        volume_fate(&group, Some(1)),
        verda_api::v1alpha1::Retention::Retain
    );
}

#[test]
fn retained_volumes_past_replicas_go_when_scaled_says_delete() {
    let group = |retention: &str| -> verda_api::v1alpha1::VirtualMachineGroup {
        serde_saphyr::from_str(&format!(
            "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: db, namespace: team}}\nspec:\n  replicas: 2\n  template: {{image: centos79, flavor: m1.small, volumes: [{{name: data, size: 1}}]}}\n  volumeRetention: {{whenScaled: {retention}}}\n"
        ))
        .expect("a group")
    };
    let volume = |id: &str, state: VolumeState| Volume {
        id: id.into(),
        name: Some(format!("db-{id}")),
        status: state,
        size: 1,
        volume_type: None,
        metadata: Default::default(),
        attachments: vec![],
        created_at: None,
    };
    let retained = [
        (1, volume("v1", VolumeState::Available)),
        (2, volume("v2", VolumeState::Available)),
        (3, volume("v3", VolumeState::Creating)),
    ];
    let gone = scaled_away(&group("Delete"), &retained);
    assert_eq!(gone.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [2]);
    assert!(scaled_away(&group("Retain"), &retained).is_empty());
    let (reason, note) = scaled_away_event(&gone);
    assert_eq!(reason, "VolumesDeleted");
    assert!(note.contains("db-v2 (v2)"), "{note}");
}

fn fleet(n: u32, hash: &str) -> Vec<Member> {
    (0..n).map(|i| member(i, hash, true)).collect()
}

#[test]
fn a_quarter_surge_rolls_thirty_replicas_in_waves_of_eight() {
    let mut p = policy(30, ROLLING, true);
    p.max_surge = 8;
    let old = fleet(30, "old");
    let round = plan(&p, &old, at(0));
    assert_eq!(round.create, (30..38).collect::<Vec<u32>>());
    assert!(
        round.drain.is_empty(),
        "none goes before the new ones serve"
    );

    let mut members = old.clone();
    members.extend((30..38).map(|i| member(i, "new", true)));
    let round = plan(&p, &members, at(0));
    assert_eq!(round.drain.len(), 8, "{round:?}");
    assert!(round.drain.iter().all(|n| old.iter().any(|m| &m.name == n)));
    assert!(round.create.is_empty());
}

#[test]
fn max_unavailable_drains_old_replicas_before_the_new_ones_serve() {
    let mut p = policy(4, ROLLING, false);
    p.max_unavailable = 2;
    let round = plan(&p, &fleet(4, "old"), at(0));
    assert_eq!(round.create, vec![4]);
    assert_eq!(round.drain, vec!["web-2".to_owned(), "web-3".to_owned()]);
}

#[test]
fn a_partition_updates_only_the_indices_from_it_in_place() {
    let mut p = policy(4, ROLLING, false);
    p.partition = 3;
    p.in_place = true;
    let round = plan(&p, &fleet(4, "old"), at(0));
    assert_eq!(round.drain, vec!["web-3".to_owned()]);
    assert!(round.create.is_empty());
    let three = fleet(3, "old");
    assert_eq!(
        plan(&p, &three, at(0)).create,
        vec![3],
        "index 3 comes back"
    );
    let mut done = fleet(3, "old");
    done.push(member(3, "new", true));
    assert_eq!(plan(&p, &done, at(0)), Plan::default());
}

#[test]
fn a_stalled_rollout_replaces_no_more_and_removes_its_new_replicas_that_never_served() {
    let mut p = policy(4, ROLLING, true);
    p.stalled = true;
    let mut members = fleet(4, "old");
    members.push(member(4, "new", false));
    let round = plan(&p, &members, at(0));
    assert_eq!(round.drain, vec!["web-4".to_owned()]);
    assert!(round.create.is_empty());
    // Reverted: the old replicas are current again, the failed one goes, nothing else.
    let mut reverted = policy(4, ROLLING, true);
    reverted.template_hash = "old".into();
    let round = plan(&reverted, &members, at(0));
    assert_eq!(round.drain, vec!["web-4".to_owned()]);
    assert!(round.create.is_empty());
}

#[test]
fn min_ready_seconds_counts_from_healthy() {
    let mut p = policy(2, ROLLING, false);
    p.min_ready = Duration::from_secs(30);
    let mut fresh = member(2, "new", true);
    fresh.health = Health::Healthy { since: at(-10) };
    let members = [
        member(0, "old", true),
        member(1, "old", true),
        fresh.clone(),
    ];
    assert!(
        plan(&p, &members, at(0)).drain.is_empty(),
        "healthy 10 s of 30"
    );
    assert_eq!(plan(&p, &members, at(25)).drain, vec!["web-1".to_owned()]);
}

fn unhealthy(index: u32, since: i64, replacements: i32) -> Member {
    let mut m = member(index, "new", true);
    m.health = Health::Unhealthy {
        since: at(since),
        replacements,
    };
    m
}

fn healing(replicas: u32, max_unhealthy: u32) -> Policy {
    Policy {
        healing: Some(Healing {
            unhealthy_after: Duration::from_secs(300),
            max_unhealthy,
        }),
        ..policy(replicas, ROLLING, true)
    }
}

#[test]
fn an_unhealthy_replica_is_replaced_after_unhealthy_after_with_backoff() {
    let p = healing(4, 1);
    let mut members = fleet(4, "new");
    members[1] = unhealthy(1, -100, 0);
    assert_eq!(
        plan(&p, &members, at(0)),
        Plan::default(),
        "unhealthy 100 s of 300"
    );
    let round = plan(&p, &members, at(200));
    assert_eq!(
        (round.drain.clone(), round.heal.clone()),
        (vec!["web-1".to_owned()], vec!["web-1".to_owned()])
    );
    assert!(
        round.create.is_empty(),
        "the index comes back once it is gone"
    );
    // Replaced twice before: 4 × 300 s.
    members[1] = unhealthy(1, 0, 2);
    assert!(plan(&p, &members, at(1100)).heal.is_empty());
    assert_eq!(plan(&p, &members, at(1200)).heal, vec!["web-1".to_owned()]);
}

#[test]
fn more_unhealthy_than_max_unhealthy_replaces_none() {
    let p = healing(4, 1);
    let mut members = fleet(4, "new");
    members[1] = unhealthy(1, -1000, 0);
    members[2] = unhealthy(2, -1000, 0);
    assert_eq!(plan(&p, &members, at(0)), Plan::default());
}

#[test]
fn healing_takes_no_more_at_once_than_max_unavailable_allows() {
    let p = healing(4, 4);
    let mut members = fleet(4, "new");
    members[1] = unhealthy(1, -1000, 0);
    members[2] = unhealthy(2, -1000, 0);
    assert_eq!(plan(&p, &members, at(0)).heal, vec!["web-1".to_owned()]);
    members[1].draining_since = Some(at(0));
    assert!(
        plan(&p, &members, at(1)).heal.is_empty(),
        "one is on its way out"
    );
}

#[test]
fn a_new_replica_serving_but_never_healthy_is_not_available_so_no_old_one_goes() {
    let p = policy(2, ROLLING, true);
    let mut fresh = member(2, "new", true);
    fresh.health = Health::Starting;
    let members = [member(0, "old", true), member(1, "old", true), fresh];
    assert_eq!(plan(&p, &members, at(0)), Plan::default());
}

#[test]
fn a_surge_rollout_never_drains_the_last_serving_replica_of_a_zone() {
    let zones = ["az-1", "az-2", "az-3", "az-1"];
    let members: Vec<Member> = (0..4)
        .map(|i| Member {
            zone: Some(zones[i as usize].into()),
            ..member(i, "old", true)
        })
        .collect();
    let mut p = policy(4, ROLLING, false);
    p.max_unavailable = 3;
    // Three may go, but az-2 and az-3 have one each and az-1 must keep one.
    assert_eq!(plan(&p, &members, at(0)).drain, ["web-3"]);
    // In place, a zone's only replica goes for its replacement to come.
    let mut in_place = policy(4, STATEFUL, false);
    in_place.max_unavailable = 3;
    assert_eq!(
        plan(&in_place, &members, at(0)).drain,
        ["web-1", "web-2", "web-3"]
    );
}

#[test]
fn a_replica_moved_between_zones_that_is_ready_but_not_in_a_pool_waits_for_the_budget() {
    let mut members: Vec<Member> = (0..7).map(|i| member(i, "new", true)).collect();
    // web-5 and web-6 leave their zones; web-5 is Ready but its load balancer's status
    // does not list it this round.
    for m in members.iter_mut().filter(|m| m.index >= 5) {
        m.misplaced = true;
    }
    members[5].serving = false;
    let p = policy(6, ROLLING, true);
    // Six count as available: none may go, web-5 included (not drained at once as if
    // its server were down).
    assert_eq!(plan(&p, &members, at(0)).drain, Vec::<String>::new());
    members[5].serving = true;
    assert_eq!(plan(&p, &members, at(0)).drain, ["web-6"]);
}

#[test]
fn a_surplus_replica_waits_until_the_new_one_in_its_zones_place_serves() {
    // web-6 was made in az-2 for web-5, which az-3 now holds one too many of; web-6
    // does not serve yet, so web-5 is the sixth that serves: it stays.
    let zones = ["az-1", "az-2", "az-3", "az-1", "az-2", "az-3", "az-2"];
    let mut members: Vec<Member> = (0..7)
        .map(|i| Member {
            zone: Some(zones[i as usize].into()),
            ..member(i, "new", true)
        })
        .collect();
    members[5].surplus = true;
    members[6].ready = false;
    members[6].serving = false;
    members[6].in_pools = false;
    members[6].health = Health::Starting;
    let p = policy(6, ROLLING, true);
    assert_eq!(plan(&p, &members, at(0)), Plan::default());
    members[6] = Member {
        zone: Some("az-2".into()),
        ..member(6, "new", true)
    };
    assert_eq!(plan(&p, &members, at(0)).drain, ["web-5"]);
    // A scale-down is not held back: the not-ready go first, free.
    members[6].ready = false;
    members[6].serving = false;
    members[6].health = Health::Starting;
    assert_eq!(
        plan(&Policy { replicas: 4, ..p }, &members, at(0)).drain,
        ["web-4", "web-5", "web-6"]
    );
}
