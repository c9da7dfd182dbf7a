//! The simulator's Designate, as the real Designate 23 answered (`sim/designate-wire.md`):
//! zones are `PENDING` until served and made with their NS and SOA record sets; record
//! sets are created (202, `PENDING`), listed by name and type in `limit`/`marker` pages
//! with Designate's `links.next`, updated and deleted (gone from the API at once); a
//! zone is patched (`PENDING` `UPDATE`), lists its name servers, and once deleted is
//! shown `PENDING` `DELETE` until its name servers drop it (`ERROR` `DELETE` when the
//! delete raced a record set's change, which leaves the zone `PENDING` `UPDATE`); its
//! name is unique across projects. Each refusal is the recorded one, word for word.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use reqwest::Method;
use serde_json::{Value, json};
use sim_support::Client;

use crate::sim_barbican::send;

const ZONES: &str = "/dns/v2/zones";

async fn zone(c: &Client, name: &str) -> String {
    let body = json!({"name": name, "email": "hostmaster@wire.test", "ttl": 3600});
    let (status, zone) = send(c, Method::POST, ZONES, Some(body)).await;
    assert_eq!(status, 202, "{zone}");
    assert_eq!(
        zone["status"], "PENDING",
        "a new zone waits for its name servers"
    );
    assert_eq!(zone["action"], "CREATE");
    zone["id"].as_str().unwrap().to_owned()
}

fn a(name: &str, address: &str) -> Value {
    json!({"name": name, "type": "A", "records": [address], "ttl": 300, "description": "verda-uid-x verda-cluster-y"})
}

#[tokio::test]
async fn zones_come_with_ns_and_soa_and_are_found_by_name() {
    let c = Client::fast().await;
    let id = zone(&c, "wire.test.").await;
    let (status, listed) = send(&c, Method::GET, &format!("{ZONES}?name=wire.test."), None).await;
    assert_eq!(status, 200);
    assert_eq!(listed["zones"][0]["id"], id.as_str());
    assert_eq!(listed["metadata"]["total_count"], 1);
    let (_, none) = send(&c, Method::GET, &format!("{ZONES}?name=other.test."), None).await;
    assert_eq!(none["zones"], json!([]));
    let (_, sets) = send(&c, Method::GET, &format!("{ZONES}/{id}/recordsets"), None).await;
    let types: Vec<&str> = sets["recordsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["NS", "SOA"]);
    let (status, dup) = send(
        &c,
        Method::POST,
        ZONES,
        Some(json!({"name": "wire.test.", "email": "a@b.c"})),
    )
    .await;
    assert_eq!(
        (status, dup["type"].as_str().unwrap()),
        (409, "duplicate_zone")
    );
}

#[tokio::test]
async fn record_sets_are_created_pending_listed_updated_and_deleted() {
    let c = Client::fast().await;
    let z = zone(&c, "wire.test.").await;
    let sets = format!("{ZONES}/{z}/recordsets");
    let (status, made) = send(
        &c,
        Method::POST,
        &sets,
        Some(a("www.wire.test.", "192.0.2.10")),
    )
    .await;
    assert_eq!(status, 202, "{made}");
    assert_eq!(
        (made["status"].as_str(), made["action"].as_str()),
        (Some("PENDING"), Some("CREATE"))
    );
    assert_eq!(made["zone_name"], "wire.test.");
    let id = made["id"].as_str().unwrap().to_owned();
    let (_, found) = send(
        &c,
        Method::GET,
        &format!("{sets}?name=www.wire.test.&type=A"),
        None,
    )
    .await;
    assert_eq!(found["recordsets"].as_array().unwrap().len(), 1);
    assert_eq!(found["recordsets"][0]["records"], json!(["192.0.2.10"]));
    assert_eq!(
        found["recordsets"][0]["description"],
        "verda-uid-x verda-cluster-y"
    );
    let body = json!({"records": ["192.0.2.10", "192.0.2.12"], "ttl": 60});
    let (status, updated) = send(&c, Method::PUT, &format!("{sets}/{id}"), Some(body)).await;
    assert_eq!((status, updated["action"].as_str()), (202, Some("UPDATE")));
    assert_eq!(
        (updated["ttl"].as_i64(), updated["version"].as_i64()),
        (Some(60), Some(2))
    );
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let (_, shown) = send(&c, Method::GET, &format!("{sets}/{id}"), None).await;
    assert_eq!(
        (shown["status"].as_str(), shown["action"].as_str()),
        (Some("ACTIVE"), Some("NONE"))
    );
    let (status, deleted) = send(&c, Method::DELETE, &format!("{sets}/{id}"), None).await;
    assert_eq!((status, deleted["action"].as_str()), (202, Some("DELETE")));
    let (status, gone) = send(&c, Method::GET, &format!("{sets}/{id}"), None).await;
    assert_eq!(
        (status, gone["type"].as_str()),
        (404, Some("recordset_not_found"))
    );
    assert_eq!(gone["message"], "Could not find RecordSet");
}

#[tokio::test]
async fn refusals_are_designates_own() {
    let c = Client::fast().await;
    let z = zone(&c, "wire.test.").await;
    let sets = format!("{ZONES}/{z}/recordsets");
    send(
        &c,
        Method::POST,
        &sets,
        Some(a("www.wire.test.", "192.0.2.10")),
    )
    .await;
    let (status, dup) = send(
        &c,
        Method::POST,
        &sets,
        Some(a("www.wire.test.", "192.0.2.11")),
    )
    .await;
    assert_eq!(
        (status, dup["type"].as_str(), dup["message"].as_str()),
        (
            409,
            Some("duplicate_recordset"),
            Some("Duplicate RecordSet")
        )
    );
    let (status, outside) = send(
        &c,
        Method::POST,
        &sets,
        Some(a("www.other.test.", "192.0.2.11")),
    )
    .await;
    assert_eq!(
        (status, outside["type"].as_str()),
        (400, Some("invalid_recordset_location"))
    );
    assert_eq!(
        outside["message"],
        "RecordSet is not contained within it's parent zone"
    );
    let (status, family) = send(&c, Method::POST, &sets, Some(a("x.wire.test.", "fd00::1"))).await;
    assert_eq!(
        (status, family["type"].as_str()),
        (400, Some("invalid_object"))
    );
    assert_eq!(
        family["errors"]["errors"][0]["message"],
        "'fd00::1' is not a 'A' Record"
    );
    let missing = format!("{ZONES}/00000000-0000-0000-0000-000000000000/recordsets");
    let (status, no_zone) = send(&c, Method::GET, &missing, None).await;
    assert_eq!(
        (status, no_zone["message"].as_str()),
        (404, Some("Could not find Zone"))
    );
}

#[tokio::test]
async fn pages_follow_links_next_with_a_marker() {
    let c = Client::fast().await;
    let z = zone(&c, "wire.test.").await;
    let sets = format!("{ZONES}/{z}/recordsets");
    for i in 0..3 {
        send(
            &c,
            Method::POST,
            &sets,
            Some(a(&format!("h{i}.wire.test."), "192.0.2.1")),
        )
        .await;
    }
    let (_, first) = send(&c, Method::GET, &format!("{sets}?limit=2"), None).await;
    assert_eq!(first["recordsets"].as_array().unwrap().len(), 2);
    assert_eq!(first["metadata"]["total_count"], 5, "NS, SOA and three A");
    let next = first["links"]["next"].as_str().unwrap();
    let path = &next[next.find("/dns/").unwrap()..];
    let (_, second) = send(&c, Method::GET, path, None).await;
    let names: Vec<&str> = second["recordsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["h0.wire.test.", "h1.wire.test."]);
    let next = second["links"]["next"].as_str().unwrap();
    let (_, last) = send(&c, Method::GET, &next[next.find("/dns/").unwrap()..], None).await;
    assert_eq!(last["recordsets"].as_array().unwrap().len(), 1);
    assert!(last["links"].get("next").is_none(), "{last}");
}

#[tokio::test]
async fn a_zone_is_patched_pending_its_serial_following_once_served() {
    let c = Client::fast().await;
    let id = zone(&c, "wire.test.").await;
    let path = format!("{ZONES}/{id}");
    let (_, before) = send(&c, Method::GET, &path, None).await;
    let patch = json!({"ttl": 600, "email": "dns@wire.test", "description": ""});
    let (status, patched) = send(&c, Method::PATCH, &path, Some(patch)).await;
    assert_eq!(status, 202, "{patched}");
    assert_eq!(
        (patched["status"].as_str(), patched["action"].as_str()),
        (Some("PENDING"), Some("UPDATE"))
    );
    assert_eq!(
        (patched["ttl"].as_i64(), patched["email"].as_str()),
        (Some(600), Some("dns@wire.test"))
    );
    assert_eq!(patched["description"], "");
    assert_eq!(patched["version"], before["version"].as_u64().unwrap() + 1);
    assert_eq!(patched["serial"], before["serial"], "not served yet");
    let (status, refused) = send(
        &c,
        Method::PATCH,
        &path,
        Some(json!({"name": "other.test."})),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(refused["type"], "invalid_object");
    assert_eq!(
        refused["message"],
        "Provided object does not match schema. Keys ['name'] are not valid for zone"
    );
    let (status, servers) = send(&c, Method::GET, &format!("{path}/nameservers"), None).await;
    assert_eq!(status, 200);
    assert_eq!(
        servers,
        json!({"nameservers": [{"hostname": "ns1.osharness.test.", "priority": 1}]})
    );
}

/// What `GET path` answers once `done` holds of it (polled for 2 s at most).
async fn shown_once(c: &Client, path: &str, done: impl Fn(u16, &Value) -> bool) -> Value {
    for _ in 0..100 {
        let (status, shown) = send(c, Method::GET, path, None).await;
        if done(status, &shown) {
            return shown;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("{path} never showed what was waited for");
}

/// The zone once its name servers serve what it holds.
async fn served(c: &Client, path: &str) -> Value {
    shown_once(c, path, |_, zone| zone["status"] == "ACTIVE").await
}

/// A served zone `wire.test.` with record set `www` just created in it: the zone's
/// path, the serial it served before, and the record set's path.
async fn served_with_www(c: &Client) -> (String, u64, String) {
    let id = zone(c, "wire.test.").await;
    let path = format!("{ZONES}/{id}");
    let serial = served(c, &path).await["serial"].as_u64().unwrap();
    let sets = format!("{path}/recordsets");
    let www = Some(a("www.wire.test.", "192.0.2.10"));
    let (status, made) = send(c, Method::POST, &sets, www).await;
    assert_eq!(status, 202, "{made}");
    let set = format!("{sets}/{}", made["id"].as_str().unwrap());
    (path, serial, set)
}

/// Right after a change of one of its record sets (`what`), the zone at `path` is
/// `PENDING` `UPDATE` and still shows `serial`; the next serial is shown once served.
async fn publishes(c: &Client, path: &str, serial: u64, what: &str) -> u64 {
    let (_, zone) = send(c, Method::GET, path, None).await;
    assert_eq!(
        (zone["status"].as_str(), zone["action"].as_str()),
        (Some("PENDING"), Some("UPDATE")),
        "right after {what}"
    );
    assert_eq!(zone["serial"], serial, "not served yet right after {what}");
    let now = served(c, path).await["serial"].as_u64().unwrap();
    assert!(now > serial, "the next serial is served after {what}");
    now
}

/// As on the real Designate 23: creating, changing or deleting a record set leaves its
/// zone `PENDING` `UPDATE` until the name servers serve the next serial.
#[tokio::test]
async fn a_record_set_change_leaves_its_zone_pending_update_until_served() {
    let c = Client::fast().await;
    let (path, serial, set) = served_with_www(&c).await;
    let serial = publishes(&c, &path, serial, "a create").await;
    let records = json!({"records": ["192.0.2.11"]});
    let (status, _) = send(&c, Method::PUT, &set, Some(records)).await;
    assert_eq!(status, 202);
    let serial = publishes(&c, &path, serial, "an update").await;
    let (status, _) = send(&c, Method::DELETE, &set, None).await;
    assert_eq!(status, 202);
    publishes(&c, &path, serial, "a delete").await;
}

/// Seen on the real Designate 23: a zone deleted while a record set's change was still
/// being published was put back on the name servers by that change, and the delete
/// ended in `ERROR` `DELETE` with the zone kept. A second delete takes it.
#[tokio::test]
async fn a_zone_deleted_while_a_change_is_published_ends_in_error_until_deleted_again() {
    let c = Client::fast().await;
    let (path, _, _) = served_with_www(&c).await;
    let (status, deleted) = send(&c, Method::DELETE, &path, None).await;
    assert_eq!((status, deleted["action"].as_str()), (202, Some("DELETE")));
    let failed = shown_once(&c, &path, |_, zone| zone["status"] != "PENDING").await;
    assert_eq!(
        (failed["status"].as_str(), failed["action"].as_str()),
        (Some("ERROR"), Some("DELETE")),
        "{failed}"
    );
    let (status, again) = send(&c, Method::DELETE, &path, None).await;
    assert_eq!(
        (status, again["status"].as_str(), again["action"].as_str()),
        (202, Some("PENDING"), Some("DELETE"))
    );
    let gone = shown_once(&c, &path, |status, _| status == 404).await;
    assert_eq!(
        gone["type"], "zone_not_found",
        "a second delete takes the zone"
    );
}

#[tokio::test]
async fn a_deleted_zone_is_shown_pending_delete_until_its_name_servers_drop_it() {
    let c = Client::fast().await;
    let id = zone(&c, "wire.test.").await;
    let path = format!("{ZONES}/{id}");
    let (status, deleted) = send(&c, Method::DELETE, &path, None).await;
    assert_eq!(status, 202);
    assert_eq!(
        (deleted["status"].as_str(), deleted["action"].as_str()),
        (Some("PENDING"), Some("DELETE"))
    );
    let (status, shown) = send(&c, Method::GET, &path, None).await;
    assert_eq!((status, shown["action"].as_str()), (200, Some("DELETE")));
    let (_, listed) = send(&c, Method::GET, &format!("{ZONES}?name=wire.test."), None).await;
    assert_eq!(listed["zones"][0]["action"], "DELETE");
    let gone = shown_once(&c, &path, |status, _| status == 404).await;
    assert_eq!(gone["type"], "zone_not_found");
}

#[tokio::test]
async fn a_zone_name_is_unique_across_projects() {
    let c = Client::start(verda_operator::sim::SimConfig {
        tenants: 1,
        ..verda_operator::sim::SimConfig::fast()
    })
    .await;
    zone(&c, "wire.test.").await;
    let auth = sim_support::app_cred_auth(&c.sim.tenant_credentials()[0]);
    let (token, _) = sim_support::issue_token_with(&c.http, &c.sim, &auth).await;
    let resp = c
        .http
        .post(format!("{}{ZONES}", c.base))
        .header("x-auth-token", token)
        .json(&json!({"name": "wire.test.", "email": "a@b.c"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 409);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["type"], "duplicate_zone");
    assert_eq!(
        body["message"],
        "Zone already exists, owned by a different tenant"
    );
}
