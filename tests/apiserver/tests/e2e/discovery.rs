//! Discovery as kube's client and kubectl use it (kube-wire `discovery.md`).

use kube::discovery::{Discovery, Scope};

use crate::support::*;

#[tokio::test]
async fn kube_discovery_finds_our_kinds_with_their_scale_subresource_and_the_builtins() {
    let (_s, c) = start().await;
    let d = Discovery::new(c.clone()).run().await.unwrap();
    let group = d.get("verda.linecorp.com").expect("our group");
    let (vmg, caps) = group
        .recommended_kind("VirtualMachineGroup")
        .expect("VirtualMachineGroup");
    assert_eq!(vmg.plural, "virtualmachinegroups");
    assert_eq!(caps.scope, Scope::Namespaced);
    assert!(caps.subresources.iter().any(|(r, _)| r.plural == "scale"));
    for g in ["coordination.k8s.io", "events.k8s.io"] {
        assert!(d.has_group(g), "{g}");
    }
}

#[tokio::test]
async fn aggregated_discovery_lists_short_names_categories_and_subresources() {
    let (server, _c) = start().await;
    let raw = Raw::new(&server);
    let resp = raw
        .http
        .get(format!("{}/apis", raw.base))
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.headers()["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let body: serde_json::Value = resp.json().await.unwrap();
    let ours = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "verda.linecorp.com")
        .unwrap();
    let vmg = ours["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "virtualmachinegroups")
        .unwrap();
    assert_eq!(vmg["shortNames"], serde_json::json!(["vmg"]));
    assert_eq!(vmg["categories"], serde_json::json!(["verda"]));
    assert_eq!(vmg["subresources"][1]["responseKind"]["kind"], "Scale");
}

#[tokio::test]
async fn unknown_paths_are_a_plain_text_404() {
    let (server, _c) = start().await;
    let raw = Raw::new(&server);
    for path in [
        "/apis/nope.example.com/v1",
        "/apis/verda.linecorp.com/v1alpha1/namespaces/default/nopes",
    ] {
        let (code, headers, body) = raw.send("GET", path, "application/json", None).await;
        assert_eq!(
            (code, body.as_str()),
            (404, "404 page not found\n"),
            "{path}"
        );
        assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    }
}
