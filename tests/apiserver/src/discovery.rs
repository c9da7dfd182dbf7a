//! Discovery documents: `/api`, `/apis` (plain and the aggregated `APIGroupDiscoveryList` kubectl 1.32 asks
//! for), `/api/v1`, `/apis/<group>`, `/apis/<group>/<version>`, and a minimal `/openapi/v3` (index plus one
//! document per group version carrying our CRD schemas) so `kubectl apply`/`explain` find the kinds.
//!
//! The OpenAPI documents list only the write paths and the schemas of served resources; built-in schemas are empty
//! objects (kubectl then treats built-ins as untyped).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, json_response};
use crate::registry::{Registry, ResourceType};

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

pub fn serve(reg: &Registry, segs: &[&str], accept: &str) -> Response {
    let aggregated = accept.contains("as=APIGroupDiscoveryList");
    match segs {
        ["api"] if aggregated => aggregated_response(aggregated_list(reg, true)),
        ["api"] => ok(
            &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
        ),
        ["apis"] if aggregated => aggregated_response(aggregated_list(reg, false)),
        ["apis"] => ok(&group_list(reg)),
        ["api", "v1"] => ok(&resource_list(reg, "", "v1")),
        ["apis", g] => match group_list(reg)["groups"]
            .as_array()
            .and_then(|gs| gs.iter().find(|x| x["name"] == *g))
        {
            Some(grp) => {
                let mut grp = grp.clone();
                grp["kind"] = json!("APIGroup");
                grp["apiVersion"] = json!("v1");
                ok(&grp)
            }
            None => ApiError::page_not_found().into_response(),
        },
        ["apis", g, v] if reg.groups().iter().any(|(gg, vv)| gg == g && vv == v) => {
            ok(&resource_list(reg, g, v))
        }
        ["openapi", "v3"] => ok(&openapi_index(reg)),
        ["openapi", "v3", "api", "v1"] => ok(&openapi_doc(reg, "", "v1")),
        ["openapi", "v3", "apis", g, v]
            if reg.groups().iter().any(|(gg, vv)| gg == g && vv == v) =>
        {
            ok(&openapi_doc(reg, g, v))
        }
        _ => ApiError::page_not_found().into_response(),
    }
}

fn ok(v: &Value) -> Response {
    json_response(StatusCode::OK, v, &[])
}

fn aggregated_response(v: Value) -> Response {
    let mut r = (StatusCode::OK, serde_json::to_vec(&v).unwrap_or_default()).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(AGGREGATED));
    r
}

fn group_list(reg: &Registry) -> Value {
    let mut groups: Vec<Value> = Vec::new();
    for (g, v) in reg.groups().into_iter().filter(|(g, _)| !g.is_empty()) {
        let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
        match groups.iter_mut().find(|x| x["name"] == json!(g)) {
            Some(x) => x["versions"]
                .as_array_mut()
                .into_iter()
                .for_each(|a| a.push(gv.clone())),
            None => {
                groups.push(json!({"name": g, "versions": [gv.clone()], "preferredVersion": gv}))
            }
        }
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn scope(rt: &ResourceType) -> &'static str {
    if rt.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    }
}

fn aggregated_resource(rt: &ResourceType) -> Value {
    let (g, v) = if rt.custom {
        (rt.group.clone(), rt.version.clone())
    } else {
        (String::new(), String::new())
    };
    let mut r = json!({
        "resource": rt.plural,
        "responseKind": {"group": g, "version": v, "kind": rt.kind},
        "scope": scope(rt),
        "singularResource": rt.singular,
        "verbs": rt.verbs,
    });
    if !rt.short_names.is_empty() {
        r["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        r["categories"] = json!(rt.categories);
    }
    let mut subs = Vec::new();
    if rt.status {
        subs.push(json!({"subresource": "status", "responseKind": {"group": g, "version": v, "kind": rt.kind}, "verbs": ["get", "patch", "update"]}));
    }
    if rt.scale.is_some() {
        subs.push(json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get", "patch", "update"]}));
    }
    if !subs.is_empty() {
        r["subresources"] = json!(subs);
    }
    r
}

fn aggregated_list(reg: &Registry, core: bool) -> Value {
    let mut items: Vec<Value> = Vec::new();
    for (g, v) in reg
        .groups()
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
    {
        let mut resources: Vec<&ResourceType> = reg
            .types
            .iter()
            .filter(|t| t.group == g && t.version == v)
            .collect();
        resources.sort_by(|a, b| a.plural.cmp(&b.plural));
        let version = json!({"version": v, "resources": resources.iter().map(|r| aggregated_resource(r)).collect::<Vec<_>>(), "freshness": "Current"});
        let meta = if g.is_empty() {
            json!({})
        } else {
            json!({"name": g})
        };
        match items.iter_mut().find(|x| x["metadata"] == meta) {
            Some(x) => x["versions"]
                .as_array_mut()
                .into_iter()
                .for_each(|a| a.push(version.clone())),
            None => items.push(json!({"metadata": meta, "versions": [version]})),
        }
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

fn resource_list(reg: &Registry, g: &str, v: &str) -> Value {
    let mut resources = Vec::new();
    for rt in reg.types.iter().filter(|t| t.group == g && t.version == v) {
        let mut r = json!({"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind, "verbs": rt.verbs});
        if !rt.short_names.is_empty() {
            r["shortNames"] = json!(rt.short_names);
        }
        if !rt.categories.is_empty() {
            r["categories"] = json!(rt.categories);
        }
        resources.push(r);
        if rt.status {
            resources.push(json!({"name": format!("{}/status", rt.plural), "singularName": "", "namespaced": rt.namespaced, "kind": rt.kind, "verbs": ["get", "patch", "update"]}));
        }
        if rt.scale.is_some() {
            resources.push(json!({"name": format!("{}/scale", rt.plural), "singularName": "", "namespaced": rt.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
        }
    }
    let gv = if g.is_empty() {
        v.to_string()
    } else {
        format!("{g}/{v}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
}

fn doc_path(g: &str, v: &str) -> String {
    if g.is_empty() {
        format!("api/{v}")
    } else {
        format!("apis/{g}/{v}")
    }
}

fn openapi_index(reg: &Registry) -> Value {
    let mut paths = Map::new();
    for (g, v) in reg.groups() {
        let p = doc_path(&g, &v);
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=0")}),
        );
    }
    json!({"paths": paths})
}

/// `com.linecorp.verda.v1alpha1.VirtualMachine`: the reversed group, as the apiserver names CRD schemas.
fn schema_name(rt: &ResourceType) -> String {
    let reversed: Vec<&str> = rt.group.split('.').rev().collect();
    if rt.group.is_empty() {
        format!("io.k8s.api.core.{}.{}", rt.version, rt.kind)
    } else {
        format!("{}.{}.{}", reversed.join("."), rt.version, rt.kind)
    }
}

/// The write operations of a resource, each declaring its GVK and the `fieldValidation` parameter: kubectl's
/// query-parameter verifier looks for exactly this before using server-side field validation.
fn openapi_paths(rt: &ResourceType, paths: &mut Map<String, Value>) {
    let prefix = if rt.group.is_empty() {
        format!("/api/{}", rt.version)
    } else {
        format!("/apis/{}/{}", rt.group, rt.version)
    };
    let ns = if rt.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    let gvk = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
    let params = json!([
        {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
    ]);
    let op = |verb: &str| json!({"operationId": format!("{verb}{}", rt.kind), "x-kubernetes-action": verb, "x-kubernetes-group-version-kind": gvk, "parameters": params, "responses": {}});
    paths.insert(
        format!("{prefix}{ns}/{}", rt.plural),
        json!({"post": op("post")}),
    );
    paths.insert(
        format!("{prefix}{ns}/{}/{{name}}", rt.plural),
        json!({"put": op("put"), "patch": op("patch")}),
    );
}

fn openapi_doc(reg: &Registry, g: &str, v: &str) -> Value {
    let mut schemas = Map::new();
    let mut paths = Map::new();
    for rt in reg.types.iter().filter(|t| t.group == g && t.version == v) {
        openapi_paths(rt, &mut paths);
        let mut s = rt.schema.as_deref().cloned().unwrap_or_else(
            || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
        if let Some(props) = s.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert("apiVersion".into(), json!({"type": "string"}));
            props.insert("kind".into(), json!({"type": "string"}));
            props.insert("metadata".into(), json!({"type": "object"}));
        }
        s["x-kubernetes-group-version-kind"] =
            json!([{"group": rt.group, "version": rt.version, "kind": rt.kind}]);
        schemas.insert(schema_name(rt), s);
    }
    json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.33.0"}, "paths": paths, "components": {"schemas": schemas}})
}
