use super::*;

const OURS: &str = "verda-uid-a verda-cluster-c";

fn name(name: &str, ttl: Option<i32>) -> DnsName {
    DnsName {
        zone: "example.test.".to_owned(),
        name: name.to_owned(),
        ttl,
        address: None,
    }
}

fn set(
    id: &str,
    type_: &str,
    records: &[&str],
    ttl: Option<i32>,
    description: Option<&str>,
) -> RecordSet {
    RecordSet {
        id: RecordSetId::new(id),
        zone_id: DnsZoneId::new("z"),
        name: "www.example.test.".to_owned(),
        type_: type_.to_owned(),
        records: records.iter().map(|r| (*r).to_owned()).collect(),
        ttl,
        description: description.map(str::to_owned),
        status: "ACTIVE".to_owned(),
    }
}

fn seen(wanted: bool, sets: Vec<RecordSet>) -> Seen {
    Seen {
        name: name("www", Some(60)),
        wanted,
        zone: Ok(DnsZoneId::new("z")),
        sets,
    }
}

fn addresses(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| (*a).to_owned()).collect()
}

#[test]
fn a_missing_name_is_created_with_the_owner_record_and_reported_pending() {
    let (writes, row) = plan(&seen(true, Vec::new()), &addresses(&["10.0.0.5"]), OURS);
    let Some(Write::Create(_, request)) = writes.first() else {
        panic!("a create: {writes:?}");
    };
    assert_eq!(request.name, "www.example.test.");
    assert_eq!((request.type_.as_str(), request.ttl), ("A", Some(60)));
    assert_eq!(request.description, OURS);
    let row = row.expect("a row");
    assert_eq!(
        (row.status.as_str(), row.records.clone()),
        ("PENDING", addresses(&["10.0.0.5"]))
    );
}

#[test]
fn the_same_addresses_in_another_order_write_nothing() {
    let ours = set("r", "A", &["10.0.0.6", "10.0.0.5"], Some(60), Some(OURS));
    let (writes, row) = plan(
        &seen(true, vec![ours]),
        &addresses(&["10.0.0.5", "10.0.0.6"]),
        OURS,
    );
    assert!(writes.is_empty(), "{writes:?}");
    assert_eq!(row.expect("a row").status, "ACTIVE");
}

#[test]
fn other_addresses_or_ttl_are_one_update_and_another_family_replaces_the_set() {
    let ours = set("r", "A", &["10.0.0.9"], Some(60), Some(OURS));
    let (writes, _) = plan(
        &seen(true, vec![ours.clone()]),
        &addresses(&["10.0.0.5"]),
        OURS,
    );
    assert!(
        matches!(&writes[..], [Write::Update(_, id, _, u)] if id.as_str() == "r" && u.records == ["10.0.0.5"])
    );
    let (writes, row) = plan(&seen(true, vec![ours]), &addresses(&["fd00::5"]), OURS);
    assert!(
        matches!(&writes[0], Write::Delete(_, id, _) if id.as_str() == "r"),
        "{writes:?}"
    );
    assert!(
        matches!(&writes[1], Write::Create(_, c) if c.type_ == "AAAA"),
        "{writes:?}"
    );
    assert_eq!(row.expect("a row").type_.as_deref(), Some("AAAA"));
}

#[test]
fn a_name_someone_else_holds_is_reported_and_left_alone() {
    for type_ in ["A", "CNAME"] {
        let theirs = set("t", type_, &["192.0.2.99"], None, Some("by hand"));
        let (writes, row) = plan(&seen(true, vec![theirs]), &addresses(&["10.0.0.5"]), OURS);
        assert!(writes.is_empty(), "{type_}: {writes:?}");
        let row = row.expect("a row");
        assert_eq!(row.status, OWNED_BY_ANOTHER);
        assert!(row.message.unwrap_or_default().contains("(t)"));
    }
    // Someone else's TXT beside it is no conflict.
    let txt = set("t", "TXT", &["\"hello\""], None, None);
    let (writes, _) = plan(&seen(true, vec![txt]), &addresses(&["10.0.0.5"]), OURS);
    assert!(matches!(&writes[..], [Write::Create(..)]));
}

#[test]
fn a_name_no_longer_wanted_deletes_only_ours_and_reports_nothing() {
    let ours = set("r", "A", &["10.0.0.5"], None, Some(OURS));
    let theirs = set(
        "t",
        "AAAA",
        &["fd00::9"],
        None,
        Some("verda-uid-b verda-cluster-c"),
    );
    let (writes, row) = plan(&seen(false, vec![ours, theirs]), &[], OURS);
    assert!(
        matches!(&writes[..], [Write::Delete(_, id, _)] if id.as_str() == "r"),
        "{writes:?}"
    );
    assert!(row.is_none());
}

#[test]
fn without_addresses_or_zone_nothing_is_written_and_the_reason_is_reported() {
    let ours = set("r", "A", &["10.0.0.5"], Some(60), Some(OURS));
    let (writes, row) = plan(&seen(true, vec![ours]), &[], OURS);
    assert!(writes.is_empty(), "what the name holds stays: {writes:?}");
    assert_eq!(row.expect("a row").status, NO_ADDRESS);
    let mut missing = seen(true, Vec::new());
    missing.zone = Err("no zone".to_owned());
    let (writes, row) = plan(&missing, &addresses(&["10.0.0.5"]), OURS);
    assert!(writes.is_empty());
    assert_eq!(row.expect("a row").status, ZONE_NOT_FOUND);
}

#[test]
fn reported_names_the_spec_dropped_are_looked_at_to_be_deleted() {
    let spec = vec![name("www", None)];
    let reported = vec![
        DnsRecordStatus {
            name: "www.example.test.".into(),
            zone: "example.test.".into(),
            ..Default::default()
        },
        DnsRecordStatus {
            name: "api.example.test.".into(),
            zone: "example.test.".into(),
            ..Default::default()
        },
        DnsRecordStatus {
            name: "example.test.".into(),
            zone: "example.test.".into(),
            ..Default::default()
        },
    ];
    let names: Vec<(String, bool)> = names(&spec, &reported)
        .into_iter()
        .map(|(n, w)| (n.name, w))
        .collect();
    assert_eq!(
        names,
        [
            ("www".to_owned(), true),
            ("api".to_owned(), false),
            ("@".to_owned(), false)
        ]
    );
}

#[test]
fn a_virtual_machine_name_holds_the_address_it_asks_for() {
    let both = Addresses {
        primary: addresses(&["10.0.0.5"]),
        floating: Some("203.0.113.7".to_owned()),
    };
    let mut floating = name("www", None);
    floating.address = Some(DnsAddress::Floating);
    assert_eq!(both.of(&name("www", None)), ["10.0.0.5"]);
    assert_eq!(both.of(&floating), ["203.0.113.7"]);
}
