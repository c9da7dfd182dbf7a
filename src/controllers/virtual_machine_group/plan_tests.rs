use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::*;

const TIMEOUT: Duration = Duration::from_secs(60);
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
    }
}

fn run(replicas: u32, members: &[Member], lbs: bool) -> Plan {
    plan(replicas, "new", ROLLING, members, lbs, TIMEOUT, at(0))
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
    assert!(
        plan(2, "new", ROLLING, &members, true, TIMEOUT, at(1))
            .delete
            .is_empty()
    );
    assert_eq!(
        plan(2, "new", ROLLING, &members, true, TIMEOUT, at(61)).delete,
        vec!["web-2".to_owned()]
    );
    draining.in_pools = false;
    let members = [member(0, "new", true), member(1, "new", true), draining];
    assert_eq!(
        plan(2, "new", ROLLING, &members, true, TIMEOUT, at(1)).delete,
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
    let round = plan(2, "new", ROLLING, &members, true, TIMEOUT, at(5));
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
    assert_eq!(
        plan(2, "new", ON_DELETE, &old, false, TIMEOUT, at(0)),
        Plan::default()
    );
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
    let round = plan(2, "new", STATEFUL, &old, false, TIMEOUT, at(0));
    assert!(round.create.is_empty(), "{round:?}");
    assert_eq!(round.drain.len(), 1);
    let gone = [member(1, "old", true)];
    assert_eq!(
        plan(2, "new", STATEFUL, &gone, false, TIMEOUT, at(0)).create,
        vec![0]
    );
    // A scale-down removes the highest index, even when a lower one is not ready.
    let three = [
        member(0, "new", false),
        member(1, "new", true),
        member(2, "new", true),
    ];
    assert_eq!(
        plan(2, "new", STATEFUL, &three, false, TIMEOUT, at(0)).drain,
        vec!["web-2".to_owned()]
    );
    assert_eq!(
        plan(2, "new", ROLLING, &three, false, TIMEOUT, at(0)).drain,
        vec!["web-0".to_owned()],
        "without volumes the broken one goes first"
    );
}

#[test]
fn a_scale_down_tells_what_becomes_of_the_removed_replicas_volumes() {
    let group: verda_api::v1alpha1::VirtualMachineGroup = serde_yaml_ng::from_str(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: db, namespace: team}\nspec:\n  replicas: 2\n  template: {image: centos79, flavor: m1.small, volumes: [{name: data, size: 1}]}\n",
    )
    .expect("a group");
    let vm = |name: &str| -> verda_api::v1alpha1::VirtualMachine {
        serde_yaml_ng::from_str(&format!(
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
        serde_yaml_ng::from_str(&format!(
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
