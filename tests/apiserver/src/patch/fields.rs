//! Field sets and the `managedFields` bookkeeping of server-side apply.
//!
//! A field set is the set of leaf paths an object sets, in the apiserver's `fieldsV1` vocabulary (`f:name`,
//! `v:<value>` for set-lists, `k:{keys}` for map-lists). Lists are atomic unless the schema says
//! `x-kubernetes-list-type: set|map`; `metadata.finalizers` is a set and `metadata.ownerReferences` a map keyed
//! by `uid`, as in the real server. Ownership is tracked per (manager, operation, subresource). Not modelled:
//! per-version ownership conversion and granular `"."` self-ownership of maps (written, never consulted).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

pub type Path = Vec<String>;
pub type FieldSet = BTreeSet<Path>;

enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

fn list_type(schema: Option<&Value>) -> ListType {
    let Some(s) = schema else {
        return ListType::Atomic;
    };
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListType::Set,
        Some("map") => ListType::Map(
            s["x-kubernetes-list-map-keys"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|k| k.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        _ => ListType::Atomic,
    }
}

fn child<'a>(schema: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    let s = schema?;
    s.get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
}

/// The schema of `metadata`'s ownership-relevant fields, expressed like a CRD schema.
fn metadata_schema() -> Value {
    json!({"properties": {
        "labels": {"additionalProperties": {"type": "string"}},
        "annotations": {"additionalProperties": {"type": "string"}},
        "finalizers": {"x-kubernetes-list-type": "set"},
        "ownerReferences": {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"]},
    }})
}

pub const OWNED_METADATA: [&str; 4] = ["labels", "annotations", "finalizers", "ownerReferences"];

/// Schema for a top-level key of an object (metadata gets the built-in one).
pub fn top_schema(schema: Option<&Value>, key: &str, meta: &Value) -> Option<Value> {
    if key == "metadata" {
        Some(meta.clone())
    } else {
        child(schema, key).cloned()
    }
}

fn key_of(item: &Value, keys: &[String]) -> String {
    let mut m = Map::new();
    for k in keys {
        m.insert(k.clone(), item.get(k).cloned().unwrap_or(Value::Null));
    }
    format!("k:{}", Value::Object(m))
}

fn walk(v: &Value, schema: Option<&Value>, prefix: &mut Path, out: &mut FieldSet) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                prefix.push(format!("f:{k}"));
                walk(c, child(schema, k), prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => match list_type(schema) {
            ListType::Atomic => {
                out.insert(prefix.clone());
            }
            ListType::Set => {
                for it in items {
                    let mut p = prefix.clone();
                    p.push(format!("v:{it}"));
                    out.insert(p);
                }
            }
            ListType::Map(keys) => {
                let item_schema = schema.and_then(|s| s.get("items"));
                for it in items {
                    prefix.push(key_of(it, &keys));
                    match it.as_object() {
                        Some(m) if !m.is_empty() => {
                            for (k, c) in m {
                                prefix.push(format!("f:{k}"));
                                walk(c, child(item_schema, k), prefix, out);
                                prefix.pop();
                            }
                        }
                        _ => {
                            out.insert(prefix.clone());
                        }
                    }
                    prefix.pop();
                }
            }
        },
        _ => {
            out.insert(prefix.clone());
        }
    }
}

/// The fields an object sets: everything but apiVersion/kind and server-owned metadata.
pub fn field_set(obj: &Value, schema: Option<&Value>) -> FieldSet {
    let meta = metadata_schema();
    let mut out = FieldSet::new();
    for (k, v) in obj.as_object().into_iter().flatten() {
        if k == "apiVersion" || k == "kind" {
            continue;
        }
        let mut prefix = vec![format!("f:{k}")];
        if k == "metadata" {
            for f in OWNED_METADATA {
                if let Some(c) = v.get(f) {
                    prefix.push(format!("f:{f}"));
                    walk(c, child(Some(&meta), f), &mut prefix, &mut out);
                    prefix.pop();
                }
            }
        } else {
            walk(v, child(schema, k), &mut prefix, &mut out);
        }
    }
    out
}

fn matches_key(item: &Value, key_json: &str) -> bool {
    let Ok(Value::Object(keys)) = serde_json::from_str::<Value>(key_json) else {
        return false;
    };
    keys.iter()
        .all(|(k, v)| item.get(k).unwrap_or(&Value::Null) == v)
}

fn step<'a>(cur: &'a Value, elem: &str) -> Option<&'a Value> {
    if let Some(f) = elem.strip_prefix("f:") {
        cur.get(f)
    } else if let Some(v) = elem.strip_prefix("v:") {
        let want: Value = serde_json::from_str(v).ok()?;
        cur.as_array()?.iter().find(|x| **x == want)
    } else if let Some(k) = elem.strip_prefix("k:") {
        cur.as_array()?.iter().find(|x| matches_key(x, k))
    } else {
        None
    }
}

pub fn get_at<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |cur, e| step(cur, e))
}

/// Removes the field or list element at `path` (no-op when absent).
pub fn remove_at(obj: &mut Value, path: &[String]) {
    let Some((last, parent_path)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for e in parent_path {
        let next = if let Some(f) = e.strip_prefix("f:") {
            cur.get_mut(f)
        } else if let Some(k) = e.strip_prefix("k:") {
            cur.as_array_mut()
                .and_then(|a| a.iter_mut().find(|x| matches_key(x, k)))
        } else {
            None
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    if let Some(f) = last.strip_prefix("f:") {
        if let Some(m) = cur.as_object_mut() {
            m.remove(f);
        }
    } else if let Some(a) = cur.as_array_mut() {
        if let Some(v) = last.strip_prefix("v:") {
            if let Ok(want) = serde_json::from_str::<Value>(v) {
                a.retain(|x| *x != want);
            }
        } else if let Some(k) = last.strip_prefix("k:") {
            a.retain(|x| !matches_key(x, k));
        }
    }
}

/// `fieldsV1` trie of a set; `dots` marks interior nodes as owned too (what Update entries look like).
pub fn to_trie(set: &FieldSet, dots: bool) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut cur = &mut root;
        for (i, e) in path.iter().enumerate() {
            let node = cur.entry(e.clone()).or_insert_with(|| json!({}));
            let Some(m) = node.as_object_mut() else { break };
            if dots && i + 1 < path.len() {
                m.insert(".".into(), json!({}));
            }
            cur = m;
        }
    }
    Value::Object(root)
}

/// Leaf paths of a `fieldsV1` trie.
pub fn from_trie(v: &Value) -> FieldSet {
    fn rec(v: &Value, prefix: &mut Path, out: &mut FieldSet) {
        let Some(m) = v.as_object() else { return };
        let children: Vec<_> = m.iter().filter(|(k, _)| k.as_str() != ".").collect();
        if children.is_empty() {
            if !prefix.is_empty() {
                out.insert(prefix.clone());
            }
            return;
        }
        for (k, c) in children {
            prefix.push(k.clone());
            rec(c, prefix, out);
            prefix.pop();
        }
    }
    let mut out = FieldSet::new();
    rec(v, &mut Vec::new(), &mut out);
    out
}

/// `.spec.replicas`, `.metadata.finalizers[="x"]` — the way apply conflicts name a field.
pub fn display_path(path: &[String]) -> String {
    path.iter()
        .map(|e| {
            if let Some(f) = e.strip_prefix("f:") {
                format!(".{f}")
            } else if let Some(v) = e.strip_prefix("v:") {
                format!("[={v}]")
            } else {
                format!("[{}]", e.trim_start_matches("k:"))
            }
        })
        .collect()
}

/// Merges an apply body into the live object: maps recursively, set-lists by union, map-lists by key,
/// everything else replaced.
pub fn merge_applied(live: &mut Value, applied: &Value, schema: Option<&Value>) {
    let (Some(l), Some(a)) = (live.as_object_mut(), applied.as_object()) else {
        *live = applied.clone();
        return;
    };
    for (k, av) in a {
        let cs = child(schema, k);
        match (l.get_mut(k), av) {
            (Some(lv @ Value::Object(_)), Value::Object(_)) => merge_applied(lv, av, cs),
            (Some(Value::Array(la)), Value::Array(aa)) => match list_type(cs) {
                ListType::Atomic => *la = aa.clone(),
                ListType::Set => {
                    for it in aa {
                        if !la.contains(it) {
                            la.push(it.clone());
                        }
                    }
                }
                ListType::Map(keys) => {
                    let item_schema = cs.and_then(|s| s.get("items"));
                    for it in aa {
                        let key = key_of(it, &keys);
                        match la.iter_mut().find(|x| key_of(x, &keys) == key) {
                            Some(existing) => merge_applied(existing, it, item_schema),
                            None => la.push(it.clone()),
                        }
                    }
                }
            },
            _ => {
                l.insert(k.clone(), av.clone());
            }
        }
    }
}

/// The schema used for ownership of a whole object (metadata gets its built-in list types).
pub fn object_schema(schema: Option<&Value>) -> Value {
    let mut s = schema.cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = s.as_object_mut() {
        let props = m.entry("properties").or_insert_with(|| json!({}));
        if let Some(p) = props.as_object_mut() {
            p.insert("metadata".into(), metadata_schema());
        }
    }
    s
}
