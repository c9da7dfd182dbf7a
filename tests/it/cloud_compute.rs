//! Contract tests: the real client's Nova and Glance verbs against the simulator.
#![allow(clippy::unwrap_used)]

use crate::cloud_support;

use std::collections::BTreeMap;

use cloud_support::{eventually, harness};
use verda_operator::cloud::ids::{FlavorId, ServerId};
use verda_operator::cloud::model::compute::{
    CreateServer, ServerGroupPolicy, ServerStatus, UserData,
};
use verda_operator::cloud::owner::{Owner, is_server_group_of};
use verda_operator::cloud::{Compute, MetadataMode, Network};
use verda_operator::sim::{Fault, FaultKind, SimConfig};

async fn server_request(h: &cloud_support::Harness, owner: &Owner, name: &str) -> CreateServer {
    let image = h.client.find_image("centos79").await.unwrap();
    let flavor = h.client.find_flavor("n3-1vcpu-2gb").await.unwrap();
    let network = h.client.find_network("private").await.unwrap();
    CreateServer {
        name: name.to_owned(),
        image: image.id,
        flavor: flavor.id,
        networks: vec![network.id],
        metadata: owner.server_metadata(),
        tags: vec![owner.tag()],
        ..CreateServer::default()
    }
}

async fn active(
    h: &cloud_support::Harness,
    id: &ServerId,
) -> verda_operator::cloud::model::compute::Server {
    eventually("server ACTIVE", || async {
        let s = h.client.get_server(id).await.unwrap();
        (s.status == ServerStatus::Active).then_some(s)
    })
    .await
}

#[tokio::test]
async fn server_lives_through_create_update_resize_and_delete_in_its_group() {
    let h = harness(SimConfig::fast()).await;
    let owner = Owner::new("0b6b6f0c-1111-4000-8000-00000000aaaa", "default", "web");
    let group = h
        .client
        .create_server_group(
            &owner.server_group_name(),
            ServerGroupPolicy::SoftAntiAffinity,
        )
        .await
        .unwrap();
    assert_eq!(group.policy, ServerGroupPolicy::SoftAntiAffinity);

    let mut req = server_request(&h, &owner, "verda-default-web-0").await;
    req.server_group = Some(group.id.clone());
    req.user_data = Some(UserData("#cloud-config\nruncmd: [echo hi]\n".into()));
    req.description = Some("first".into());
    req.key_name = Some("verda-key".into());
    req.security_groups = vec!["web".into()];
    let id = h.client.create_server(&req).await.unwrap();

    let server = active(&h, &id).await;
    assert_eq!(Owner::from_metadata(&server.metadata), Some(owner.clone()));
    assert!(server.tags.contains(&owner.tag()));
    assert_eq!(server.flavor.as_deref(), Some("n3-1vcpu-2gb"));
    assert!(
        server.primary_ip().is_some(),
        "an ACTIVE server has an address"
    );

    let listed = h.client.list_servers(&owner.uid).await.unwrap();
    assert_eq!(listed.iter().map(|s| &s.id).collect::<Vec<_>>(), vec![&id]);
    assert!(
        h.client
            .list_servers("someone-else")
            .await
            .unwrap()
            .is_empty()
    );

    let updated = h.client.update_server(&id, Some("second")).await.unwrap();
    assert_eq!(updated.description.as_deref(), Some("second"));
    let extra = BTreeMap::from([("role".to_owned(), "web".to_owned())]);
    let merged = h
        .client
        .set_server_metadata(&id, &extra, MetadataMode::Merge)
        .await
        .unwrap();
    assert_eq!(merged.get("role").map(String::as_str), Some("web"));
    assert_eq!(
        Owner::from_metadata(&merged),
        Some(owner.clone()),
        "merge keeps the owner keys"
    );

    let replaced = h
        .client
        .set_server_metadata(&id, &owner.server_metadata(), MetadataMode::Replace)
        .await
        .unwrap();
    assert_eq!(
        replaced,
        owner.server_metadata(),
        "replace drops keys not given"
    );

    h.client
        .resize_server(&id, &FlavorId::new("11"))
        .await
        .unwrap();
    eventually("VERIFY_RESIZE", || async {
        (h.client.get_server(&id).await.unwrap().status == ServerStatus::VerifyResize).then_some(())
    })
    .await;
    h.client.confirm_resize(&id).await.unwrap();
    let resized = active(&h, &id).await;
    assert_eq!(resized.flavor.as_deref(), Some("n3-2vcpu-4gb"));

    let group = h.client.get_server_group(&group.id).await.unwrap();
    assert_eq!(group.members, vec![id.clone()]);
    let groups = h.client.list_server_groups().await.unwrap();
    assert_eq!(
        groups
            .iter()
            .filter(|g| is_server_group_of(&g.name, &owner.uid))
            .count(),
        1
    );

    h.client.delete_server(&id).await.unwrap();
    eventually("server gone", || async {
        h.client
            .get_server(&id)
            .await
            .err()
            .filter(|e| e.is_not_found())
    })
    .await;
    h.client.delete_server_group(&group.id).await.unwrap();
    let gone = h.client.get_server_group(&group.id).await.unwrap_err();
    assert_eq!(gone.category(), "NotFound");
    h.report("server_lifecycle");
}

#[tokio::test]
async fn listing_by_owner_follows_pagination_past_one_page() {
    let h = harness(SimConfig {
        page_size_max: 2,
        ..SimConfig::fast()
    })
    .await;
    let owner = Owner::new("0b6b6f0c-2222-4000-8000-00000000bbbb", "default", "many");
    let other = Owner::new("0b6b6f0c-3333-4000-8000-00000000cccc", "default", "other");
    let template = server_request(&h, &owner, "x").await;
    for i in 0..5 {
        let req = CreateServer {
            name: format!("verda-default-many-{i}"),
            ..template.clone()
        };
        h.client.create_server(&req).await.unwrap();
    }
    let foreign = CreateServer {
        name: "verda-default-other-0".into(),
        metadata: other.server_metadata(),
        tags: vec![other.tag()],
        ..template.clone()
    };
    h.client.create_server(&foreign).await.unwrap();

    let before = h.calls("compute", "list_servers");
    let mine = h.client.list_servers(&owner.uid).await.unwrap();
    let pages = h.calls("compute", "list_servers") - before;
    let mut names: Vec<String> = mine.into_iter().map(|s| s.name).collect();
    names.sort();
    assert_eq!(
        names,
        (0..5)
            .map(|i| format!("verda-default-many-{i}"))
            .collect::<Vec<_>>()
    );
    assert!(
        pages >= 3,
        "5 servers in pages of 2 take at least 3 requests, took {pages}"
    );
    assert!(
        pages <= 4,
        "a full last page may cost one empty page, no more; took {pages}"
    );
    println!("pagination: 5 servers, page size 2, {pages} list_servers requests");
    h.report("pagination");
}

/// Nova pages server groups by `limit`/`offset` with no `next` link, capped by its
/// `[api] max_limit`: the listing goes on past a capped page and ends at a short one.
#[tokio::test]
async fn server_groups_are_listed_past_a_capped_page() {
    let h = harness(SimConfig {
        page_size_max: 2,
        ..SimConfig::fast()
    })
    .await;
    for i in 0..5 {
        h.client
            .create_server_group(&format!("group-{i}"), ServerGroupPolicy::AntiAffinity)
            .await
            .unwrap();
    }
    let before = h.calls("compute", "list_server_groups");
    let mut names: Vec<String> = h
        .client
        .list_server_groups()
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.name)
        .collect();
    names.sort();
    assert_eq!(
        names,
        (0..5).map(|i| format!("group-{i}")).collect::<Vec<_>>()
    );
    let pages = h.calls("compute", "list_server_groups") - before;
    assert_eq!(pages, 3, "pages of 2, 2 and 1");
    h.report("server group pages");
}

#[tokio::test]
async fn name_lookups_report_missing_and_ambiguous_names_with_candidates() {
    let h = harness(SimConfig::fast()).await;
    assert_eq!(
        h.client.find_flavor("10").await.unwrap().name,
        "n3-1vcpu-2gb"
    );
    let image = h
        .client
        .find_image("244965c2-7e98-469d-b7cc-fe423698200a")
        .await
        .unwrap();
    assert_eq!(image.name, "centos79");
    assert_eq!(h.client.get_image(&image.id).await.unwrap().id, image.id);
    assert!(h.client.list_images(None).await.unwrap().len() >= 4);
    assert_eq!(
        h.client.list_images(Some("centos79")).await.unwrap().len(),
        1
    );
    assert!(
        h.client
            .list_flavors()
            .await
            .unwrap()
            .iter()
            .any(|f| f.id.as_str() == "12")
    );
    assert_eq!(
        h.client
            .get_flavor(&FlavorId::new("12"))
            .await
            .unwrap()
            .vcpus,
        Some(4)
    );

    let missing_image = h.client.find_image("centos7").await.unwrap_err();
    assert_eq!(missing_image.category(), "ImageNotFound");
    assert!(missing_image.is_terminal());
    assert_eq!(
        missing_image.to_string(),
        "failed to find image centos7: image \"centos7\" not found"
    );
    let missing_flavor = h.client.find_flavor("n9-huge").await.unwrap_err();
    assert_eq!(missing_flavor.category(), "FlavorNotFound");

    let dup_flavor = h.client.find_flavor("dup-flavor").await.unwrap_err();
    assert_eq!(dup_flavor.category(), "AmbiguousName");
    assert!(
        dup_flavor.to_string().contains("candidates: 90, 91"),
        "{dup_flavor}"
    );
    let dup_image = h.client.find_image("dup-image").await.unwrap_err();
    assert_eq!(dup_image.category(), "AmbiguousName");
    assert!(
        dup_image
            .to_string()
            .contains("a1f3c2d4-1111-4c2b-8d2e-3f4a5b6c7d01"),
        "{dup_image}"
    );
    let dup_net = h.client.find_network("dup-network").await.unwrap_err();
    assert_eq!(dup_net.category(), "AmbiguousName");
    h.report("name_lookups");
}

#[tokio::test]
async fn instance_quota_is_reported_as_quota_exceeded_with_novas_message() {
    let h = harness(SimConfig {
        instance_quota: 2,
        ..SimConfig::fast()
    })
    .await;
    let owner = Owner::new("0b6b6f0c-4444-4000-8000-00000000dddd", "default", "q");
    let template = server_request(&h, &owner, "q").await;
    for i in 0..2 {
        h.client
            .create_server(&CreateServer {
                name: format!("q-{i}"),
                ..template.clone()
            })
            .await
            .unwrap();
    }
    let err = h
        .client
        .create_server(&CreateServer {
            name: "q-2".into(),
            ..template
        })
        .await
        .unwrap_err();
    assert_eq!(err.category(), "QuotaExceeded");
    assert!(err.is_terminal());
    assert!(
        err.to_string().starts_with(
            "failed to create server q-2: quota exceeded: Quota exceeded for instances"
        ),
        "{err}"
    );
    assert_eq!(
        h.calls("compute", "create_server"),
        3,
        "a 403 is never retried"
    );
    h.report("quota");
}

#[tokio::test]
async fn hard_anti_affinity_beyond_the_host_count_ends_in_error_with_no_valid_host() {
    let h = harness(SimConfig {
        hosts: 2,
        ..SimConfig::fast()
    })
    .await;
    let owner = Owner::new("0b6b6f0c-5555-4000-8000-00000000eeee", "default", "hard");
    let group = h
        .client
        .create_server_group(&owner.server_group_name(), ServerGroupPolicy::AntiAffinity)
        .await
        .unwrap();
    let template = CreateServer {
        server_group: Some(group.id.clone()),
        ..server_request(&h, &owner, "h").await
    };
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            h.client
                .create_server(&CreateServer {
                    name: format!("hard-{i}"),
                    ..template.clone()
                })
                .await
                .unwrap(),
        );
    }
    let third = eventually("third server settles", || async {
        let s = h.client.get_server(&ids[2]).await.unwrap();
        (s.status != ServerStatus::Build).then_some(s)
    })
    .await;
    assert_eq!(third.status, ServerStatus::Error);
    assert!(
        third.fault.as_ref().is_some_and(|f| f.is_no_valid_host()),
        "{:?}",
        third.fault
    );
    h.report("no_valid_host");
}

#[tokio::test]
async fn unknown_objects_are_not_found_and_bad_references_are_bad_requests() {
    let h = harness(SimConfig::fast()).await;
    let missing = h
        .client
        .get_server(&ServerId::new("00000000-0000-0000-0000-000000000000"))
        .await
        .unwrap_err();
    assert_eq!(missing.category(), "NotFound");
    assert!(missing.is_not_found());
    assert!(
        missing.to_string().contains("could not be found"),
        "{missing}"
    );

    let owner = Owner::new("0b6b6f0c-6666-4000-8000-00000000ffff", "default", "bad");
    let req = CreateServer {
        flavor: FlavorId::new("does-not-exist"),
        ..server_request(&h, &owner, "bad-0").await
    };
    let bad = h.client.create_server(&req).await.unwrap_err();
    assert_eq!(bad.category(), "BadRequest");
    assert!(
        bad.to_string()
            .contains("Flavor does-not-exist could not be found."),
        "{bad}"
    );
    h.report("not_found_and_bad_request");
}

#[tokio::test]
async fn servers_failed_or_deleted_outside_the_operator_show_in_status_and_listing() {
    let h = harness(SimConfig::fast()).await;
    let owner = Owner::new("0b6b6f0c-7777-4000-8000-000000000777", "default", "drift");
    let template = server_request(&h, &owner, "d").await;
    let a = h
        .client
        .create_server(&CreateServer {
            name: "drift-0".into(),
            ..template.clone()
        })
        .await
        .unwrap();
    let b = h
        .client
        .create_server(&CreateServer {
            name: "drift-1".into(),
            ..template
        })
        .await
        .unwrap();
    active(&h, &a).await;
    h.sim.set_server_error(a.as_str());
    let failed = h.client.get_server(&a).await.unwrap();
    assert_eq!(failed.status, ServerStatus::Error);
    assert!(failed.fault.is_some_and(|f| !f.is_no_valid_host()));
    h.sim.delete_server_out_of_band(b.as_str());
    let left: Vec<ServerId> = h
        .client
        .list_servers(&owner.uid)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(left, vec![a.clone()]);
    assert!(h.client.get_server(&b).await.unwrap_err().is_not_found());
    h.report("drift");
}

#[tokio::test]
async fn name_lookups_are_remembered_and_forgotten_when_a_create_is_refused() {
    let h = harness(SimConfig::fast()).await;
    let asked = |operation: &str| -> u64 {
        h.sim
            .request_counts()
            .iter()
            .filter(|((_, op), _)| op == operation)
            .map(|(_, n)| n)
            .sum()
    };
    let owner = Owner::new("00000000-0000-4000-8000-0000000000aa", "default", "cached");
    for _ in 0..3 {
        server_request(&h, &owner, "cached").await;
    }
    assert_eq!(
        (
            asked("list_images"),
            asked("list_flavors"),
            asked("list_networks")
        ),
        (1, 1, 1),
        "each name asked once for three creates"
    );

    // A name that is not there is asked every time: it may appear.
    for _ in 0..2 {
        assert!(h.client.find_image("centos7").await.is_err());
    }
    assert_eq!(asked("list_images"), 3);

    // A create Nova refuses may have used a stale answer: the next lookups ask again.
    let request = server_request(&h, &owner, "cached").await;
    h.sim.inject(Fault::new(
        "compute",
        Some("create_server"),
        FaultKind::Status(400),
    ));
    assert!(h.client.create_server(&request).await.is_err());
    h.sim.clear_faults();
    server_request(&h, &owner, "cached").await;
    assert_eq!(
        (
            asked("list_images"),
            asked("list_flavors"),
            asked("list_networks")
        ),
        (4, 2, 2)
    );
}
