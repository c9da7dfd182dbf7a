//! Watch semantics (kube-wire `watch.md`): event order and types, selector transitions, synthetic ADDED and the
//! initial-events-end bookmark, 410 as an ERROR event, periodic and pre-timeout bookmarks, kube-runtime's watcher.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::{Value, json};
use verda_test_apiserver::ApiServer;

use crate::support::*;

/// Opens a watch and returns the stream of decoded lines.
async fn open(raw: &Raw, query: &str) -> reqwest::Response {
    let resp = raw
        .http
        .get(format!("{}{VMS}?{query}", raw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    resp
}

/// Reads up to `n` events (or until the stream ends / `wait` passes without data).
async fn read(
    resp: &mut reqwest::Response,
    buf: &mut String,
    n: usize,
    wait: Duration,
) -> Vec<Value> {
    let mut out = Vec::new();
    while out.len() < n {
        if let Some(i) = buf.find('\n') {
            let line: String = buf.drain(..=i).collect();
            out.push(serde_json::from_str(&line).expect("one JSON object per line"));
            continue;
        }
        match tokio::time::timeout(wait, resp.chunk()).await {
            Ok(Ok(Some(bytes))) => buf.push_str(std::str::from_utf8(&bytes).unwrap()),
            _ => break,
        }
    }
    out
}

fn types(evs: &[Value]) -> Vec<&str> {
    evs.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn watch_from_a_list_resource_version_sees_every_write_in_order() {
    let (server, c) = start().await;
    let api = vms(&c);
    let list_rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let raw = Raw::new(&server);
    let mut resp = open(
        &raw,
        &format!("watch=true&resourceVersion={list_rv}&allowWatchBookmarks=true&timeoutSeconds=2"),
    )
    .await;
    let mut o = vm("vm-w1");
    o.metadata.finalizers = Some(vec!["virtualmachine.verda.linecorp.com/finalizer".into()]);
    create(&api, o).await;
    let pp = PatchParams::default();
    api.patch(
        "vm-w1",
        &pp,
        &Patch::Merge(json!({"spec": {"flavor": "n3-2vcpu-4gb"}})),
    )
    .await
    .unwrap();
    api.patch_status(
        "vm-w1",
        &pp,
        &Patch::Merge(json!({"status": {"phase": "Active"}})),
    )
    .await
    .unwrap();
    api.delete("vm-w1", &DeleteParams::default()).await.unwrap();
    let before_removal = api.get("vm-w1").await.unwrap();
    let patched = api
        .patch(
            "vm-w1",
            &pp,
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    assert_eq!(
        rv(&patched),
        rv(&before_removal),
        "the answer carries the pre-deletion resourceVersion"
    );
    let mut buf = String::new();
    let evs = read(&mut resp, &mut buf, 6, Duration::from_secs(3)).await;
    assert_eq!(
        types(&evs),
        [
            "ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED", "BOOKMARK"
        ]
    );
    assert_eq!(
        evs[3]["object"]["metadata"]["generation"], 3,
        "deletionTimestamp bumps generation"
    );
    assert_eq!(
        evs[3]["object"]["metadata"]["deletionGracePeriodSeconds"],
        0
    );
    let deleted = &evs[4]["object"];
    assert_eq!(
        deleted["metadata"]["finalizers"],
        json!(["virtualmachine.verda.linecorp.com/finalizer"]),
        "DELETED shows the last stored state"
    );
    assert!(
        deleted["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > rv(&before_removal)
    );
    assert_eq!(
        evs[5]["object"],
        json!({"kind": "VirtualMachine", "apiVersion": "verda.linecorp.com/v1alpha1", "metadata": {"resourceVersion": deleted["metadata"]["resourceVersion"]}})
    );
    assert!(
        read(&mut resp, &mut buf, 1, Duration::from_secs(2))
            .await
            .is_empty(),
        "stream ends at timeoutSeconds"
    );
}

#[tokio::test]
async fn label_selector_watch_turns_selector_exits_into_deleted_and_entries_into_added() {
    let (server, c) = start().await;
    let api = vms(&c);
    let rv0 = server.resource_version();
    let raw = Raw::new(&server);
    let mut resp = open(
        &raw,
        &format!("watch=true&labelSelector=app%3Dweb&resourceVersion={rv0}&timeoutSeconds=2"),
    )
    .await;
    let mut o = vm("vm-s1");
    o.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    create(&api, o).await;
    let pp = PatchParams::default();
    api.patch(
        "vm-s1",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"app": "db"}}})),
    )
    .await
    .unwrap();
    api.patch(
        "vm-s1",
        &pp,
        &Patch::Merge(json!({"spec": {"description": "unseen"}})),
    )
    .await
    .unwrap();
    api.patch(
        "vm-s1",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})),
    )
    .await
    .unwrap();
    let evs = read(&mut resp, &mut String::new(), 3, Duration::from_secs(3)).await;
    assert_eq!(types(&evs), ["ADDED", "DELETED", "ADDED"]);
    assert_eq!(evs[1]["object"]["metadata"]["labels"]["app"], "db");
}

#[tokio::test]
async fn watch_without_resource_version_replays_objects_then_the_initial_events_end_bookmark() {
    let (server, c) = start().await;
    create(&vms(&c), vm("vm-x1")).await;
    create(&vms(&c), vm("vm-x2")).await;
    let raw = Raw::new(&server);
    for q in [
        "watch=true&allowWatchBookmarks=true&timeoutSeconds=1",
        "watch=true&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=1",
        "watch=true&timeoutSeconds=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0",
    ] {
        let mut resp = open(&raw, q).await;
        let evs = read(&mut resp, &mut String::new(), 3, Duration::from_secs(2)).await;
        assert_eq!(types(&evs), ["ADDED", "ADDED", "BOOKMARK"], "{q}");
        assert_eq!(
            evs[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );
    }
    let (code, s) = raw
        .json(
            "GET",
            &format!("{VMS}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"),
            None,
        )
        .await;
    assert_eq!(
        (code, s["details"]["kind"].as_str()),
        (422, Some("ListOptions"))
    );
}

#[tokio::test]
async fn a_too_old_resource_version_is_an_expired_error_event_on_watch_and_http_410_on_list() {
    let (server, c) = start().await;
    let first = create(&vms(&c), vm("vm-a")).await;
    create(&vms(&c), vm("vm-b")).await;
    server.compact();
    let raw = Raw::new(&server);
    let mut resp = open(
        &raw,
        &format!("watch=true&resourceVersion={}&timeoutSeconds=5", rv(&first)),
    )
    .await;
    let evs = read(&mut resp, &mut String::new(), 2, Duration::from_secs(2)).await;
    assert_eq!(evs.len(), 1, "the stream ends after the error");
    assert_eq!(evs[0]["type"], "ERROR");
    assert_eq!(
        (
            evs[0]["object"]["code"].as_i64(),
            evs[0]["object"]["reason"].as_str()
        ),
        (Some(410), Some("Expired"))
    );
    let (code, s) = raw
        .json(
            "GET",
            &format!(
                "{VMS}?resourceVersion={}&resourceVersionMatch=Exact",
                rv(&first)
            ),
            None,
        )
        .await;
    assert_eq!((code, s["reason"].as_str()), (410, Some("Expired")));
}

#[tokio::test]
async fn a_small_history_expires_old_resource_versions_by_itself() {
    let server = ApiServer::builder()
        .crd_dir(fixtures())
        .history_limit(3)
        .start()
        .await
        .unwrap();
    let c = server.client().unwrap();
    let first = create(&vms(&c), vm("vm-0")).await;
    for i in 1..5 {
        create(&vms(&c), vm(&format!("vm-{i}"))).await;
    }
    let mut resp = open(
        &Raw::new(&server),
        &format!("watch=true&resourceVersion={}", rv(&first)),
    )
    .await;
    let evs = read(&mut resp, &mut String::new(), 1, Duration::from_secs(2)).await;
    assert_eq!(evs[0]["object"]["code"], 410);
}

#[tokio::test]
async fn idle_watches_get_periodic_bookmarks() {
    let server = ApiServer::builder()
        .crd_dir(fixtures())
        .bookmark_interval(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let rv0 = server.resource_version();
    let mut resp = open(
        &Raw::new(&server),
        &format!("watch=true&resourceVersion={rv0}&allowWatchBookmarks=true&timeoutSeconds=5"),
    )
    .await;
    let evs = read(&mut resp, &mut String::new(), 2, Duration::from_secs(2)).await;
    assert_eq!(types(&evs), ["BOOKMARK", "BOOKMARK"]);
    assert_eq!(
        evs[0]["object"]["metadata"]["resourceVersion"],
        rv0.to_string()
    );
}

#[tokio::test]
async fn kube_runtime_watcher_lists_then_follows_changes_in_both_list_strategies() {
    let (_s, c) = start().await;
    let api = vms(&c);
    create(&api, vm("vm-pre")).await;
    for (i, cfg) in [
        watcher::Config::default(),
        watcher::Config::default().streaming_lists(),
    ]
    .into_iter()
    .enumerate()
    {
        let mut stream = watcher(api.clone(), cfg).boxed();
        let mut seen_init_done = false;
        while let Some(ev) = tokio::time::timeout(Duration::from_secs(3), stream.try_next())
            .await
            .unwrap()
            .unwrap()
        {
            match ev {
                watcher::Event::InitApply(o) => {
                    assert_eq!(o.metadata.name.as_deref(), Some("vm-pre"))
                }
                watcher::Event::InitDone => {
                    seen_init_done = true;
                    break;
                }
                _ => {}
            }
        }
        assert!(seen_init_done);
        let name = format!("vm-live-{i}");
        create(&api, vm(&name)).await;
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(3), stream.try_next())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            if let watcher::Event::Apply(o) = ev {
                assert_eq!(o.metadata.name.as_deref(), Some(name.as_str()));
                break;
            }
        }
        api.delete(&name, &DeleteParams::default()).await.unwrap();
    }
}

#[tokio::test]
async fn metadata_watchers_receive_partial_object_metadata() {
    let (_s, c) = start().await;
    let api = vms(&c);
    create(&api, vm("vm-pre")).await;
    let ar = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("verda.linecorp.com", "v1alpha1", "VirtualMachine"),
        "virtualmachines",
    );
    let meta: kube::Api<kube::core::PartialObjectMeta<kube::api::DynamicObject>> =
        kube::Api::namespaced_with(c.clone(), NS, &ar);
    let mut stream = watcher(meta, watcher::Config::default()).boxed();
    let mut names = Vec::new();
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(3), stream.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        match ev {
            watcher::Event::InitApply(o) => names.push(o.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(names, ["vm-pre"]);
    create(&api, vm("vm-live")).await;
    let ev = tokio::time::timeout(Duration::from_secs(3), stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let watcher::Event::Apply(o) = ev else {
        panic!("expected Apply, got {ev:?}")
    };
    assert_eq!(o.metadata.name.as_deref(), Some("vm-live"));
    assert!(o.metadata.uid.is_some());
}
