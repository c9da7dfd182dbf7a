use super::*;

fn created() -> Similar<'static> {
    Similar {
        object_uid: "uid-1",
        warning: false,
        reason: "Created",
        action: "Reconcile",
    }
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("a time")
}

/// Decides and records the write as the API server accepted it, naming a created
/// event after its note.
fn publish(c: &mut Correlator, similar: Similar<'_>, note: &str, now: Timestamp) -> Write {
    let (key, write) = c.decide(&similar, note, now);
    let name = match &write {
        Write::Create { note, .. } => format!("ev-{note}"),
        Write::Patch { name, .. } => name.clone(),
    };
    c.written(key, &name, &write);
    write
}

#[test]
fn an_identical_event_repeated_is_one_event_with_a_count() {
    let mut c = Correlator::default();
    let note = "created VirtualMachines web-0, web-1";
    assert_eq!(
        publish(&mut c, created(), note, at(0)),
        Write::Create {
            note: note.into(),
            at: at(0)
        }
    );
    assert_eq!(
        publish(&mut c, created(), note, at(20)),
        Write::Patch {
            name: format!("ev-{note}"),
            note: note.into(),
            count: 2,
            first: at(0),
            at: at(20),
        }
    );
    let Write::Patch { count, first, .. } = publish(&mut c, created(), note, at(40)) else {
        panic!("a third repeat patches");
    };
    assert_eq!((count, first), (3, at(0)));
}

#[test]
fn a_new_note_for_the_same_reason_is_a_new_event_that_says_it() {
    let mut c = Correlator::default();
    publish(
        &mut c,
        created(),
        "created VirtualMachines web-0, web-1",
        at(0),
    );
    assert_eq!(
        publish(&mut c, created(), "created VirtualMachines web-2", at(20)),
        Write::Create {
            note: "created VirtualMachines web-2".into(),
            at: at(20)
        }
    );
}

#[test]
fn events_of_other_objects_types_or_reasons_never_share_a_series() {
    let mut c = Correlator::default();
    publish(&mut c, created(), "same", at(0));
    let others = [
        Similar {
            object_uid: "uid-2",
            ..created()
        },
        Similar {
            warning: true,
            ..created()
        },
        Similar {
            reason: "Deleted",
            ..created()
        },
        Similar {
            action: "Delete",
            ..created()
        },
    ];
    for other in others {
        assert!(matches!(
            publish(&mut c, other, "same", at(1)),
            Write::Create { .. }
        ));
    }
}

#[test]
fn a_burst_of_similar_events_goes_to_one_aggregate_that_shows_the_latest_note() {
    let mut c = Correlator::default();
    for i in 0..SIMILAR_LIMIT - 1 {
        let write = publish(&mut c, created(), &format!("note {i}"), at(i as i64));
        assert!(matches!(write, Write::Create { .. }), "note {i}: {write:?}");
    }
    let first = publish(&mut c, created(), "note 9", at(9));
    assert_eq!(
        first,
        Write::Create {
            note: format!("{COMBINED}note 9"),
            at: at(9)
        }
    );
    let next = publish(&mut c, created(), "note 10", at(10));
    assert_eq!(
        next,
        Write::Patch {
            name: format!("ev-{COMBINED}note 9"),
            note: format!("{COMBINED}note 10"),
            count: 2,
            first: at(9),
            at: at(10),
        }
    );
}

#[test]
fn similar_events_far_apart_are_not_combined() {
    let mut c = Correlator::default();
    let apart = SIMILAR_WINDOW.as_secs() + 1;
    for i in 0..2 * SIMILAR_LIMIT as i64 {
        let write = publish(&mut c, created(), &format!("note {i}"), at(i * apart));
        assert!(matches!(write, Write::Create { ref note, .. } if !note.starts_with(COMBINED)));
    }
}

#[test]
fn an_event_gone_from_the_api_server_is_created_again() {
    let mut c = Correlator::default();
    publish(&mut c, created(), "n", at(0));
    let (key, write) = c.decide(&created(), "n", at(5));
    assert!(matches!(write, Write::Patch { .. }));
    c.lost(&key);
    assert!(matches!(
        c.decide(&created(), "n", at(6)).1,
        Write::Create { .. }
    ));
}

#[test]
fn an_event_older_than_the_api_servers_time_to_live_is_created_again() {
    let mut c = Correlator::default();
    publish(&mut c, created(), "n", at(0));
    let later = at(0) + REMEMBERED + SignedDuration::from_secs(61);
    assert!(matches!(
        c.decide(&created(), "n", later).1,
        Write::Create { .. }
    ));
}

#[test]
fn memory_is_bounded_by_forgetting_the_least_recently_seen() {
    let mut c = Correlator::default();
    let uids: Vec<String> = (0..=REMEMBERED_MAX).map(|i| format!("uid-{i}")).collect();
    let object = |i: usize| Similar {
        object_uid: &uids[i],
        ..created()
    };
    let ms = |i: usize| at(0) + SignedDuration::from_millis(i as i64);
    for i in 0..=REMEMBERED_MAX {
        publish(&mut c, object(i), "n", ms(i));
    }
    assert_eq!(c.seen.len(), REMEMBERED_MAX);
    let now = ms(REMEMBERED_MAX + 1);
    assert!(matches!(
        c.decide(&object(0), "n", now).1,
        Write::Create { .. }
    ));
    assert!(matches!(
        c.decide(&object(REMEMBERED_MAX), "n", now).1,
        Write::Patch { .. }
    ));
}

#[test]
fn a_remembered_event_holds_digests_not_the_text_of_its_object_or_note() {
    // `Copy` only compiles for a key that owns no heap memory: thousands are kept.
    fn owns_no_heap<T: Copy>() {}
    owns_no_heap::<Key>();
    assert!(std::mem::size_of::<Key>() <= 32);
    let mut c = Correlator::default();
    let long = "x".repeat(10_000);
    publish(&mut c, created(), &long, at(0));
    let (key, write) = c.decide(&created(), &long, at(1));
    assert!(matches!(write, Write::Patch { count: 2, .. }));
    assert_eq!(c.seen.keys().collect::<Vec<_>>(), [&key]);
}
