//! Contract tests: the real client's Cinder verbs and Nova's volume attachments against
//! the simulator, one rule of the real Cinder 29 / Nova 34 each (`sim/cinder-wire.md`):
//! creating → available, metadata filter, sizes, quotas, volume types, extend (only
//! larger; attached from 3.42), no delete while attached, attach/detach through Nova,
//! a server's delete detaches its data volumes, boot from volume and `min_disk`.
#![allow(clippy::unwrap_used)]

use crate::cloud_support;

use std::collections::BTreeMap;

use cloud_support::{eventually, harness};
use verda_operator::cloud::error::ErrorKind;
use verda_operator::cloud::ids::{ServerId, VolumeId};
use verda_operator::cloud::model::compute::{CreateServer, ServerStatus};
use verda_operator::cloud::model::volume::{BootVolumeRequest, CreateVolume, Volume, VolumeState};
use verda_operator::cloud::{BlockStorage, Compute, Network};
use verda_operator::sim::{Fault, FaultKind, SimConfig};

fn owned(uid: &str, name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("verda.linecorp.com:uid".to_owned(), uid.to_owned()),
        ("verda.linecorp.com:volume".to_owned(), name.to_owned()),
    ])
}

async fn settled(h: &cloud_support::Harness, id: &VolumeId, state: VolumeState) -> Volume {
    eventually("the volume settles", || async {
        let v = h.client.get_volume(id).await.unwrap();
        (v.status == state).then_some(v)
    })
    .await
}

async fn server(
    h: &cloud_support::Harness,
    name: &str,
    boot: Option<BootVolumeRequest>,
) -> ServerId {
    let request = CreateServer {
        name: name.to_owned(),
        image: h.client.find_image("centos79").await.unwrap().id,
        flavor: h.client.find_flavor("n3-1vcpu-2gb").await.unwrap().id,
        networks: vec![h.client.find_network("private").await.unwrap().id],
        boot_volume: boot,
        ..CreateServer::default()
    };
    h.client.create_server(&request).await.unwrap()
}

async fn active(h: &cloud_support::Harness, id: &ServerId) {
    eventually("server ACTIVE", || async {
        let s = h.client.get_server(id).await.unwrap();
        (s.status == ServerStatus::Active).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_volume_is_created_found_by_its_metadata_extended_and_deleted() {
    // Long enough an `extending` that the look right after the extend meets it, however
    // busy the machine.
    let h = harness(SimConfig {
        volume_delay: std::time::Duration::from_millis(1500),
        ..SimConfig::fast()
    })
    .await;
    let created = h
        .client
        .create_volume(&CreateVolume {
            name: "web-0-data".into(),
            size: 10,
            volume_type: Some("ssd".into()),
            metadata: owned("u-1", "data"),
            availability_zone: None,
        })
        .await
        .unwrap();
    assert_eq!(created.status, VolumeState::Creating);
    let v = settled(&h, &created.id, VolumeState::Available).await;
    assert_eq!((v.size, v.volume_type.as_deref()), (10, Some("ssd")));

    let found = h.client.list_volumes(&owned("u-1", "data")).await.unwrap();
    assert_eq!(
        found.iter().map(|v| &v.id).collect::<Vec<_>>(),
        [&created.id]
    );
    assert!(
        h.client
            .list_volumes(&owned("u-2", "data"))
            .await
            .unwrap()
            .is_empty()
    );

    let smaller = h.client.extend_volume(&created.id, 10).await.unwrap_err();
    assert!(
        matches!(smaller.kind(), ErrorKind::BadRequest { message } if message.contains("must be greater than current size")),
        "{smaller}"
    );
    h.client.extend_volume(&created.id, 12).await.unwrap();
    assert_eq!(
        h.client.get_volume(&created.id).await.unwrap().status,
        VolumeState::Extending
    );
    assert_eq!(
        settled(&h, &created.id, VolumeState::Available).await.size,
        12
    );

    let mut metadata = owned("u-1", "data");
    metadata.insert("extra".into(), "1".into());
    let set = h
        .client
        .set_volume_metadata(&created.id, &metadata)
        .await
        .unwrap();
    assert_eq!(set, metadata);

    h.client.delete_volume(&created.id).await.unwrap();
    eventually("the volume is gone", || async {
        h.client
            .get_volume(&created.id)
            .await
            .err()
            .filter(|e| e.is_not_found())
    })
    .await;
}

#[tokio::test]
async fn sizes_types_and_both_quotas_are_refused_with_cinders_words() {
    let h = harness(SimConfig::fast()).await;
    let request = |size: i32, t: Option<&str>| CreateVolume {
        name: "v".into(),
        size,
        volume_type: t.map(str::to_owned),
        metadata: BTreeMap::new(),
        availability_zone: None,
    };
    let zero = h.client.create_volume(&request(0, None)).await.unwrap_err();
    assert!(
        matches!(zero.kind(), ErrorKind::BadRequest { message } if message.contains("Invalid input for field/attribute size")),
        "{zero}"
    );
    let unknown = h
        .client
        .create_volume(&request(1, Some("gold")))
        .await
        .unwrap_err();
    assert_eq!(unknown.category(), "VolumeTypeNotFound", "{unknown}");

    h.sim.set_volume_quota(2, 15);
    let big = h
        .client
        .create_volume(&request(16, None))
        .await
        .unwrap_err();
    assert_eq!(big.category(), "QuotaExceeded", "{big}");
    assert!(
        big.to_string()
            .contains("gigabytes quota. Requested 16G, quota is 15G"),
        "{big}"
    );
    for _ in 0..2 {
        h.client.create_volume(&request(1, None)).await.unwrap();
    }
    let third = h.client.create_volume(&request(1, None)).await.unwrap_err();
    assert_eq!(third.category(), "QuotaExceeded", "{third}");
    assert!(
        third
            .to_string()
            .contains("Maximum number of volumes allowed (2)"),
        "{third}"
    );
}

#[tokio::test]
async fn a_volume_attaches_through_nova_and_is_freed_when_its_server_goes() {
    // Long enough a `creating` that the attach right after the create meets it, however
    // busy the machine.
    let h = harness(SimConfig {
        volume_delay: std::time::Duration::from_millis(1500),
        ..SimConfig::fast()
    })
    .await;
    let sid = server(&h, "web-0", None).await;
    let vol = h
        .client
        .create_volume(&CreateVolume {
            name: "web-0-data".into(),
            size: 1,
            ..CreateVolume::default()
        })
        .await
        .unwrap();
    // Still creating: Nova refuses it.
    let early = h.client.attach_volume(&sid, &vol.id).await.unwrap_err();
    assert!(
        matches!(
            early.kind(),
            ErrorKind::BadRequest { .. } | ErrorKind::Conflict { .. }
        ),
        "{early}"
    );
    settled(&h, &vol.id, VolumeState::Available).await;
    active(&h, &sid).await;
    let attachment = h.client.attach_volume(&sid, &vol.id).await.unwrap();
    assert_eq!(attachment.device.as_deref(), Some("/dev/vdb"));
    let v = h.client.get_volume(&vol.id).await.unwrap();
    assert_eq!(
        (v.status, v.attached_to()),
        (VolumeState::InUse, Some(&sid))
    );
    assert_eq!(
        h.client.get_server(&sid).await.unwrap().volumes_attached,
        std::slice::from_ref(&vol.id)
    );

    let twice = h.client.attach_volume(&sid, &vol.id).await.unwrap_err();
    assert!(twice.to_string().contains("already attached"), "{twice}");
    let busy = h.client.delete_volume(&vol.id).await.unwrap_err();
    assert!(
        busy.to_string().contains("must not be migrating, attached"),
        "{busy}"
    );
    // Extending an attached volume is allowed at 3.42.
    h.client.extend_volume(&vol.id, 2).await.unwrap();
    assert_eq!(settled(&h, &vol.id, VolumeState::InUse).await.size, 2);

    h.client.detach_volume(&sid, &vol.id).await.unwrap();
    assert_eq!(
        h.client.get_volume(&vol.id).await.unwrap().status,
        VolumeState::Available
    );
    let gone = h.client.detach_volume(&sid, &vol.id).await.unwrap_err();
    assert!(gone.is_not_found(), "{gone}");

    h.client.attach_volume(&sid, &vol.id).await.unwrap();
    h.client.delete_server(&sid).await.unwrap();
    let freed = settled(&h, &vol.id, VolumeState::Available).await;
    assert!(freed.attachments.is_empty());
}

#[tokio::test]
async fn a_server_boots_from_a_volume_of_at_least_the_images_min_disk_and_takes_it_along() {
    let h = harness(SimConfig::fast()).await;
    let image = h.client.find_image("centos79").await.unwrap();
    let request = |size: i32, t: Option<&str>| BootVolumeRequest {
        size,
        volume_type: t.map(str::to_owned),
    };
    let small = CreateServer {
        name: "bfv".into(),
        image: image.id.clone(),
        flavor: h.client.find_flavor("n3-1vcpu-2gb").await.unwrap().id,
        networks: vec![h.client.find_network("private").await.unwrap().id],
        boot_volume: Some(request(5, None)),
        ..CreateServer::default()
    };
    let refused = h.client.create_server(&small).await.unwrap_err();
    assert!(refused.to_string().contains("minimum size specified in image metadata. Volume size is 5368709120 bytes, minimum size is 10737418240 bytes"), "{refused}");
    let unknown = CreateServer {
        boot_volume: Some(request(20, Some("gold"))),
        ..small.clone()
    };
    let refused = h.client.create_server(&unknown).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("Volume type gold could not be found"),
        "{refused}"
    );

    let sid = server(&h, "bfv", Some(request(20, Some("ssd")))).await;
    active(&h, &sid).await;
    let s = h.client.get_server(&sid).await.unwrap();
    assert_eq!(
        s.image, None,
        "a server booted from a volume shows no image"
    );
    let [boot] = s.volumes_attached.as_slice() else {
        panic!("one boot volume: {:?}", s.volumes_attached);
    };
    let v = h.client.get_volume(boot).await.unwrap();
    assert_eq!(
        (v.size, v.volume_type.as_deref(), v.status),
        (20, Some("ssd"), VolumeState::InUse)
    );
    let root = h.client.detach_volume(&sid, boot).await.unwrap_err();
    assert!(root.to_string().contains("root device"), "{root}");
    h.client.delete_server(&sid).await.unwrap();
    eventually("the boot volume goes with its server", || async {
        h.client
            .get_volume(boot)
            .await
            .err()
            .filter(|e| e.is_not_found())
    })
    .await;
}

#[tokio::test]
async fn an_injected_failure_leaves_the_volume_in_error_and_deletable() {
    let h = harness(SimConfig::fast()).await;
    h.sim.inject(
        Fault::new(
            "block-storage",
            Some("create_volume"),
            FaultKind::ServerError,
        )
        .times(1),
    );
    let vol = h
        .client
        .create_volume(&CreateVolume {
            name: "bad".into(),
            size: 1,
            ..CreateVolume::default()
        })
        .await
        .unwrap();
    settled(&h, &vol.id, VolumeState::Error).await;
    h.client.delete_volume(&vol.id).await.unwrap();
}
