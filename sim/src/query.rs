//! Query-string handling shared by Neutron and Octavia lists: exact-match filters on
//! the JSON view, tag filters, `fields` projection and `limit`/`marker` pages, plus
//! the URL encoding of `next` links. Nova's own filters are in `nova/servers.rs`.

use serde_json::{Map, Value};

pub(crate) type Params = Vec<(String, String)>;

/// `a,b,,c` → `["a", "b", "c"]`.
pub(crate) fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `application/x-www-form-urlencoded`, as Python's `urlencode` writes it.
pub(crate) fn encode_query(params: &[(String, String)]) -> String {
    let enc = |s: &str| {
        let mut out = String::new();
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    out.push(char::from(b))
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    };
    params
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

const PAGING: &[&str] = &[
    "fields",
    "limit",
    "marker",
    "page_reverse",
    "sort_key",
    "sort_dir",
    "sort",
];
/// The tag filters (a resource without tags refuses them).
pub(crate) const TAGS: &[&str] = &["tags", "tags-any", "not-tags", "not-tags-any"];

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn tags_of(item: &Value) -> Vec<String> {
    item["tags"]
        .as_array()
        .map(|a| a.iter().map(as_text).collect())
        .unwrap_or_default()
}

/// Keeps the items matching every filter; repeated keys are alternatives. `extra`
/// handles keys that are not plain view attributes (returns `None` if it does not know
/// the key). Unknown keys give `Err(key)` (Neutron answers 400 on those).
pub(crate) fn filter(
    items: Vec<Value>,
    q: &[(String, String)],
    extra: &dyn Fn(&Value, &str, &str) -> Option<bool>,
) -> Result<Vec<Value>, String> {
    let mut keys: Vec<&str> = q
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !PAGING.contains(k))
        .collect();
    keys.dedup();
    let mut out = Vec::new();
    'items: for item in items {
        for key in &keys {
            let values: Vec<&str> = q
                .iter()
                .filter(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
                .collect();
            let ok = if TAGS.contains(key) {
                let have = tags_of(&item);
                let want = split_list(values.join(",").as_str());
                match *key {
                    "tags" => want.iter().all(|t| have.contains(t)),
                    "tags-any" => want.iter().any(|t| have.contains(t)),
                    "not-tags" => !want.iter().all(|t| have.contains(t)),
                    _ => !want.iter().any(|t| have.contains(t)),
                }
            } else if let Some(ok) = values
                .iter()
                .map(|v| extra(&item, key, v))
                .try_fold(false, |acc, r| r.map(|b| acc || b))
            {
                ok
            } else if let Some(attr) = item.get(*key) {
                values.iter().any(|v| as_text(attr).eq_ignore_ascii_case(v))
            } else {
                return Err((*key).to_string());
            };
            if !ok {
                continue 'items;
            }
        }
        out.push(item);
    }
    Ok(out)
}

/// Keeps only the repeated `fields=` keys of each item (none given = all).
pub(crate) fn project(items: Vec<Value>, q: &[(String, String)]) -> Vec<Value> {
    let fields: Vec<&str> = q
        .iter()
        .filter(|(k, _)| k == "fields")
        .map(|(_, v)| v.as_str())
        .collect();
    if fields.is_empty() {
        return items;
    }
    items
        .into_iter()
        .map(|item| {
            let m: Map<String, Value> = fields
                .iter()
                .filter_map(|f| item.get(*f).map(|v| ((*f).to_string(), v.clone())))
                .collect();
            Value::Object(m)
        })
        .collect()
}

/// One page after `marker` of at most `limit` items; also the ID to continue from
/// when the page is full.
pub(crate) fn paginate(
    items: Vec<Value>,
    q: &[(String, String)],
) -> Result<(Vec<Value>, Option<String>), String> {
    let get = |key: &str| q.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let start = match get("marker") {
        Some(m) => items
            .iter()
            .position(|i| i["id"] == m)
            .map(|i| i + 1)
            .ok_or_else(|| format!("marker [{m}] not found"))?,
        None => 0,
    };
    let limit = match get("limit") {
        Some(l) => Some(
            l.parse::<usize>()
                .map_err(|_| format!("Bad limit request: limit {l} is not an integer"))?,
        ),
        None => None,
    };
    let page: Vec<Value> = items
        .into_iter()
        .skip(start)
        .take(limit.unwrap_or(usize::MAX))
        .collect();
    let next = match limit {
        Some(l) if l > 0 && page.len() == l => page.last().map(|i| as_text(&i["id"])),
        _ => None,
    };
    Ok((page, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(pairs: &[(&str, &str)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn filter_matches_attributes_tags_and_rejects_unknown_keys() {
        let items = vec![
            json!({"id": "1", "name": "a", "tags": ["x", "y"]}),
            json!({"id": "2", "name": "b", "tags": ["x"]}),
        ];
        let none = |_: &Value, _: &str, _: &str| None;
        assert_eq!(
            filter(items.clone(), &q(&[("tags", "x,y")]), &none).map(|v| v.len()),
            Ok(1)
        );
        assert_eq!(
            filter(items.clone(), &q(&[("name", "b")]), &none).map(|v| v.len()),
            Ok(1)
        );
        assert_eq!(
            filter(items, &q(&[("bogus", "1")]), &none),
            Err("bogus".to_string())
        );
    }

    #[test]
    fn paginate_continues_after_marker() {
        let items: Vec<Value> = (1..=3).map(|i| json!({"id": i.to_string()})).collect();
        let (page, next) = paginate(items.clone(), &q(&[("limit", "2")])).expect("page");
        assert_eq!((page.len(), next.as_deref()), (2, Some("2")));
        let (page, _) = paginate(items, &q(&[("limit", "2"), ("marker", "2")])).expect("page");
        assert_eq!(page, vec![json!({"id": "3"})]);
    }

    #[test]
    fn query_is_encoded_like_python_urlencode() {
        assert_eq!(encode_query(&q(&[("name", "^a b$")])), "name=%5Ea+b%24");
    }
}
