use verda_api::v1alpha1::{VirtualMachine, VolumeStatus};

use super::*;
use crate::caches::cloud_view::VolumeOwner;
use crate::cloud::ids::{AttachmentId, ServerId};
use crate::cloud::model::volume::Attachment;
use crate::cloud::owner::Owner;

fn vm(volumes: &str) -> VirtualMachine {
    serde_saphyr::from_str(&format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: db-1, namespace: team, uid: vm-uid}}\nspec:\n  image: centos79\n  flavor: m1.small\n  volumes: {volumes}\n"
    ))
    .expect("a VirtualMachine")
}

fn replica() -> VolumeOwner {
    VolumeOwner {
        owner: Owner::new("group-uid", "team", "db"),
        index: Some(1),
    }
}

fn volume(id: &str, name: &str, size: i32, status: VolumeState, on: Option<&str>) -> Volume {
    Volume {
        id: VolumeId::new(id),
        name: Some(format!("db-1-{name}")),
        status,
        size,
        volume_type: None,
        metadata: replica().owner.volume_metadata(name, Some(1)),
        attachments: on
            .map(|s| Attachment {
                server_id: ServerId::new(s),
                attachment_id: Some(AttachmentId::new(format!("a-{id}"))),
                device: Some("/dev/vdb".into()),
            })
            .into_iter()
            .collect(),
        created_at: Some(format!("2026-11-25T10:00:0{}", id.len())),
    }
}

fn look(found: Vec<Volume>) -> Look {
    Look {
        owner: replica(),
        found,
        from_view: false,
        boot: None,
    }
}

fn server(status: ServerStatus) -> Server {
    Server {
        id: ServerId::new("s-1"),
        name: "db-1".into(),
        status,
        task_state: None,
        addresses: vec![],
        metadata: Default::default(),
        tags: vec![],
        description: None,
        flavor: None,
        image: None,
        fault: None,
        availability_zone: None,
        volumes_attached: vec![],
    }
}

const TWO: &str = "[{name: data, size: 10}, {name: logs, size: 5, type: ssd}]";

#[test]
fn a_replicas_volumes_are_created_before_its_server_named_and_recorded_for_the_group_index() {
    let vm = vm(TWO);
    let Some(VolumeStep::Create { request, was }) = before_server(&vm, &look(vec![])) else {
        panic!("the first volume is created first");
    };
    assert_eq!(was, None);
    assert_eq!((request.name.as_str(), request.size), ("db-1-data", 10));
    assert_eq!(
        request.metadata,
        replica().owner.volume_metadata("data", Some(1))
    );
    let one = look(vec![volume("v1", "data", 10, VolumeState::Creating, None)]);
    let Some(VolumeStep::Create { request, .. }) = before_server(&vm, &one) else {
        panic!("then the second");
    };
    assert_eq!(
        (request.name.as_str(), request.volume_type.as_deref()),
        ("db-1-logs", Some("ssd"))
    );
}

#[test]
fn volumes_attach_in_spec_order_once_the_server_is_active() {
    let vm = vm(TWO);
    let both = look(vec![
        volume("v1", "data", 10, VolumeState::Available, None),
        volume("v2", "logs", 5, VolumeState::Available, None),
    ]);
    assert!(matches!(
        with_server(&vm, &both, &server(ServerStatus::Build)),
        Some(VolumeStep::Wait(_))
    ));
    let step = with_server(&vm, &both, &server(ServerStatus::Active));
    assert_eq!(
        step,
        Some(VolumeStep::Attach {
            name: "data".into(),
            id: VolumeId::new("v1"),
            server: ServerId::new("s-1"),
            reattach: false
        })
    );
    let first_done = look(vec![
        volume("v1", "data", 10, VolumeState::InUse, Some("s-1")),
        volume("v2", "logs", 5, VolumeState::Available, None),
    ]);
    assert!(matches!(
        with_server(&vm, &first_done, &server(ServerStatus::Active)),
        Some(VolumeStep::Attach { ref name, .. }) if name == "logs"
    ));
    let all = look(vec![
        volume("v1", "data", 10, VolumeState::InUse, Some("s-1")),
        volume("v2", "logs", 5, VolumeState::InUse, Some("s-1")),
    ]);
    assert_eq!(with_server(&vm, &all, &server(ServerStatus::Active)), None);
}

#[test]
fn a_volume_still_on_another_server_is_held_by_it_never_taken_or_doubled() {
    let vm = vm("[{name: data, size: 10}]");
    let elsewhere = look(vec![volume(
        "v1",
        "data",
        10,
        VolumeState::InUse,
        Some("old"),
    )]);
    let step = with_server(&vm, &elsewhere, &server(ServerStatus::Active));
    assert_eq!(
        step,
        Some(VolumeStep::Held {
            name: "data".into(),
            id: VolumeId::new("v1"),
            holder: ServerId::new("old"),
            attachment: Some(AttachmentId::new("a-v1")),
        })
    );
    assert_eq!(before_server(&vm, &elsewhere), None, "no second volume");
}

#[test]
fn a_larger_size_extends_the_same_volume_and_an_error_is_reported_not_replaced() {
    let vm = vm("[{name: data, size: 20}]");
    let small = look(vec![volume(
        "v1",
        "data",
        10,
        VolumeState::InUse,
        Some("s-1"),
    )]);
    assert_eq!(
        with_server(&vm, &small, &server(ServerStatus::Active)),
        Some(VolumeStep::Extend {
            name: "data".into(),
            id: VolumeId::new("v1"),
            from: 10,
            to: 20
        })
    );
    let broken = look(vec![volume("v1", "data", 20, VolumeState::Error, None)]);
    assert!(
        matches!(before_server(&vm, &broken), Some(VolumeStep::Failed(ref m)) if m.contains("v1"))
    );
}

#[test]
fn a_duplicate_never_attached_is_deleted_and_the_attached_one_kept() {
    let vm = vm("[{name: data, size: 10}]");
    let two = look(vec![
        volume("v1", "data", 10, VolumeState::InUse, Some("s-1")),
        volume("v22", "data", 10, VolumeState::Available, None),
    ]);
    assert_eq!(
        with_server(&vm, &two, &server(ServerStatus::Active)),
        Some(VolumeStep::DeleteDuplicate {
            name: "data".into(),
            id: VolumeId::new("v22")
        })
    );
}

#[test]
fn a_volume_gone_or_detached_outside_kubernetes_is_told_apart_from_a_first_create() {
    let mut vm = vm("[{name: data, size: 10}]");
    vm.status = Some(verda_api::v1alpha1::VirtualMachineStatus {
        volumes: vec![VolumeStatus {
            name: "data".into(),
            id: "v1".into(),
            size: 10,
            type_: None,
            status: "in-use".into(),
            device: Some("/dev/vdb".into()),
        }],
        ..Default::default()
    });
    assert!(matches!(
        before_server(&vm, &look(vec![])),
        Some(VolumeStep::Create { was: Some(ref id), .. }) if id == "v1"
    ));
    let detached = look(vec![volume("v1", "data", 10, VolumeState::Available, None)]);
    assert!(matches!(
        with_server(&vm, &detached, &server(ServerStatus::Active)),
        Some(VolumeStep::Attach { reattach: true, .. })
    ));
}
