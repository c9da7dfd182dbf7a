//! Cinder wire tests: the simulator's answers where our client never looks — the
//! project in the URL, microversion negotiation, extend of an attached volume before
//! 3.42 — as the real Cinder 29 gives them (`sim/cinder-wire.md`).
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use reqwest::Method;
use serde_json::json;
use sim_support::{Client, json_of};
use verda_operator::sim::{Fault, FaultKind};

const PROJECT: &str = "4fe49c509df94ac8bb7350b83b09a91e";

fn cinder(c: &Client, method: Method, path: &str, minor: u32) -> reqwest::RequestBuilder {
    c.req(method, &format!("/volume/v3/{PROJECT}{path}"))
        .header("openstack-api-version", format!("volume 3.{minor}"))
}

#[tokio::test]
async fn another_projects_url_is_malformed_and_an_unknown_version_refused() {
    let c = Client::fast().await;
    let other = c
        .req(
            Method::GET,
            "/volume/v3/00000000000000000000000000000000/volumes/detail",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 400);
    assert_eq!(
        json_of(other).await,
        json!({"badRequest": {"code": 400, "message": "Malformed request url"}})
    );
    let resp = cinder(&c, Method::GET, "/volumes/detail", 99)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 406);
    assert_eq!(
        json_of(resp).await,
        json!({"computeFault": {"code": 406, "message": "Version 3.99 is not supported by the API. Minimum is 3.0 and maximum is 3.71."}})
    );
    let ok = cinder(&c, Method::GET, "/volumes/detail", 42)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.headers()["openstack-api-version"], "volume 3.42");
}

#[tokio::test]
async fn an_attached_volume_extends_only_from_3_42() {
    let c = Client::fast().await;
    let server = c.create_server("web", json!({})).await;
    c.wait_server(&server).await;
    let created = cinder(&c, Method::POST, "/volumes", 42)
        .json(&json!({"volume": {"size": 1, "name": "v"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 202);
    let id = json_of(created).await["volume"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let attached = loop {
        let resp = c
            .nova(
                Method::POST,
                &format!("/servers/{server}/os-volume_attachments"),
                67,
            )
            .json(&json!({"volumeAttachment": {"volumeId": id}}))
            .send()
            .await
            .unwrap();
        if resp.status() == 200 {
            break json_of(resp).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(attached["volumeAttachment"]["device"], "/dev/vdb");
    assert!(
        attached["volumeAttachment"].get("tag").is_none(),
        "tag from 2.70 only"
    );
    let extend = json!({"os-extend": {"new_size": 2}});
    let old = cinder(&c, Method::POST, &format!("/volumes/{id}/action"), 0)
        .json(&extend)
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), 400);
    let message = json_of(old).await["badRequest"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.ends_with("status must be '{'status': 'available'}' to extend, currently in-use."),
        "{message}"
    );
    let new = cinder(&c, Method::POST, &format!("/volumes/{id}/action"), 42)
        .json(&extend)
        .send()
        .await
        .unwrap();
    assert_eq!(new.status(), 202);
}

/// `openstack server create --image` (python-openstackclient 10.2) sends the image boot
/// as a mapping beside `imageRef`; Nova boots the image, with no volume.
#[tokio::test]
async fn the_clis_local_image_mapping_boots_the_image_without_a_volume() {
    let c = Client::fast().await;
    let image = "244965c2-7e98-469d-b7cc-fe423698200a";
    let local = |uuid: &str| {
        json!({"block_device_mapping_v2": [{"source_type": "image", "destination_type": "local",
            "boot_index": 0, "uuid": uuid, "delete_on_termination": true}]})
    };
    let id = c.create_server("cli-vm", local(image)).await;
    let server = c.wait_server(&id).await;
    assert_eq!(server["status"], "ACTIVE", "{server}");
    assert_eq!(server["os-extended-volumes:volumes_attached"], json!([]));
    let volumes = cinder(&c, Method::GET, "/volumes/detail", 3)
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(volumes).await["volumes"], json!([]));
    let mut body = json!({"server": {"name": "bad", "imageRef": image, "flavorRef": "10",
        "networks": "none"}});
    body["server"]["block_device_mapping_v2"] =
        local("00000000-0000-4000-8000-000000000000")["block_device_mapping_v2"].clone();
    let refused = c
        .nova(Method::POST, "/servers", 64)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    assert_eq!(
        json_of(refused).await["badRequest"]["message"],
        "Image 00000000-0000-4000-8000-000000000000 could not be found."
    );
}

/// A server booted from a volume shows `"image": ""` at every microversion, 2.98's image
/// properties included (`openstack server create --boot-from-volume … --wait` reads it).
#[tokio::test]
async fn a_server_booted_from_a_volume_shows_no_image_at_2_100() {
    let c = Client::fast().await;
    let image = "244965c2-7e98-469d-b7cc-fe423698200a";
    let bdm = json!({"block_device_mapping_v2": [{"source_type": "image",
        "destination_type": "volume", "boot_index": 0, "uuid": image, "volume_size": 10,
        "delete_on_termination": true}]});
    let id = c.create_server("from-volume", bdm).await;
    c.wait_server(&id).await;
    let shown = c
        .nova(Method::GET, &format!("/servers/{id}"), 100)
        .send()
        .await
        .unwrap();
    assert_eq!(shown.status(), 200);
    assert_eq!(json_of(shown).await["server"]["image"], "");
}

/// Cinder's create schema takes `metadata: null` (python-openstackclient 10.2 sends it
/// when no `--property` is given); the metadata update's does not.
#[tokio::test]
async fn a_create_takes_null_metadata_and_a_metadata_update_does_not() {
    let c = Client::fast().await;
    let created = cinder(&c, Method::POST, "/volumes", 3)
        .json(
            &json!({"volume": {"size": 1, "name": "cli", "metadata": null,
            "description": null, "volume_type": null}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 202);
    let id = json_of(created).await["volume"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let update = cinder(&c, Method::PUT, &format!("/volumes/{id}/metadata"), 3)
        .json(&json!({"metadata": null}))
        .send()
        .await
        .unwrap();
    assert_eq!(update.status(), 400);
}

/// As the real systems' Cinder 29 answered (`sim/nova-zones.md`): one zone, `nova`,
/// without `hosts`; a volume asked into another zone is made in `nova`.
#[tokio::test]
async fn availability_zones_answer_as_the_real_cinder() {
    let c = Client::fast().await;
    let resp = cinder(&c, Method::GET, "/os-availability-zone", 71)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        json_of(resp).await,
        json!({"availabilityZoneInfo": [{"zoneName": "nova", "zoneState": {"available": true}}]})
    );
    let made = cinder(&c, Method::POST, "/volumes", 71)
        .json(&json!({"volume": {"name": "z", "size": 1, "availability_zone": "az-2"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 202);
    assert_eq!(json_of(made).await["volume"]["availability_zone"], "nova");
}

/// Recorded on the real systems: a server deleted while cinder-api was down is gone from
/// Nova, but its volume keeps the attachment (`in-use`) until the owner deletes it
/// through the attachments API (3.27+; a route Cinder does not have before).
#[tokio::test]
async fn a_server_deleted_while_cinder_is_down_leaves_its_attachment_for_the_owner_to_delete() {
    let c = Client::fast().await;
    let server = c.create_server("db", json!({})).await;
    c.wait_server(&server).await;
    let made = cinder(&c, Method::POST, "/volumes", 42)
        .json(&json!({"volume": {"size": 1, "name": "data"}}))
        .send()
        .await
        .unwrap();
    let volume = json_of(made).await["volume"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let attach = json!({"volumeAttachment": {"volumeId": volume}});
    let path = format!("/servers/{server}/os-volume_attachments");
    while c
        .nova(Method::POST, &path, 67)
        .json(&attach)
        .send()
        .await
        .unwrap()
        .status()
        != 200
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    c.sim
        .inject(Fault::new("block-storage", None, FaultKind::Status(503)));
    let path = format!("/servers/{server}");
    let deleted = c.nova(Method::DELETE, &path, 67).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    while c
        .nova(Method::GET, &path, 67)
        .send()
        .await
        .unwrap()
        .status()
        != 404
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    c.sim.clear_faults();
    let show = |minor| cinder(&c, Method::GET, &format!("/volumes/{volume}"), minor);
    let held = json_of(show(42).send().await.unwrap()).await["volume"].clone();
    assert_eq!(held["status"], "in-use");
    assert_eq!(held["attachments"][0]["server_id"], json!(server));
    let attachment = held["attachments"][0]["attachment_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let delete = |minor| {
        cinder(
            &c,
            Method::DELETE,
            &format!("/attachments/{attachment}"),
            minor,
        )
    };
    let too_old = delete(26).send().await.unwrap();
    assert_eq!(too_old.status(), 404);
    assert_eq!(
        json_of(too_old).await,
        json!({"itemNotFound": {"code": 404, "message": "The resource could not be found."}})
    );
    let gone = delete(42).send().await.unwrap();
    assert_eq!(gone.status(), 200);
    assert_eq!(json_of(gone).await, json!({"attachments": []}));
    let free = json_of(show(42).send().await.unwrap()).await["volume"].clone();
    assert_eq!(
        (&free["status"], &free["attachments"]),
        (&json!("available"), &json!([]))
    );
    let again = delete(42).send().await.unwrap();
    assert_eq!(again.status(), 404);
    let message =
        format!("Volume attachment could not be found with filter: attachment_id = {attachment}.");
    assert_eq!(
        json_of(again).await,
        json!({"itemNotFound": {"code": 404, "message": message}})
    );
}
