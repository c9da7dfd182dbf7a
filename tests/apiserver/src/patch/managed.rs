//! `metadata.managedFields` entries: recording Update operations and computing server-side apply
//! (conflicts, force, removal of fields a manager stopped applying).
//!
//! Update writes take ownership of every field they change without conflicts; Apply writes conflict with any
//! other manager owning a field they set to a different value (409 unless `force`). Not modelled: ownership
//! across API versions, and the `"."` self-ownership of maps in conflict checks.

use serde_json::{Value, json};

use super::fields::{self, FieldSet, Path};

#[derive(Debug, Clone)]
pub struct Entry {
    pub manager: String,
    pub operation: String,
    pub subresource: Option<String>,
    pub api_version: String,
    pub time: String,
    pub set: FieldSet,
}

impl Entry {
    fn same_slot(&self, manager: &str, operation: &str, sub: Option<&str>) -> bool {
        self.manager == manager && self.operation == operation && self.subresource.as_deref() == sub
    }
}

pub fn now_seconds() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn read_entries(obj: &Value) -> Vec<Entry> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| {
                e.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            Entry {
                manager: s("manager"),
                operation: s("operation"),
                subresource: e
                    .get("subresource")
                    .and_then(Value::as_str)
                    .map(String::from),
                api_version: s("apiVersion"),
                time: s("time"),
                set: fields::from_trie(e.get("fieldsV1").unwrap_or(&Value::Null)),
            }
        })
        .collect()
}

pub fn write_entries(obj: &mut Value, entries: &[Entry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.set.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager, "operation": e.operation, "apiVersion": e.api_version, "time": e.time,
                "fieldsType": "FieldsV1", "fieldsV1": fields::to_trie(&e.set, e.operation == "Update"),
            });
            if let Some(s) = &e.subresource {
                v["subresource"] = json!(s);
            }
            v
        })
        .collect();
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            m.remove("managedFields");
        } else {
            m.insert("managedFields".into(), Value::Array(list));
        }
    }
}

fn slot<'a>(
    entries: &'a mut Vec<Entry>,
    manager: &str,
    op: &str,
    sub: Option<&str>,
    api_version: &str,
) -> &'a mut Entry {
    let idx = match entries.iter().position(|e| e.same_slot(manager, op, sub)) {
        Some(i) => i,
        None => {
            entries.push(Entry {
                manager: manager.into(),
                operation: op.into(),
                subresource: sub.map(String::from),
                api_version: api_version.into(),
                time: String::new(),
                set: FieldSet::new(),
            });
            entries.len() - 1
        }
    };
    &mut entries[idx]
}

/// Records an Update-operation write: `manager` owns every field it changed; removed fields lose all owners.
pub fn track_update(
    old: Option<&Value>,
    new: &mut Value,
    schema: Option<&Value>,
    manager: &str,
    sub: Option<&str>,
) {
    let schema = fields::object_schema(schema);
    let new_set = fields::field_set(new, Some(&schema));
    let old_set = old
        .map(|o| fields::field_set(o, Some(&schema)))
        .unwrap_or_default();
    let changed: FieldSet = new_set
        .iter()
        .filter(|p| {
            !old_set.contains(*p)
                || old.and_then(|o| fields::get_at(o, p)) != fields::get_at(new, p)
        })
        .cloned()
        .collect();
    let removed: FieldSet = old_set.difference(&new_set).cloned().collect();
    let mut entries = read_entries(new);
    for e in entries.iter_mut() {
        e.set
            .retain(|p| !changed.contains(p) && !removed.contains(p));
    }
    if !changed.is_empty() {
        let api_version = new["apiVersion"].as_str().unwrap_or_default().to_string();
        let e = slot(&mut entries, manager, "Update", sub, &api_version);
        e.set.extend(changed);
        e.time = now_seconds();
    }
    write_entries(new, &entries);
}

/// A field another manager owns with a different value.
#[derive(Debug, Clone)]
pub struct Conflict {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub path: Path,
}

/// Server-side apply of `applied` (already reduced to the owned parts) onto `live`.
/// Returns the merged object with updated managedFields, or the conflicts when `force` is false.
pub fn apply(
    live: &Value,
    applied: &Value,
    schema: Option<&Value>,
    manager: &str,
    sub: Option<&str>,
    force: bool,
) -> Result<Value, Vec<Conflict>> {
    let schema = fields::object_schema(schema);
    let applied_set = fields::field_set(applied, Some(&schema));
    let mut entries = read_entries(live);
    let mut conflicts = Vec::new();
    for p in &applied_set {
        let live_v = fields::get_at(live, p);
        if live_v.is_none() || live_v == fields::get_at(applied, p) {
            continue;
        }
        for e in entries
            .iter()
            .filter(|e| e.manager != manager && e.set.contains(p))
        {
            conflicts.push(Conflict {
                manager: e.manager.clone(),
                operation: e.operation.clone(),
                api_version: e.api_version.clone(),
                path: p.clone(),
            });
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflicts);
    }
    for c in &conflicts {
        for e in entries.iter_mut().filter(|e| e.manager == c.manager) {
            e.set.remove(&c.path);
        }
    }
    let mut merged = live.clone();
    fields::merge_applied(&mut merged, applied, Some(&schema));
    let previous = entries
        .iter()
        .find(|e| e.same_slot(manager, "Apply", sub))
        .map(|e| e.set.clone())
        .unwrap_or_default();
    for p in previous.difference(&applied_set) {
        let owned_elsewhere = entries
            .iter()
            .any(|e| !e.same_slot(manager, "Apply", sub) && e.set.contains(p));
        if !owned_elsewhere {
            fields::remove_at(&mut merged, p);
        }
    }
    let api_version = applied["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let e = slot(&mut entries, manager, "Apply", sub, &api_version);
    e.set = applied_set;
    e.time = now_seconds();
    // Apply entries come first, like the real server's ordering.
    entries.sort_by_key(|e| e.operation != "Apply");
    write_entries(&mut merged, &entries);
    Ok(merged)
}
