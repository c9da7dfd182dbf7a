//! Nova wire tests: microversions, create → BUILD → ACTIVE, list filters and pages,
//! metadata, update, resize, delete, validation bodies, quota, server groups.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use sim_support::{Client, json_of};
use verda_operator::sim::SimConfig;

#[tokio::test]
async fn responses_echo_microversion_in_both_headers() {
    let c = Client::fast().await;
    let resp = c
        .req(Method::GET, "/compute/v2.1/servers")
        .header("x-openstack-nova-api-version", "2.64")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["openstack-api-version"], "compute 2.64");
    assert_eq!(resp.headers()["x-openstack-nova-api-version"], "2.64");
    assert_eq!(resp.headers().get_all("vary").iter().count(), 2);
    assert_eq!(
        resp.headers()["x-openstack-request-id"],
        resp.headers()["x-compute-request-id"]
    );
}

#[tokio::test]
async fn unsupported_microversion_is_406_with_compute_fault() {
    let c = Client::fast().await;
    let resp = c.nova(Method::GET, "/servers", 999).send().await.unwrap();
    assert_eq!(resp.status(), 406);
    assert_eq!(
        json_of(resp).await,
        json!({"computeFault": {"code": 406, "message": "Version 2.999 is not supported by the API. Minimum is 2.1 and maximum is 2.104."}})
    );
}

#[tokio::test]
async fn server_builds_then_becomes_active_with_private_address() {
    let c = Client::start(SimConfig {
        build_delay: Duration::from_millis(500),
        ..SimConfig::fast()
    })
    .await;
    let id = c
        .create_server(
            "web-0",
            json!({"metadata": {"owner": "uid-1"}, "tags": ["k8s"], "user_data": "bHM="}),
        )
        .await;
    let building = json_of(
        c.nova(Method::GET, &format!("/servers/{id}"), 64)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(building["server"]["status"], "BUILD");
    assert_eq!(building["server"]["addresses"], json!({}));
    assert!(building["server"].get("security_groups").is_none());
    let active = c.wait_server(&id).await;
    assert_eq!(active["status"], "ACTIVE");
    assert_eq!(active["metadata"]["owner"], "uid-1");
    assert_eq!(active["tags"], json!(["k8s"]));
    assert_eq!(active["flavor"]["original_name"], "n3-1vcpu-2gb");
    let addr = active["addresses"]["private"][0]["addr"].as_str().unwrap();
    assert!(addr.starts_with("10.0."), "{addr}");
}

#[tokio::test]
async fn list_filters_by_tags_and_name_regex() {
    let c = Client::fast().await;
    c.create_server("web-1", json!({"tags": ["a", "b"]})).await;
    c.create_server("web-2", json!({"tags": ["a"]})).await;
    c.create_server("db-1", json!({"tags": ["b"]})).await;
    let names = |v: serde_json::Value| {
        v["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let both = json_of(
        c.nova(Method::GET, "/servers/detail?tags=a,b", 64)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(names(both), vec!["web-1"]);
    let web = json_of(
        c.nova(Method::GET, "/servers/detail?name=%5Eweb-", 64)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(names(web), vec!["web-2", "web-1"]);
}

#[tokio::test]
async fn pagination_follows_next_links_past_one_page() {
    let c = Client::start(SimConfig {
        page_size_max: 2,
        ..SimConfig::fast()
    })
    .await;
    for i in 0..5 {
        c.create_server(&format!("vm-{i}"), json!({"tags": ["owner-x"]}))
            .await;
    }
    let mut url = format!("{}/compute/v2.1/servers/detail?tags=owner-x", c.base);
    let mut seen = Vec::new();
    for _ in 0..10 {
        let resp = c
            .http
            .get(&url)
            .header("x-auth-token", &c.token)
            .send()
            .await
            .unwrap();
        let body = json_of(resp).await;
        seen.extend(
            body["servers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["id"].clone()),
        );
        match body["servers_links"][0]["href"].as_str() {
            Some(next) => url = next.to_string(),
            None => break,
        }
    }
    assert_eq!(seen.len(), 5);
}

#[tokio::test]
async fn deleted_server_is_gone_after_the_delete_delay() {
    let c = Client::fast().await;
    let id = c.create_server("gone", json!({})).await;
    let resp = c
        .nova(Method::DELETE, &format!("/servers/{id}"), 64)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    tokio::time::sleep(Duration::from_millis(30)).await;
    let resp = c
        .nova(Method::GET, &format!("/servers/{id}"), 64)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(
        json_of(resp).await["itemNotFound"]["message"],
        format!("Instance {id} could not be found.")
    );
}

#[tokio::test]
async fn metadata_put_replaces_and_post_merges() {
    let c = Client::fast().await;
    let id = c
        .create_server("meta", json!({"metadata": {"a": "1", "b": "2"}}))
        .await;
    let put = c
        .nova(Method::PUT, &format!("/servers/{id}/metadata"), 64)
        .json(&json!({"metadata": {"c": "3"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(put).await, json!({"metadata": {"c": "3"}}));
    let post = c
        .nova(Method::POST, &format!("/servers/{id}/metadata"), 64)
        .json(&json!({"metadata": {"d": "4"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(post).await,
        json!({"metadata": {"c": "3", "d": "4"}})
    );
}

#[tokio::test]
async fn description_update_needs_2_19() {
    let c = Client::fast().await;
    let id = c.create_server("desc", json!({})).await;
    let old = c
        .nova(Method::PUT, &format!("/servers/{id}"), 18)
        .json(&json!({"server": {"description": "x"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), 400);
    let new = c
        .nova(Method::PUT, &format!("/servers/{id}"), 19)
        .json(&json!({"server": {"description": "x"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(new).await["server"]["description"], "x");
}

#[tokio::test]
async fn resize_goes_to_verify_resize_and_confirm_applies_new_flavor() {
    let c = Client::fast().await;
    let id = c.create_server("grow", json!({})).await;
    c.wait_server(&id).await;
    let resp = c
        .nova(Method::POST, &format!("/servers/{id}/action"), 64)
        .json(&json!({"resize": {"flavorRef": "11"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    assert_eq!(c.wait_server(&id).await["status"], "VERIFY_RESIZE");
    let resp = c
        .nova(Method::POST, &format!("/servers/{id}/action"), 64)
        .json(&json!({"confirmResize": null}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    let server = c.wait_server(&id).await;
    assert_eq!(
        (
            server["status"].as_str(),
            server["flavor"]["original_name"].as_str()
        ),
        (Some("ACTIVE"), Some("n3-2vcpu-4gb"))
    );
}

#[tokio::test]
async fn create_validation_answers_recorded_400_bodies() {
    let c = Client::fast().await;
    let cases = [
        (
            json!({"flavorRef": "does-not-exist"}),
            64,
            "Flavor does-not-exist could not be found.",
        ),
        (
            json!({"imageRef": "00000000-0000-0000-0000-000000000000"}),
            64,
            "Can not find requested image",
        ),
        (
            json!({"networks": [{"uuid": "00000000-0000-0000-0000-000000000000"}]}),
            64,
            "Network 00000000-0000-0000-0000-000000000000 could not be found.",
        ),
        (
            json!({"user_data": "not base64!!"}),
            64,
            "Invalid input for field/attribute user_data. Value: not base64!!. 'not base64!!' is not a 'base64'",
        ),
    ];
    for (change, minor, message) in cases {
        let mut server = json!({"name": "bad", "imageRef": "244965c2-7e98-469d-b7cc-fe423698200a", "flavorRef": "10", "networks": [{"uuid": "89908bff-e0fe-45be-b92d-5828f5ddc763"}]});
        for (k, v) in change.as_object().unwrap() {
            server[k] = v.clone();
        }
        let resp = c
            .nova(Method::POST, "/servers", minor)
            .json(&json!({"server": server}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
        assert_eq!(
            json_of(resp).await,
            json!({"badRequest": {"code": 400, "message": message}})
        );
    }
    let mut server = json!({"name": "bad", "imageRef": "244965c2-7e98-469d-b7cc-fe423698200a", "flavorRef": "10", "networks": "auto"});
    server["tags"] = json!(["a"]);
    let resp = c
        .nova(Method::POST, "/servers", 51)
        .json(&json!({"server": server}))
        .send()
        .await
        .unwrap();
    let msg = json_of(resp).await["badRequest"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.ends_with("Additional properties are not allowed ('tags' was unexpected)"),
        "{msg}"
    );
}

#[tokio::test]
async fn instance_quota_answers_recorded_403() {
    let c = Client::start(SimConfig {
        instance_quota: 2,
        ..SimConfig::fast()
    })
    .await;
    c.create_server("q1", json!({})).await;
    c.create_server("q2", json!({})).await;
    let body = json!({"server": {"name": "q3", "imageRef": "244965c2-7e98-469d-b7cc-fe423698200a", "flavorRef": "10", "networks": "auto"}});
    let resp = c
        .nova(Method::POST, "/servers", 64)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(
        json_of(resp).await,
        json!({"forbidden": {"code": 403, "message": "Quota exceeded for instances: Requested 1, but already used 2 of 2 instances"}})
    );
}

#[tokio::test]
async fn hard_anti_affinity_beyond_host_count_ends_in_no_valid_host() {
    let c = Client::start(SimConfig {
        hosts: 3,
        ..SimConfig::fast()
    })
    .await;
    let group = c
        .nova(Method::POST, "/os-server-groups", 64)
        .json(&json!({"server_group": {"name": "hard", "policy": "anti-affinity"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(group.status(), 200);
    let gid = json_of(group).await["server_group"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(
            c.create_server(
                &format!("aa-{i}"),
                json!({"os:scheduler_hints": {"group": gid}}),
            )
            .await,
        );
    }
    let mut hosts = std::collections::BTreeSet::new();
    for id in &ids[..3] {
        let s = c.wait_server(id).await;
        assert_eq!(s["status"], "ACTIVE");
        hosts.insert(s["hostId"].as_str().unwrap().to_string());
    }
    assert_eq!(hosts.len(), 3);
    let failed = c.wait_server(&ids[3]).await;
    assert_eq!(failed["status"], "ERROR");
    assert_eq!(
        failed["fault"]["message"],
        "No valid host was found. There are not enough hosts available."
    );
    assert_eq!(failed["addresses"], json!({}));
    let group = json_of(
        c.nova(Method::GET, &format!("/os-server-groups/{gid}"), 64)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        group["server_group"]["members"].as_array().unwrap().len(),
        4
    );
}

#[tokio::test]
async fn server_group_rules_only_with_anti_affinity() {
    let c = Client::fast().await;
    let body = json!({"server_group": {"name": "s", "policy": "soft-anti-affinity", "rules": {"max_server_per_host": 2}}});
    let resp = c
        .nova(Method::POST, "/os-server-groups", 64)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(
        json_of(resp).await["badRequest"]["message"],
        "Only anti-affinity policy supports rules."
    );
}

#[tokio::test]
async fn flavor_lookup_by_name_is_404_so_clients_list() {
    let c = Client::fast().await;
    let resp = c
        .nova(Method::GET, "/flavors/n3-1vcpu-2gb", 64)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let list = json_of(
        c.nova(Method::GET, "/flavors/detail", 64)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let dups = list["flavors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == "dup-flavor")
        .count();
    assert_eq!(dups, 2);
}

/// As the real Nova 34 answered (`openstack server stop/start`, recorded in
/// `sim/nova-power.md`): 202 with no body, a task_state while it powers off or on, then
/// SHUTOFF (vm_state `stopped`, power state 4) or ACTIVE; the same action again is 409
/// naming the vm_state, and any action during the task is 409 naming the task_state.
#[tokio::test]
async fn stop_and_start_answer_as_the_real_nova() {
    // Tasks last 300 ms here, long enough to be seen.
    let c = Client::start(SimConfig {
        build_delay: Duration::from_millis(300),
        ..SimConfig::fast()
    })
    .await;
    let id = c.create_server("power", json!({})).await;
    c.wait_server(&id).await;
    let act = |body: serde_json::Value| {
        c.nova(Method::POST, &format!("/servers/{id}/action"), 100)
            .json(&body)
            .send()
    };
    let resp = act(json!({"os-stop": null})).await.unwrap();
    assert_eq!(resp.status(), 202);
    assert_eq!(resp.content_length(), Some(0));
    let resp = act(json!({"os-start": null})).await.unwrap();
    assert_eq!(resp.status(), 409);
    assert_eq!(
        json_of(resp).await["conflictingRequest"]["message"],
        format!("Cannot 'start' instance {id} while it is in task_state powering-off")
    );
    let server = c.wait_server(&id).await;
    assert_eq!(
        (
            server["status"].as_str(),
            server["OS-EXT-STS:vm_state"].as_str(),
            server["OS-EXT-STS:power_state"].as_i64()
        ),
        (Some("SHUTOFF"), Some("stopped"), Some(4))
    );
    let resp = act(json!({"os-stop": null})).await.unwrap();
    assert_eq!(resp.status(), 409);
    assert_eq!(
        json_of(resp).await,
        json!({"conflictingRequest": {"code": 409, "message": format!("Cannot 'stop' instance {id} while it is in vm_state stopped")}})
    );
    assert_eq!(act(json!({"os-start": null})).await.unwrap().status(), 202);
    assert_eq!(c.wait_server(&id).await["status"], "ACTIVE");
    let resp = act(json!({"os-start": null})).await.unwrap();
    assert_eq!(
        json_of(resp).await["conflictingRequest"]["message"],
        format!("Cannot 'start' instance {id} while it is in vm_state active")
    );
}

/// As the real Nova 34 answered a project member (`sim/nova-zones.md`): the zone
/// listing names every zone with a compute host, `hosts: null`; a zone whose compute
/// service is disabled stays listed, not available, after the available ones, and a
/// create naming it (or an unknown zone) is 400 with no server made; a server asked
/// into a zone shows it from the first look, and one with no zone shows its host's.
#[tokio::test]
async fn availability_zones_answer_as_the_real_nova() {
    let c = Client::fast().await;
    let listing = || async {
        let resp = c
            .nova(Method::GET, "/os-availability-zone", 100)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        json_of(resp).await
    };
    let zone = |name: &str, available: bool| json!({"zoneName": name, "zoneState": {"available": available}, "hosts": null});
    assert_eq!(
        listing().await,
        json!({"availabilityZoneInfo": [zone("az-1", true), zone("az-2", true), zone("az-3", true)]})
    );
    let detail = c
        .nova(Method::GET, "/os-availability-zone/detail", 100)
        .send()
        .await
        .unwrap();
    assert_eq!(detail.status(), 403);

    c.sim.set_zone_enabled("az-2", false);
    assert_eq!(
        listing().await,
        json!({"availabilityZoneInfo": [zone("az-1", true), zone("az-3", true), zone("az-2", false)]})
    );
    let before = c.sim.servers().len();
    for refused in ["az-2", "az-9"] {
        let body = json!({"server": {"name": "z", "imageRef": "244965c2-7e98-469d-b7cc-fe423698200a",
            "flavorRef": "10", "networks": [{"uuid": "89908bff-e0fe-45be-b92d-5828f5ddc763"}],
            "availability_zone": refused}});
        let resp = c
            .nova(Method::POST, "/servers", 100)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{refused}");
        assert_eq!(
            json_of(resp).await,
            json!({"badRequest": {"code": 400, "message": "The requested availability zone is not available"}})
        );
    }
    assert_eq!(c.sim.servers().len(), before, "no server is made");
    c.sim.set_zone_enabled("az-2", true);
    assert_eq!(
        listing().await["availabilityZoneInfo"][1],
        zone("az-2", true)
    );

    let asked = c
        .create_server("in-az-3", json!({"availability_zone": "az-3"}))
        .await;
    let first = c
        .nova(Method::GET, &format!("/servers/{asked}"), 100)
        .send()
        .await
        .unwrap();
    let first = json_of(first).await;
    assert_eq!(first["server"]["OS-EXT-AZ:availability_zone"], "az-3");
    assert_eq!(first["server"]["pinned_availability_zone"], "az-3");
    let anywhere = c.create_server("anywhere", json!({})).await;
    let server = c.wait_server(&anywhere).await;
    let at = server["OS-EXT-AZ:availability_zone"].as_str().unwrap();
    assert!(["az-1", "az-2", "az-3"].contains(&at), "{at}");
    assert_eq!(server["pinned_availability_zone"], serde_json::Value::Null);
}
