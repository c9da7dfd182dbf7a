//! Server-side `Table` output (what `kubectl get` asks for with `Accept: ...;as=Table`): a `Name` column, the
//! CRD's `additionalPrinterColumns` (dates rendered as ages), rows with `PartialObjectMetadata`.
//!
//! The JSONPath subset covers what printer columns use: `.a.b`, `.a[0].b`, and filters `[?(@.k=="v")]`.
//! Events (both API groups) get the apiserver's event columns (`events`); other built-ins get `Name` and `Age`
//! only.

mod events;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::registry::{PrinterColumn, ResourceType, View};

pub(crate) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

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

/// The time since `ts` as the apiserver prints ages (`translateTimestampSince`).
pub fn age(ts: &str) -> String {
    let Ok(t) = DateTime::parse_from_rfc3339(ts) else {
        return "<unknown>".into();
    };
    human_duration((Utc::now() - t.with_timezone(&Utc)).num_seconds())
}

/// apimachinery's `duration.HumanDuration`: two significant units at most, a unit that is zero left out.
fn human_duration(s: i64) -> String {
    // Up to a second in the future is clock skew, as in apimachinery.
    if s < -1 {
        return "<invalid>".into();
    }
    let s = s.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    let pair = |big: i64, a: &str, small: i64, b: &str| match small {
        0 => format!("{big}{a}"),
        _ => format!("{big}{a}{small}{b}"),
    };
    match s {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 => pair(m, "m", s % 60, "s"),
        _ if h < 3 => format!("{m}m"),
        _ if h < 8 => pair(h, "h", m % 60, "m"),
        _ if h < 48 => format!("{h}h"),
        _ if h < 24 * 8 => pair(d, "d", h % 24, "h"),
        _ if h < 24 * 365 * 2 => format!("{d}d"),
        _ if h < 24 * 365 * 8 => pair(d / 365, "y", d % 365, "d"),
        _ => format!("{}y", d / 365),
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

pub(crate) fn column(name: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": "string", "format": format, "description": description, "priority": priority})
}

/// A `Name` column, then the printer columns; one cell per column.
fn printer_columns(rt: &ResourceType, items: &[Value]) -> (Vec<Value>, Vec<Vec<Value>>) {
    let cols = columns(rt);
    let mut defs = vec![column("Name", "name", NAME_DESCRIPTION, 0)];
    defs.extend(cols.iter().map(|c| json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority})));
    let cells = items
        .iter()
        .map(|o| {
            let mut cells = vec![o["metadata"]["name"].clone()];
            cells.extend(cols.iter().map(|c| cell(c, o)));
            cells
        })
        .collect();
    (defs, cells)
}

/// What each row of a Table carries besides its cells (`includeObject`): nothing, the object's metadata (the
/// default) or the whole object, which `kubectl get --sort-by` needs to sort by a field that is no column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => Self::None,
            Some("Object") => Self::Object,
            _ => Self::Metadata,
        }
    }
}

/// The Table of `items` (wire shape of `rt`); each row carries what `include` asks for.
pub fn render(rt: &ResourceType, items: &[Value], rv: &str, include: IncludeObject) -> Value {
    let (defs, cells) = match rt.view {
        View::CoreEvent | View::EventsV1 => events::table(rt.view, items),
        View::Plain => printer_columns(rt, items),
    };
    let rows: Vec<Value> = items
        .iter()
        .zip(cells)
        .map(|(o, cells)| match include {
            IncludeObject::None => json!({"cells": cells}),
            IncludeObject::Metadata => {
                json!({"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}})
            }
            IncludeObject::Object => json!({"cells": cells, "object": o}),
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

    #[test]
    fn ages_read_like_kubectl_with_zero_units_left_out() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (5, "5s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60, "3h1m"),
            (8 * 3600 + 59, "8h"),
            (2 * 86400, "2d"),
            (2 * 86400 + 3600, "2d1h"),
            (30 * 86400, "30d"),
            (3 * 365 * 86400, "3y"),
            (3 * 365 * 86400 + 86400, "3y1d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs}s");
        }
    }
}
