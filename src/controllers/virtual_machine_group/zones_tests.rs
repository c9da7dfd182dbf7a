use super::*;
use crate::cloud::model::compute::ZoneState;

fn zoning(spread: ZoneSpread, listing: &[(&str, bool)]) -> Zoning {
    let zones = GroupZones {
        names: ["az-1", "az-2", "az-3"].map(String::from).to_vec(),
        spread,
    };
    let listed: Vec<AvailabilityZone> = listing
        .iter()
        .map(|(name, available)| AvailabilityZone {
            name: (*name).to_owned(),
            state: ZoneState {
                available: *available,
            },
        })
        .collect();
    Zoning::new(&zones, Some(&listed))
}

const ALL_UP: &[(&str, bool)] = &[("az-1", true), ("az-2", true), ("az-3", true)];
const AZ2_DOWN: &[(&str, bool)] = &[("az-1", true), ("az-3", true), ("az-2", false)];

fn placed(zones: &[&str]) -> Vec<Placed> {
    zones
        .iter()
        .enumerate()
        .map(|(i, z)| Placed {
            name: format!("web-{i}"),
            index: i as u32,
            zone: Some((*z).to_owned()),
            pinned: false,
        })
        .collect()
}

fn per_zone(zones: &BTreeMap<u32, String>) -> Vec<&str> {
    zones.values().map(String::as_str).collect()
}

#[test]
fn six_new_replicas_go_two_to_each_zone_in_home_order() {
    let z = zoning(ZoneSpread::Balanced, ALL_UP);
    let create: Vec<u32> = (0..6).collect();
    for in_place in [false, true] {
        let zones = z.placements(6, &create, in_place, &[]);
        assert_eq!(
            per_zone(&zones),
            ["az-1", "az-2", "az-3", "az-1", "az-2", "az-3"]
        );
    }
}

#[test]
fn a_scale_down_from_six_to_four_removes_one_of_az_2_and_one_of_az_3() {
    let z = zoning(ZoneSpread::Balanced, ALL_UP);
    let active = placed(&["az-1", "az-2", "az-3", "az-1", "az-2", "az-3"]);
    let misplaced = z.misplaced(4, &active);
    assert_eq!(misplaced.moving, BTreeSet::new(), "nowhere lacks a replica");
    assert_eq!(
        misplaced.surplus,
        ["web-4", "web-5"].map(String::from).into()
    );
}

#[test]
fn balanced_moves_the_replicas_of_a_lost_zone_to_the_others_and_back() {
    let lost = zoning(ZoneSpread::Balanced, AZ2_DOWN);
    let active = placed(&["az-1", "az-2", "az-3", "az-1", "az-2", "az-3"]);
    let misplaced = lost.misplaced(6, &active);
    assert_eq!(
        misplaced.moving,
        ["web-1", "web-4"].map(String::from).into()
    );
    let staying: Vec<Placed> = active
        .iter()
        .filter(|p| !misplaced.moving.contains(&p.name))
        .cloned()
        .collect();
    let zones = lost.placements(6, &[6, 7], false, &staying);
    assert_eq!(per_zone(&zones), ["az-1", "az-3"]);

    let back = zoning(ZoneSpread::Balanced, ALL_UP);
    let active = placed(&["az-1", "az-1", "az-3", "az-1", "az-3", "az-3"]);
    let misplaced = back.misplaced(6, &active);
    assert_eq!(
        misplaced.moving,
        ["web-3", "web-5"].map(String::from).into()
    );
    let staying: Vec<Placed> = active
        .iter()
        .filter(|p| !misplaced.moving.contains(&p.name))
        .cloned()
        .collect();
    assert_eq!(
        per_zone(&back.placements(6, &[6], false, &staying)),
        ["az-2"]
    );
}

#[test]
fn even_keeps_a_lost_zones_share_there() {
    let z = zoning(ZoneSpread::Even, AZ2_DOWN);
    let active = placed(&["az-1", "az-3", "az-1", "az-3"]);
    assert_eq!(z.misplaced(6, &active), Misplaced::default());
    assert_eq!(
        per_zone(&z.placements(6, &[1, 4], true, &active)),
        ["az-2", "az-2"]
    );
}

#[test]
fn a_pinned_replica_stays_in_a_lost_zone_and_keeps_its_share() {
    let z = zoning(ZoneSpread::Balanced, AZ2_DOWN);
    let mut active = placed(&["az-1", "az-2", "az-3"]);
    active[1].pinned = true;
    assert_eq!(z.misplaced(3, &active), Misplaced::default());
    let targets = z.targets(3, &pinned_per_zone(&active));
    assert_eq!(targets.get("az-2"), Some(&1));
}

#[test]
fn replicas_outside_the_named_zones_move_in() {
    let z = zoning(ZoneSpread::Balanced, ALL_UP);
    let active = placed(&["nova", "az-2", "az-3"]);
    let misplaced = z.misplaced(3, &active);
    assert_eq!(misplaced.moving, ["web-0"].map(String::from).into());
}

#[test]
fn without_a_listing_every_zone_is_taken_as_up() {
    let zones = GroupZones {
        names: vec!["az-1".into(), "az-2".into()],
        spread: ZoneSpread::Balanced,
    };
    let z = Zoning::new(&zones, None);
    assert!(z.unavailable.is_empty());
    let zone = |name: &str, replicas| ZoneStatus {
        name: name.into(),
        replicas,
        ..ZoneStatus::default()
    };
    assert_eq!(
        summary(&[zone("az-1", 2), zone("az-2", 1)]),
        "az-1=2 az-2=1"
    );
}
