//! Create/get/list/update semantics and their error bodies (kube-wire `crud.md`, `crud-errors.md`).

use std::time::{Duration, Instant};

use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn server_starts_within_milliseconds_and_stops_when_dropped() {
    let t0 = Instant::now();
    let (server, _c) = start().await;
    let took = t0.elapsed();
    eprintln!("test apiserver started in {took:?}");
    assert!(took < Duration::from_millis(500), "startup took {took:?}");
    let addr = server.addr();
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "port still accepts connections after drop"
    );
}

#[tokio::test]
async fn create_stamps_uid_timestamp_generation_and_resource_version_and_drops_status() {
    let (_s, c) = start().await;
    let mut o = vm("vm-a");
    o.data["status"] = json!({"phase": "Active"});
    let created = create(&vms(&c), o).await;
    let m = &created.metadata;
    assert_eq!(m.uid.as_ref().map(|u| u.len()), Some(36));
    assert!(m.creation_timestamp.is_some());
    assert_eq!(m.generation, Some(1));
    assert!(rv(&created) > 0);
    assert_eq!(m.namespace.as_deref(), Some(NS));
    assert!(
        created.data.get("status").is_none(),
        "status must be dropped on create"
    );
    let mf = m.managed_fields.as_ref().expect("managedFields");
    assert_eq!(
        (mf[0].manager.as_deref(), mf[0].operation.as_deref()),
        (Some("unknown"), Some("Update"))
    );
}

#[tokio::test]
async fn generate_name_appends_five_characters_from_the_apiserver_alphabet() {
    let (_s, c) = start().await;
    let mut o = vm("");
    o.metadata.name = None;
    o.metadata.generate_name = Some("vm-gen-".into());
    let created = create(&vms(&c), o).await;
    let name = created.metadata.name.unwrap();
    let suffix = name.strip_prefix("vm-gen-").expect("prefix kept");
    assert_eq!(suffix.len(), 5);
    assert!(
        suffix
            .chars()
            .all(|ch| "bcdfghjklmnpqrstvwxz2456789".contains(ch)),
        "{suffix}"
    );
    assert_eq!(created.metadata.generate_name.as_deref(), Some("vm-gen-"));
}

#[tokio::test]
async fn resource_versions_increase_across_kinds_and_every_write() {
    let (_s, c) = start().await;
    let a = create(&vms(&c), vm("a")).await;
    let g = create(&vmgs(&c), vmg("g", 1)).await;
    let b = create(&vms(&c), vm("b")).await;
    assert!(rv(&a) < rv(&g) && rv(&g) < rv(&b));
    let list = vms(&c).list(&ListParams::default()).await.unwrap();
    let list_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
    assert!(list_rv >= rv(&b));
}

#[tokio::test]
async fn stale_update_is_a_409_conflict_with_the_fixed_message() {
    let (_s, c) = start().await;
    let api = vms(&c);
    let first = create(&api, vm("vm-b")).await;
    let mut fresh = first.clone();
    fresh.data["spec"]["description"] = json!("fresh write");
    let updated = api
        .replace("vm-b", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_eq!(updated.metadata.generation, Some(2));
    let mut stale = first.clone();
    stale.data["spec"]["description"] = json!("stale write");
    let s = status(api.replace("vm-b", &PostParams::default(), &stale).await);
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        s.message,
        "Operation cannot be fulfilled on virtualmachines.verda.linecorp.com \"vm-b\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let d = s.details.unwrap();
    assert_eq!(
        (d.name.as_str(), d.group.as_str(), d.kind.as_str()),
        ("vm-b", "verda.linecorp.com", "virtualmachines")
    );
}

#[tokio::test]
async fn put_without_resource_version_is_422_and_put_of_a_missing_object_is_404() {
    let (server, c) = start().await;
    create(&vms(&c), vm("vm-b")).await;
    let raw = Raw::new(&server);
    let body = json_of(&vm("vm-b"));
    let (code, s) = raw.json("PUT", &format!("{VMS}/vm-b"), Some(body)).await;
    assert_eq!(code, 422);
    assert_eq!(s["details"]["kind"], "virtualmachines");
    assert_eq!(
        s["details"]["causes"][0]["field"],
        "metadata.resourceVersion"
    );
    assert_eq!(
        s["details"]["causes"][0]["message"],
        "Invalid value: 0: must be specified for an update"
    );
    let (code, s) = raw
        .json(
            "PUT",
            &format!("{VMS}/vm-missing"),
            Some(json_of(&vm("vm-missing"))),
        )
        .await;
    assert_eq!((code, s["reason"].as_str()), (404, Some("NotFound")));
    let (code, s) = raw
        .json(
            "PUT",
            &format!("{VMS}/vm-b"),
            Some(json_of(&vm("vm-other"))),
        )
        .await;
    assert_eq!(code, 400);
    assert_eq!(
        s["message"],
        "the name of the object (vm-other) does not match the name on the URL (vm-b)"
    );
}

#[tokio::test]
async fn create_of_an_existing_name_is_409_already_exists() {
    let (_s, c) = start().await;
    create(&vms(&c), vm("vm-a")).await;
    let s = status(vms(&c).create(&PostParams::default(), &vm("vm-a")).await);
    assert_eq!((s.code, s.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(
        s.message,
        "virtualmachines.verda.linecorp.com \"vm-a\" already exists"
    );
}

#[tokio::test]
async fn missing_objects_and_namespaces_are_404_status_bodies() {
    let (server, c) = start().await;
    let raw = Raw::new(&server);
    let (code, s) = raw.json("GET", &format!("{VMS}/vm-missing"), None).await;
    assert_eq!(code, 404);
    assert_eq!(
        s,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "virtualmachines.verda.linecorp.com \"vm-missing\" not found", "reason": "NotFound",
               "details": {"name": "vm-missing", "group": "verda.linecorp.com", "kind": "virtualmachines"}, "code": 404})
    );
    let path = "/apis/verda.linecorp.com/v1alpha1/namespaces/no-such-ns/virtualmachines";
    let (code, s) = raw.json("POST", path, Some(json_of(&vm("vm-a")))).await;
    assert_eq!(code, 404);
    assert_eq!(
        s["details"],
        json!({"name": "no-such-ns", "kind": "namespaces"})
    );
    let _ = c;
}

#[tokio::test]
async fn identical_put_is_a_no_op_that_keeps_the_resource_version() {
    let (_s, c) = start().await;
    let api = vms(&c);
    let created = create(&api, vm("vm-b")).await;
    let again = api
        .replace("vm-b", &PostParams::default(), &created)
        .await
        .unwrap();
    assert_eq!(rv(&again), rv(&created));
    assert_eq!(again.metadata.generation, Some(1));
}

#[tokio::test]
async fn generation_moves_on_spec_changes_only() {
    let (_s, c) = start().await;
    let api = vmgs(&c);
    create(&api, vmg("g1", 2)).await;
    let pp = PatchParams::default();
    let spec = api
        .patch("g1", &pp, &Patch::Merge(json!({"spec": {"replicas": 3}})))
        .await
        .unwrap();
    assert_eq!(spec.metadata.generation, Some(2));
    let meta = api
        .patch(
            "g1",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})),
        )
        .await
        .unwrap();
    assert_eq!(meta.metadata.generation, Some(2));
    assert!(rv(&meta) > rv(&spec));
    let st = api
        .patch_status("g1", &pp, &Patch::Merge(json!({"status": {"replicas": 1}})))
        .await
        .unwrap();
    assert_eq!(st.metadata.generation, Some(2));
}

#[tokio::test]
async fn label_selectors_support_equality_and_set_operators() {
    let (_s, c) = start().await;
    let api = vms(&c);
    for (name, app, tier) in [
        ("a", "web", Some("front")),
        ("b", "web", Some("back")),
        ("c", "db", None),
    ] {
        let mut o = vm(name);
        let mut labels = std::collections::BTreeMap::from([("app".to_string(), app.to_string())]);
        if let Some(t) = tier {
            labels.insert("tier".into(), t.into());
        }
        o.metadata.labels = Some(labels);
        create(&api, o).await;
    }
    let names = |sel: &'static str| {
        let api = api.clone();
        async move {
            let l = api.list(&ListParams::default().labels(sel)).await.unwrap();
            l.items
                .into_iter()
                .map(|o| o.metadata.name.unwrap())
                .collect::<Vec<_>>()
                .join(",")
        }
    };
    assert_eq!(names("app=web").await, "a,b");
    assert_eq!(names("app!=web").await, "c");
    assert_eq!(names("tier in (front,back)").await, "a,b");
    assert_eq!(names("tier notin (front)").await, "b,c");
    assert_eq!(names("tier").await, "a,b");
    assert_eq!(names("!tier").await, "c");
}

#[tokio::test]
async fn field_selector_supports_metadata_name_and_rejects_other_fields() {
    let (_s, c) = start().await;
    let api = vms(&c);
    create(&api, vm("vm-a")).await;
    create(&api, vm("vm-b")).await;
    let l = api
        .list(&ListParams::default().fields("metadata.name=vm-b"))
        .await
        .unwrap();
    assert_eq!(l.items.len(), 1);
    assert_eq!(l.items[0].metadata.name.as_deref(), Some("vm-b"));
    let l = api
        .list(&ListParams::default().fields("metadata.namespace=default,metadata.name!=vm-b"))
        .await
        .unwrap();
    assert_eq!(l.items.len(), 1);
    let s = status(
        api.list(&ListParams::default().fields("spec.image=centos79"))
            .await,
    );
    assert_eq!(
        (s.code, s.message.as_str()),
        (400, "field label not supported: spec.image")
    );
}

#[tokio::test]
async fn limit_and_continue_page_through_a_consistent_resource_version() {
    let (server, c) = start().await;
    let api = vms(&c);
    for n in ["vm-a", "vm-b", "vm-c", "vm-d"] {
        create(&api, vm(n)).await;
    }
    let raw = Raw::new(&server);
    let (code, first) = raw.json("GET", &format!("{VMS}?&limit=1"), None).await;
    assert_eq!(code, 200);
    assert_eq!(first["kind"], "VirtualMachineList");
    assert_eq!(
        first["items"][0]["kind"], "VirtualMachine",
        "custom resource list items carry kind"
    );
    assert_eq!(first["metadata"]["remainingItemCount"], 3);
    let mut names = vec![
        first["items"][0]["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_string(),
    ];
    let mut token = first["metadata"]["continue"].as_str().unwrap().to_string();
    create(&api, vm("vm-0")).await; // sorts before the cursor: not part of the remaining pages
    while !token.is_empty() {
        let (_, page) = raw
            .json("GET", &format!("{VMS}?limit=1&continue={token}"), None)
            .await;
        assert_eq!(
            page["metadata"]["resourceVersion"],
            first["metadata"]["resourceVersion"]
        );
        names.push(
            page["items"][0]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string(),
        );
        token = page["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .to_string();
    }
    assert_eq!(names, ["vm-a", "vm-b", "vm-c", "vm-d"]);
    let (_, all) = raw
        .json("GET", &format!("{VMS}?resourceVersion=0&limit=1"), None)
        .await;
    assert_eq!(
        all["items"].as_array().unwrap().len(),
        5,
        "resourceVersion=0 ignores limit"
    );
}

#[tokio::test]
async fn kubectl_style_table_requests_get_printer_columns_with_ages() {
    let (server, c) = start().await;
    create(&vmgs(&c), vmg("table-demo", 2)).await;
    let raw = Raw::new(&server);
    let resp = raw
        .http
        .get(format!("{}{VMGS}?limit=500", raw.base))
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
        .send()
        .await
        .unwrap();
    let t: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(t["kind"], "Table");
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Desired", "Current", "HA", "Age"]);
    let cells = t["rows"][0]["cells"].as_array().unwrap();
    assert_eq!(
        cells[..4],
        json!(["table-demo", 2, null, "soft"]).as_array().unwrap()[..]
    );
    // Seconds since creation: 0s, or a second more on a loaded machine.
    let age = cells[4].as_str().unwrap();
    assert!(matches!(age, "0s" | "1s" | "2s"), "age {age}");
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

#[tokio::test]
async fn test_cluster_starts_an_in_process_server_unless_a_real_cluster_is_requested() {
    if std::env::var(verda_test_apiserver::cluster::REAL_CLUSTER_ENV).is_ok() {
        return;
    }
    let server = verda_test_apiserver::ApiServer::builder()
        .crd_dir(fixtures())
        .start()
        .await
        .unwrap();
    let cluster = verda_test_apiserver::TestCluster::with_server(server).unwrap();
    assert!(!cluster.is_real());
    let ns = cluster.namespace("e2e-").await.unwrap();
    assert!(ns.starts_with("e2e-") && ns.len() == 9, "{ns}");
    let created = create(&namespaced_vms(&cluster.client(), &ns), vm("vm-a")).await;
    assert_eq!(created.metadata.namespace.as_deref(), Some(ns.as_str()));
}
