//! Server-side `Table` output (what `kubectl get` asks for with `Accept: ...;as=Table`): a `Name` column, the
//! CRD's `additionalPrinterColumns` (dates rendered as ages), rows with `PartialObjectMetadata`.
//!
//! The JSONPath subset covers what printer columns use: `.a.b`, `.a[0].b`, and filters `[?(@.k=="v")]`.
//! Built-ins get `Name` and `Age` only.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::registry::{PrinterColumn, ResourceType};

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// Evaluates a printer-column JSONPath; `None` when any step is missing.
pub fn eval<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    let mut rest = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            cur = cur.get(&r[..end])?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (key, want) = filter.split_once("==")?;
                let want = want.trim().trim_matches(|c| c == '"' || c == '\'');
                cur = cur
                    .as_array()?
                    .iter()
                    .find(|x| x.get(key.trim()).and_then(Value::as_str) == Some(want))?;
            } else {
                cur = cur.get(inner.parse::<usize>().ok()?)?;
            }
        } else {
            return None;
        }
    }
    Some(cur)
}

/// Kubernetes' `HumanDuration` of the time since `ts`.
pub fn age(ts: &str) -> String {
    let Ok(t) = DateTime::parse_from_rfc3339(ts) else {
        return "<unknown>".into();
    };
    let s = (Utc::now() - t.with_timezone(&Utc)).num_seconds().max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    match s {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 => format!("{m}m{}s", s % 60),
        _ if h < 3 => format!("{m}m"),
        _ if h < 8 => format!("{h}h{}m", m % 60),
        _ if h < 48 => format!("{h}h"),
        _ if d < 8 => format!("{d}d{}h", h % 24),
        _ => format!("{d}d"),
    }
}

fn columns(rt: &ResourceType) -> Vec<PrinterColumn> {
    let mut cols = rt.printer_columns.clone();
    if cols.is_empty() {
        cols.push(PrinterColumn {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            json_path: ".metadata.creationTimestamp".into(),
            priority: 0,
            description: "CreationTimestamp".into(),
        });
    }
    cols
}

fn cell(c: &PrinterColumn, obj: &Value) -> Value {
    match (eval(obj, &c.json_path), c.type_.as_str()) {
        (None, _) => Value::Null,
        (Some(Value::String(s)), "date") => json!(age(s)),
        (Some(v), _) => v.clone(),
    }
}

pub fn render(rt: &ResourceType, items: &[Value], rv: &str) -> Value {
    let cols = columns(rt);
    let mut defs = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0}),
    ];
    defs.extend(cols.iter().map(|c| json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority})));
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let mut cells = vec![o["metadata"]["name"].clone()];
            cells.extend(cols.iter().map(|c| cell(c, o)));
            json!({"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}})
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv}, "columnDefinitions": defs, "rows": rows})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonpath_filters_select_the_ready_condition() {
        let obj = json!({"status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(
            eval(&obj, ".status.conditions[?(@.type==\"Ready\")].status"),
            Some(&json!("True"))
        );
        assert_eq!(
            eval(&obj, ".status.conditions[0].type"),
            Some(&json!("Synced"))
        );
        assert_eq!(eval(&obj, ".status.missing"), None);
    }
}
