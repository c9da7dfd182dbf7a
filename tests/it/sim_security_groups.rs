//! Neutron security groups, their rules, tags and address groups, answered as the
//! real Neutron 29 answered (`sim/neutron-security-groups.md`): the egress rules of a
//! new group, Neutron's conversions and refusals of rules (in its words), address
//! groups' normalised addresses, and deletes refused while something uses the group.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use reqwest::{Method, Response};
use serde_json::{Value, json};
use sim_support::{Client, json_of};

/// The shared `private` network of the default project (the admin's).
const PRIVATE: &str = "89908bff-e0fe-45be-b92d-5828f5ddc763";
const NOWHERE: &str = "00000000-0000-0000-0000-000000000000";

/// A refusal: (body, status, Neutron's exception, its message).
type Refusal = (Value, u16, &'static str, String);

async fn send(c: &Client, method: Method, path: String, body: Option<Value>) -> Response {
    let req = c.req(method, &format!("/network/v2.0/{path}"));
    let req = match body {
        Some(b) => req.json(&b),
        None => req,
    };
    req.send().await.unwrap()
}

async fn put(c: &Client, path: String, body: Value) -> Response {
    send(c, Method::PUT, path, Some(body)).await
}

async fn delete(c: &Client, path: String) -> Response {
    send(c, Method::DELETE, path, None).await
}

async fn fetch(c: &Client, path: String) -> Response {
    send(c, Method::GET, path, None).await
}

async fn get(c: &Client, path: &str) -> Value {
    let resp = fetch(c, path.to_owned()).await;
    assert_eq!(resp.status(), 200, "{path}");
    json_of(resp).await
}

/// POSTs `{key: body}` to `collection`, which must create it; the object.
async fn made(c: &Client, collection: &str, key: &str, body: Value) -> Value {
    let body = Some(json!({ key: body }));
    let resp = send(c, Method::POST, collection.to_owned(), body).await;
    assert_eq!(resp.status(), 201, "{collection}");
    json_of(resp).await[key].clone()
}

async fn group(c: &Client, name: &str) -> Value {
    let body = json!({"name": name});
    made(c, "security-groups", "security_group", body).await
}

async fn address_group(c: &Client, body: Value) -> Value {
    made(c, "address-groups", "address_group", body).await
}

async fn rule(c: &Client, body: Value) -> Response {
    let body = Some(json!({"security_group_rule": body}));
    send(c, Method::POST, "security-group-rules".into(), body).await
}

/// An ingress rule of group `g` with the attributes of `body`.
fn ingress(g: &str, body: Value) -> Value {
    let mut full = json!({"security_group_id": g, "direction": "ingress"});
    let extra = body.as_object().unwrap().clone();
    full.as_object_mut().unwrap().extend(extra);
    full
}

async fn refused(resp: Response, status: u16, kind: &str, message: &str) {
    assert_eq!(resp.status(), status, "{message}");
    assert_eq!(
        json_of(resp).await,
        json!({"NeutronError": {"type": kind, "message": message, "detail": ""}})
    );
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

/// "direction ethertype" of each rule, checking that it allows everything.
fn open_rules(group: &Value) -> Vec<String> {
    let open = |r: &Value| {
        for k in ["protocol", "port_range_min", "port_range_max"] {
            assert_eq!(r[k], Value::Null, "{k} of {r}");
        }
        for k in ["remote_ip_prefix", "remote_address_group_id"] {
            assert_eq!(r[k], Value::Null, "{k} of {r}");
        }
        for k in ["normalized_cidr", "description"] {
            assert_eq!(r[k], Value::Null, "{k} of {r}");
        }
        assert_eq!((&r["tags"], &r["revision_number"]), (&json!([]), &json!(0)));
        assert!(r["standard_attr_id"].is_u64(), "{r}");
        format!(
            "{} {}",
            r["direction"].as_str().unwrap(),
            r["ethertype"].as_str().unwrap()
        )
    };
    let rules = group["security_group_rules"].as_array().unwrap();
    rules.iter().map(open).collect()
}

#[tokio::test]
async fn a_new_group_has_neutrons_two_egress_rules_and_default_has_four() {
    let c = Client::fast().await;
    let project = c.sim.credentials().project_id;
    let body = json!({"name": "probe-sg", "description": "probe group", "stateful": true});
    let g = made(&c, "security-groups", "security_group", body).await;
    let shown = [&g["name"], &g["description"], &g["stateful"], &g["shared"]];
    assert_eq!(
        shown,
        [
            &json!("probe-sg"),
            &json!("probe group"),
            &json!(true),
            &json!(false)
        ]
    );
    assert_eq!((&g["tags"], &g["revision_number"]), (&json!([]), &json!(1)));
    assert_eq!(
        (&g["project_id"], &g["tenant_id"]),
        (&json!(project), &json!(project))
    );
    assert_eq!(open_rules(&g), ["egress IPv4", "egress IPv6"]);
    for r in g["security_group_rules"].as_array().unwrap() {
        assert_eq!(
            (&r["security_group_id"], &r["remote_group_id"]),
            (&g["id"], &Value::Null)
        );
        assert_eq!(r["belongs_to_default_sg"], false);
    }
    let u = made(
        &c,
        "security-groups",
        "security_group",
        json!({"stateful": false}),
    )
    .await;
    let shown = [&u["name"], &u["description"], &u["stateful"]];
    assert_eq!(shown, [&json!(""), &json!(""), &json!(false)]);
    let default = get(&c, "security-groups?name=default").await["security_groups"][0].clone();
    let mut rules = open_rules(&default);
    rules.sort();
    assert_eq!(
        rules,
        ["egress IPv4", "egress IPv6", "ingress IPv4", "ingress IPv6"]
    );
    let rules = default["security_group_rules"].as_array().unwrap();
    let from_itself = rules
        .iter()
        .filter(|r| r["remote_group_id"] == default["id"]);
    assert_eq!(
        from_itself.filter(|r| r["direction"] == "ingress").count(),
        2
    );
    assert!(rules.iter().all(|r| r["belongs_to_default_sg"] == true));
}

#[tokio::test]
async fn group_bodies_and_the_default_name_are_refused_in_neutrons_words() {
    let c = Client::fast().await;
    let cases: [Refusal; 5] = [
        (
            json!({"name": "probe-sg2", "tags": ["t1"]}),
            400,
            "HTTPBadRequest",
            "Attribute 'tags' not allowed in POST".into(),
        ),
        (
            json!({"name": "default"}),
            409,
            "SecurityGroupDefaultAlreadyExists",
            "Default security group already exists.".into(),
        ),
        (
            json!({"name": "x", "bogus": 1}),
            400,
            "HTTPBadRequest",
            "Unrecognized attribute(s) 'bogus'".into(),
        ),
        (
            json!({"name": 5}),
            400,
            "HTTPBadRequest",
            "Invalid input for name. Reason: '5' is not a valid string.".into(),
        ),
        (
            json!({"name": "x", "stateful": "maybe"}),
            400,
            "InvalidInput",
            "Invalid input for operation: 'maybe' cannot be converted to boolean.".into(),
        ),
    ];
    for (body, status, kind, msg) in cases {
        let body = Some(json!({"security_group": body}));
        let resp = send(&c, Method::POST, "security-groups".into(), body).await;
        refused(resp, status, kind, &msg).await;
    }
    let twice = group(&c, "probe-sg").await;
    let again = group(&c, "probe-sg").await;
    assert_ne!(twice["id"], again["id"], "names may repeat");
}

#[tokio::test]
async fn default_group_can_be_neither_renamed_nor_deleted_nor_named_again() {
    let c = Client::fast().await;
    let default = id(&get(&c, "security-groups?name=default").await["security_groups"][0]);
    let rename = json!({"security_group": {"name": "other"}});
    let resp = put(&c, format!("security-groups/{default}"), rename).await;
    let msg = "Updating default security group not allowed.";
    refused(resp, 409, "SecurityGroupCannotUpdateDefault", msg).await;
    let resp = delete(&c, format!("security-groups/{default}")).await;
    let msg = "Insufficient rights for removing default security group.";
    refused(resp, 409, "SecurityGroupCannotRemoveDefault", msg).await;
    let g = id(&group(&c, "probe").await);
    let to_default = json!({"security_group": {"name": "default"}});
    let resp = put(&c, format!("security-groups/{g}"), to_default).await;
    let msg = "Default security group already exists.";
    refused(resp, 409, "SecurityGroupDefaultAlreadyExists", msg).await;
    let described = json!({"security_group": {"name": "probe-renamed", "description": "d2"}});
    let resp = put(&c, format!("security-groups/{g}"), described).await;
    assert_eq!(resp.status(), 200);
    let updated = json_of(resp).await["security_group"].clone();
    let shown = [
        &updated["name"],
        &updated["description"],
        &updated["revision_number"],
    ];
    assert_eq!(shown, [&json!("probe-renamed"), &json!("d2"), &json!(2)]);
}

#[tokio::test]
async fn tags_are_replaced_added_listed_sorted_and_filtered() {
    let c = Client::fast().await;
    let g = id(&group(&c, "probe-sg").await);
    let tags = json!({"tags": ["verda-uid-abc", "env-prod"]});
    let resp = put(&c, format!("security-groups/{g}/tags"), tags.clone()).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(json_of(resp).await, tags, "answered in the request's order");
    let resp = send(
        &c,
        Method::PUT,
        format!("security-groups/{g}/tags/extra"),
        None,
    )
    .await;
    assert_eq!(resp.status(), 201);
    assert_eq!(json_of(resp).await, Value::Null);
    let sorted = json!(["env-prod", "extra", "verda-uid-abc"]);
    let listed = get(&c, &format!("security-groups/{g}/tags")).await;
    assert_eq!(listed, json!({"tags": sorted}));
    let path = "security-groups?tags=verda-uid-abc&fields=id&fields=name&fields=tags&fields=revision_number";
    let found = json!({"id": g, "name": "probe-sg", "tags": sorted, "revision_number": 3});
    assert_eq!(get(&c, path).await, json!({"security_groups": [found]}));
    let none = get(&c, "security-groups?tags=nope").await;
    assert_eq!(none, json!({"security_groups": []}));
    assert_eq!(
        delete(&c, format!("security-groups/{g}/tags/extra"))
            .await
            .status(),
        204
    );
    assert_eq!(
        delete(&c, format!("security-groups/{g}/tags"))
            .await
            .status(),
        204
    );
    let shown = get(
        &c,
        &format!("security-groups/{g}?fields=tags&fields=revision_number"),
    )
    .await;
    assert_eq!(
        shown,
        json!({"security_group": {"tags": [], "revision_number": 5}})
    );
}

#[tokio::test]
async fn tag_changes_are_refused_in_neutrons_words() {
    let c = Client::fast().await;
    let g = id(&group(&c, "probe-sg").await);
    let path = format!("security-groups/{g}/tags");
    let resp = put(&c, path.clone(), json!({"tags": "a"})).await;
    let msg = "Invalid input for operation: 'a' is not a list.";
    refused(resp, 400, "InvalidInput", msg).await;
    let resp = put(&c, path, json!({"tags": ["b", "a", "a"]})).await;
    let msg = "Invalid input for operation: Duplicate items in the list: 'a'.";
    refused(resp, 400, "InvalidInput", msg).await;
    let resp = delete(&c, format!("security-groups/{g}/tags/zz")).await;
    refused(resp, 404, "TagNotFound", "Tag zz could not be found.").await;
    let msg = "Request Failed: internal server error while processing your request.";
    let resp = put(
        &c,
        format!("security-groups/{NOWHERE}/tags"),
        json!({"tags": ["a"]}),
    )
    .await;
    refused(resp, 500, "HTTPInternalServerError", msg).await;
    let resp = send(
        &c,
        Method::PUT,
        format!("security-groups/{NOWHERE}/tags/a"),
        None,
    )
    .await;
    refused(resp, 500, "HTTPInternalServerError", msg).await;
}

/// Rules (their attributes besides the group and direction) and what Neutron stores.
fn conversions(peer: &str) -> Vec<(Value, Value)> {
    vec![
        (
            json!({"protocol": "tcp", "port_range_min": 22, "port_range_max": 22, "remote_group_id": peer}),
            json!({"remote_group_id": peer, "ethertype": "IPv4", "description": "", "remote_ip_prefix": null}),
        ),
        (
            json!({"protocol": "icmp"}),
            json!({"protocol": "icmp", "port_range_min": null, "port_range_max": null}),
        ),
        (
            json!({"protocol": "tcp", "port_range_min": 80, "port_range_max": 443, "remote_ip_prefix": "10.1.2.3/8"}),
            json!({"remote_ip_prefix": "10.1.2.3/8", "normalized_cidr": "10.0.0.0/8"}),
        ),
        (
            json!({"remote_ip_prefix": "10.0.0.7"}),
            json!({"remote_ip_prefix": "10.0.0.7/32", "normalized_cidr": "10.0.0.7/32"}),
        ),
        (
            json!({"protocol": "TCP", "port_range_min": "81", "port_range_max": "82"}),
            json!({"protocol": "tcp", "port_range_min": 81, "port_range_max": 82}),
        ),
        (
            json!({"protocol": "tcp", "port_range_min": 1, "port_range_max": 65535}),
            json!({"protocol": "tcp", "port_range_min": null, "port_range_max": null}),
        ),
        (
            json!({"protocol": 17, "port_range_min": 53, "port_range_max": 53}),
            json!({"protocol": "17"}),
        ),
        (
            json!({"ethertype": "ipv6", "protocol": "any"}),
            json!({"ethertype": "IPv6", "protocol": null}),
        ),
    ]
}

#[tokio::test]
async fn rules_are_stored_as_neutron_converts_them_and_move_their_group() {
    let c = Client::fast().await;
    let g = id(&group(&c, "probe-sg").await);
    let peer = id(&group(&c, "probe-peer").await);
    let web = json!({"ethertype": "IPv4", "protocol": "tcp", "port_range_min": 80, "port_range_max": 443,
        "remote_ip_prefix": "10.0.0.0/8", "description": "web"});
    let resp = rule(&c, ingress(&g, web)).await;
    assert_eq!(resp.status(), 201);
    let r = json_of(resp).await["security_group_rule"].clone();
    let project = c.sim.credentials().project_id;
    let expected = json!({"id": r["id"], "project_id": project, "security_group_id": g, "ethertype": "IPv4",
        "direction": "ingress", "protocol": "tcp", "port_range_min": 80, "port_range_max": 443,
        "remote_ip_prefix": "10.0.0.0/8", "remote_address_group_id": null,
        "normalized_cidr": "10.0.0.0/8", "remote_group_id": null, "belongs_to_default_sg": false,
        "description": "web", "created_at": r["created_at"], "updated_at": r["created_at"],
        "revision_number": 0, "tenant_id": project});
    assert_eq!(r, expected, "no tags, no standard_attr_id");
    for (body, stored) in conversions(&peer) {
        let resp = rule(&c, ingress(&g, body.clone())).await;
        assert_eq!(resp.status(), 201, "{body}");
        let made = json_of(resp).await["security_group_rule"].clone();
        for (k, v) in stored.as_object().unwrap() {
            assert_eq!(&made[k], v, "{k} of {body}");
        }
    }
    let shown = get(&c, &format!("security-groups/{g}")).await["security_group"].clone();
    assert_eq!(shown["security_group_rules"].as_array().unwrap().len(), 11);
    assert_eq!(shown["revision_number"], 10, "one more per rule");
}

#[tokio::test]
async fn a_duplicate_rule_is_refused_naming_the_existing_one() {
    let c = Client::fast().await;
    let g = id(&group(&c, "probe-sg").await);
    let base = json!({"protocol": "tcp", "port_range_min": 80, "port_range_max": 443,
        "remote_ip_prefix": "10.0.0.0/8", "description": "web"});
    let first =
        id(&json_of(rule(&c, ingress(&g, base.clone())).await).await["security_group_rule"]);
    let msg = format!("Security group rule already exists. Rule id is {first}.");
    let mut words = base.clone();
    words["description"] = json!("other words");
    refused(
        rule(&c, ingress(&g, words)).await,
        409,
        "SecurityGroupRuleExists",
        &msg,
    )
    .await;
    let mut numbered = base.clone();
    numbered["protocol"] = json!("6");
    refused(
        rule(&c, ingress(&g, numbered)).await,
        409,
        "SecurityGroupRuleExists",
        &msg,
    )
    .await;
    let icmp = rule(&c, ingress(&g, json!({"protocol": "icmp"}))).await;
    let icmp = id(&json_of(icmp).await["security_group_rule"]);
    let anywhere = ingress(
        &g,
        json!({"protocol": "icmp", "remote_ip_prefix": "0.0.0.0/0"}),
    );
    let msg = format!("Security group rule already exists. Rule id is {icmp}.");
    refused(
        rule(&c, anywhere).await,
        409,
        "SecurityGroupRuleExists",
        &msg,
    )
    .await;
    let egress = json!({"security_group_id": g, "direction": "egress", "ethertype": "IPv6", "remote_ip_prefix": "::/0"});
    assert_eq!(
        rule(&c, egress).await.status(),
        409,
        "the egress rule Neutron made"
    );
}

/// Port ranges Neutron refuses, whatever the group.
fn port_refusals() -> Vec<Refusal> {
    let range = "For TCP/UDP protocols, port_range_min must be <= port_range_max";
    vec![
        (json!({"protocol": "tcp", "port_range_min": 90, "port_range_max": 80}), 400, "SecurityGroupInvalidPortRange", range.into()),
        (json!({"protocol": "tcp", "port_range_min": 22}), 400, "SecurityGroupInvalidPortRange", range.into()),
        (json!({"port_range_min": 22, "port_range_max": 22}), 400, "SecurityGroupProtocolRequiredWithPorts",
         "Must also specify protocol if port range is given.".into()),
        (json!({"protocol": "tcp", "port_range_min": 1, "port_range_max": 70000}), 400, "SecurityGroupInvalidPortValue",
         "Invalid value for port 70000".into()),
        (json!({"protocol": "tcp", "port_range_min": 0, "port_range_max": 10}), 400, "SecurityGroupInvalidPortValue",
         "Invalid value for port 0".into()),
        (json!({"protocol": "tcp", "port_range_min": "abc", "port_range_max": 5}), 400, "SecurityGroupInvalidPortValue",
         "Invalid value for port abc".into()),
        (json!({"protocol": "icmp", "port_range_min": 300}), 400, "SecurityGroupInvalidIcmpValue",
         "Invalid value for ICMP type (port_range_min) 300. It must be 0 to 255.".into()),
        (json!({"protocol": "icmp", "port_range_min": 8, "port_range_max": 300}), 400, "SecurityGroupInvalidIcmpValue",
         "Invalid value for ICMP code (port_range_max) 300. It must be 0 to 255.".into()),
        (json!({"protocol": "icmp", "port_range_max": 0}), 400, "SecurityGroupMissingIcmpType",
         "ICMP code (port-range-max) 0 is provided but ICMP type (port-range-min) is missing.".into()),
        (json!({"protocol": "gre", "port_range_min": 1, "port_range_max": 2}), 400, "SecurityGroupInvalidProtocolForPort",
         "Ports cannot be specified for protocol 47. Ports are only supported for DCCP, SCTP, TCP, UDP, UDPLITE.".into()),
    ]
}

/// Attributes and remotes Neutron refuses; `peer` and `ag` exist.
fn other_refusals(peer: &str, ag: &str) -> Vec<Refusal> {
    let protocols = "(None, 'any', 'ah', 'dccp', 'egp', 'esp', 'gre', 'hopopt', 'icmp', 'igmp', 'ip', 'ipip', 'ipv6-encap', 'ipv6-frag', 'ipv6-icmp', 'icmpv6', 'ipv6-nonxt', 'ipv6-opts', 'ipv6-route', 'ospf', 'pgm', 'rsvp', 'sctp', 'tcp', 'udp', 'udplite', 'vrrp')";
    let remotes = "Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may be provided.";
    vec![
        (json!({"remote_ip_prefix": "10.0.0.0/8", "remote_group_id": peer}), 400, "SecurityGroupMultipleRemoteEntites", remotes.into()),
        (json!({"remote_address_group_id": ag, "remote_group_id": peer}), 400, "SecurityGroupMultipleRemoteEntites", remotes.into()),
        (json!({"remote_group_id": NOWHERE}), 404, "SecurityGroupNotFound", format!("Security group {NOWHERE} does not exist")),
        (json!({"remote_address_group_id": NOWHERE}), 404, "AddressGroupNotFound",
         format!("Address group {NOWHERE} could not be found.")),
        (json!({"direction": "sideways"}), 400, "HTTPBadRequest",
         "Invalid input for direction. Reason: sideways is not in valid_values.".into()),
        (json!({"ethertype": "IPv5"}), 400, "SecurityGroupRuleInvalidEtherType",
         "Security group rule for ethertype 'IPv5' not supported. Allowed values are ['IPv4', 'IPv6'].".into()),
        (json!({"protocol": "bogus"}), 400, "SecurityGroupRuleInvalidProtocol",
         format!("Security group rule protocol bogus not supported. Only protocol values {protocols} and integer representations [0 to 255] are supported.")),
        (json!({"remote_ip_prefix": "2001:db8::/64"}), 400, "SecurityGroupRuleParameterConflict",
         "Conflicting value ethertype IPv4 for CIDR 2001:db8::/64".into()),
        (json!({"remote_ip_prefix": "10.0.0.300/8"}), 400, "InvalidCIDR", "Invalid CIDR 10.0.0.300/8 given as IP prefix.".into()),
    ]
}

#[tokio::test]
async fn rule_bodies_are_refused_in_neutrons_words() {
    let c = Client::fast().await;
    let g = id(&group(&c, "probe-sg").await);
    let peer = id(&group(&c, "probe-peer").await);
    let ag = id(&address_group(&c, json!({"name": "ag", "addresses": ["10.0.0.1/32"]})).await);
    for (body, status, kind, msg) in port_refusals()
        .into_iter()
        .chain(other_refusals(&peer, &ag))
    {
        refused(rule(&c, ingress(&g, body)).await, status, kind, &msg).await;
    }
    let msg = format!("Security group {NOWHERE} does not exist");
    let unknown = json!({"security_group_id": NOWHERE, "direction": "ingress"});
    refused(rule(&c, unknown).await, 404, "SecurityGroupNotFound", &msg).await;
    let msg = "Failed to parse request. Required attribute 'security_group_id' not specified";
    refused(
        rule(&c, json!({"direction": "ingress"})).await,
        400,
        "HTTPBadRequest",
        msg,
    )
    .await;
    let msg = "Failed to parse request. Required attribute 'direction' not specified";
    refused(
        rule(&c, json!({"security_group_id": g})).await,
        400,
        "HTTPBadRequest",
        msg,
    )
    .await;
    let rules = c
        .sim
        .security_group_rules_in(&c.sim.credentials().project_id);
    let of_g = rules.iter().filter(|r| r.security_group_id == g);
    assert_eq!(of_g.count(), 2, "nothing was added");
}

#[tokio::test]
async fn rules_are_listed_by_group_in_id_order_and_deleted_once() {
    let c = Client::fast().await;
    let g = id(&group(&c, "probe-sg").await);
    let tcp = json!({"protocol": "tcp", "port_range_min": 83, "port_range_max": 83});
    let r = id(&json_of(rule(&c, ingress(&g, tcp)).await).await["security_group_rule"]);
    let path = format!("security-group-rules?security_group_id={g}&fields=id&fields=direction");
    let listed = get(&c, &path).await["security_group_rules"].clone();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!((ids.len(), &ids), (3, &sorted));
    let path =
        format!("security-group-rules?direction=egress&security_group_id={g}&fields=ethertype");
    let egress = get(&c, &path).await["security_group_rules"].clone();
    let mut kinds: Vec<&str> = egress
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ethertype"].as_str().unwrap())
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["IPv4", "IPv6"]);
    let resp = fetch(&c, "security-group-rules?tags=x".into()).await;
    refused(
        resp,
        400,
        "HTTPBadRequest",
        "['tags'] is invalid attribute for filtering",
    )
    .await;
    let shown = get(&c, &format!("security-group-rules/{r}")).await;
    assert_eq!(shown["security_group_rule"]["port_range_min"], 83);
    assert_eq!(
        delete(&c, format!("security-group-rules/{r}"))
            .await
            .status(),
        204
    );
    let msg = format!("Security group rule {r} does not exist");
    let again = delete(&c, format!("security-group-rules/{r}")).await;
    refused(again, 404, "SecurityGroupRuleNotFound", &msg).await;
    let shown = fetch(&c, format!("security-group-rules/{r}")).await;
    refused(shown, 404, "SecurityGroupRuleNotFound", &msg).await;
    let g_now = get(&c, &format!("security-groups/{g}")).await;
    assert_eq!(
        g_now["security_group"]["revision_number"], 3,
        "created and deleted"
    );
}

#[tokio::test]
async fn address_group_takes_cidrs_normalised_sorted_and_counted() {
    let c = Client::fast().await;
    let post = |body: Value| {
        send(
            &c,
            Method::POST,
            "address-groups".into(),
            Some(json!({"address_group": body})),
        )
    };
    let msg = "Invalid input for addresses. Reason: '10.0.1.7' is not a valid IP subnet.";
    refused(
        post(json!({"addresses": ["10.0.1.7"]})).await,
        400,
        "HTTPBadRequest",
        msg,
    )
    .await;
    let msg = "Invalid input for addresses. Reason: '10.0.0.1/24' is not a list.";
    refused(
        post(json!({"addresses": "10.0.0.1/24"})).await,
        400,
        "HTTPBadRequest",
        msg,
    )
    .await;
    let addresses = json!([
        "10.0.0.5/32",
        "192.168.0.0/24",
        "10.0.2.9/24",
        "2001:db8::1/128"
    ]);
    let body = json!({"name": "probe-ag", "description": "probe ag", "addresses": addresses});
    let ag = address_group(&c, body).await;
    let project = c.sim.credentials().project_id;
    let expected = json!({"id": ag["id"], "name": "probe-ag", "project_id": project,
        "addresses": ["10.0.0.5/32", "10.0.2.0/24", "192.168.0.0/24", "2001:db8::1/128"],
        "revision_number": 4, "description": "probe ag", "created_at": ag["created_at"],
        "updated_at": ag["updated_at"], "tenant_id": project});
    assert_eq!(ag, expected);
    let merged = address_group(
        &c,
        json!({"name": "probe-ag2", "addresses": ["10.0.0.1/24", "10.0.0.0/24"]}),
    )
    .await;
    assert_eq!(
        (&merged["addresses"], &merged["revision_number"]),
        (&json!(["10.0.0.0/24"]), &json!(1))
    );
    let listed = get(
        &c,
        "address-groups?name=probe-ag&fields=id&fields=addresses",
    )
    .await;
    assert_eq!(
        listed,
        json!({"address_groups": [{"id": ag["id"], "addresses": expected["addresses"]}]})
    );
}

#[tokio::test]
async fn addresses_are_added_and_removed_all_or_nothing() {
    let c = Client::fast().await;
    let body = json!({"name": "probe-ag", "addresses": ["10.0.0.5/32", "192.168.0.0/24"]});
    let a = id(&address_group(&c, body).await);
    let change = |verb: &str, addresses: Value| {
        put(
            &c,
            format!("address-groups/{a}/{verb}"),
            json!({"addresses": addresses}),
        )
    };
    let resp = change("add_addresses", json!(["1.2.3.4", "9.0.0.0/8"])).await;
    assert_eq!(resp.status(), 200);
    let added = json_of(resp).await["address_group"].clone();
    let all = json!(["1.2.3.4/32", "10.0.0.5/32", "192.168.0.0/24", "9.0.0.0/8"]);
    assert_eq!(
        (&added["addresses"], &added["revision_number"]),
        (&all, &json!(4))
    );
    assert_eq!(added["shared"], false);
    assert!(added["standard_attr_id"].is_u64());
    let resp = change(
        "add_addresses",
        json!(["10.0.0.5", "10.0.0.6/32", "1.2.3.4/32"]),
    )
    .await;
    let msg =
        format!("Addresses ['1.2.3.4/32', '10.0.0.5/32'] already exist in the address group {a}.");
    refused(resp, 400, "AddressesAlreadyExist", &msg).await;
    let resp = change("add_addresses", json!(["foo"])).await;
    refused(resp, 400, "AddrFormatError", "invalid IPNetwork foo").await;
    let resp = change(
        "remove_addresses",
        json!(["10.0.0.9/32", "1.2.3.4", "10.0.0.8"]),
    )
    .await;
    let msg =
        format!("Addresses ['10.0.0.8/32', '10.0.0.9/32'] not found in the address group {a}.");
    refused(resp, 404, "AddressesNotFound", &msg).await;
    let resp = change("remove_addresses", json!(["1.2.3.4", "192.168.0.0/24"])).await;
    let removed = json_of(resp).await["address_group"].clone();
    let left = json!(["10.0.0.5/32", "9.0.0.0/8"]);
    assert_eq!(
        (&removed["addresses"], &removed["revision_number"]),
        (&left, &json!(6))
    );
    let snapshot = c.sim.address_groups_in(&c.sim.credentials().project_id);
    assert_eq!(json!(snapshot[0].addresses), left);
}

#[tokio::test]
async fn address_groups_have_no_tags() {
    let c = Client::fast().await;
    let ag = address_group(&c, json!({"name": "probe-ag0"})).await;
    assert_eq!(
        (&ag["addresses"], &ag["revision_number"]),
        (&json!([]), &json!(0))
    );
    assert!(ag.get("tags").is_none());
    let a = id(&ag);
    let not_found = "The resource could not be found.";
    let resp = put(
        &c,
        format!("address-groups/{a}/tags"),
        json!({"tags": ["a"]}),
    )
    .await;
    refused(resp, 404, "HTTPNotFound", not_found).await;
    let resp = send(&c, Method::PUT, format!("address-groups/{a}/tags/a"), None).await;
    refused(resp, 404, "HTTPNotFound", not_found).await;
    let resp = fetch(&c, "address-groups?tags=x".into()).await;
    refused(
        resp,
        400,
        "HTTPBadRequest",
        "['tags'] is invalid attribute for filtering",
    )
    .await;
    let update = json!({"address_group": {"addresses": ["10.0.0.2/32"]}});
    let resp = put(&c, format!("address-groups/{a}"), update).await;
    refused(
        resp,
        400,
        "HTTPBadRequest",
        "Cannot update read-only attribute addresses",
    )
    .await;
    let update = json!({"address_group": {"name": "probe-u2", "description": "x"}});
    let updated =
        json_of(put(&c, format!("address-groups/{a}"), update).await).await["address_group"]
            .clone();
    assert_eq!(
        (&updated["name"], &updated["revision_number"]),
        (&json!("probe-u2"), &json!(1))
    );
}

#[tokio::test]
async fn an_address_group_in_use_by_a_rule_is_kept_until_its_group_goes() {
    let c = Client::fast().await;
    let g = id(&group(&c, "probe-sg").await);
    let a = id(&address_group(
        &c,
        json!({"name": "probe-ag", "addresses": ["10.0.0.5/32"]}),
    )
    .await);
    let body = json!({"protocol": "tcp", "port_range_min": 5432, "port_range_max": 5432, "remote_address_group_id": a});
    let resp = rule(&c, ingress(&g, body)).await;
    assert_eq!(resp.status(), 201);
    assert_eq!(
        json_of(resp).await["security_group_rule"]["remote_address_group_id"],
        json!(a)
    );
    let resp = delete(&c, format!("address-groups/{a}")).await;
    let msg = format!("Address group {a} is in use on one or more security group rules.");
    refused(resp, 409, "AddressGroupInUse", &msg).await;
    assert_eq!(
        delete(&c, format!("security-groups/{g}")).await.status(),
        204
    );
    let resp = delete(&c, format!("address-groups/{a}")).await;
    assert_eq!(resp.status(), 204, "its rules went with the group");
    let msg = format!("Address group {a} could not be found.");
    refused(
        delete(&c, format!("address-groups/{a}")).await,
        404,
        "AddressGroupNotFound",
        &msg,
    )
    .await;
    refused(
        fetch(&c, format!("address-groups/{a}")).await,
        404,
        "AddressGroupNotFound",
        &msg,
    )
    .await;
}

#[tokio::test]
async fn a_group_in_use_by_a_port_is_kept_then_deleted_with_the_rules_naming_it() {
    let c = Client::fast().await;
    let g = id(&group(&c, "probe-sg").await);
    let peer = id(&group(&c, "probe-peer").await);
    let from_g = json!({"protocol": "tcp", "port_range_min": 22, "port_range_max": 22, "remote_group_id": g});
    let r = id(&json_of(rule(&c, ingress(&peer, from_g)).await).await["security_group_rule"]);
    let port = json!({"network_id": PRIVATE, "name": "probe-sg-port", "security_groups": [g]});
    let port = id(&made(&c, "ports", "port", port).await);
    let msg = format!("Security Group {g} in use.");
    refused(
        delete(&c, format!("security-groups/{g}")).await,
        409,
        "SecurityGroupInUse",
        &msg,
    )
    .await;
    let stateless = json!({"security_group": {"stateful": false}});
    let resp = put(&c, format!("security-groups/{g}"), stateless).await;
    refused(resp, 409, "SecurityGroupInUse", &msg).await;
    let using = get(&c, &format!("ports?security_groups={g}&fields=id")).await;
    assert_eq!(using, json!({"ports": [{"id": port}]}));
    assert_eq!(delete(&c, format!("ports/{port}")).await.status(), 204);
    assert_eq!(
        delete(&c, format!("security-groups/{g}")).await.status(),
        204
    );
    let msg = format!("Security group {g} does not exist");
    refused(
        fetch(&c, format!("security-groups/{g}")).await,
        404,
        "SecurityGroupNotFound",
        &msg,
    )
    .await;
    refused(
        delete(&c, format!("security-groups/{g}")).await,
        404,
        "SecurityGroupNotFound",
        &msg,
    )
    .await;
    let resp = fetch(&c, format!("security-group-rules/{r}")).await;
    assert_eq!(
        resp.status(),
        404,
        "the rule naming the deleted group went with it"
    );
    let groups = c.sim.security_groups_in(&c.sim.credentials().project_id);
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["default", "web", "probe-peer"]);
    assert_eq!(groups[2].rules.len(), 2, "its own egress rules only");
}
