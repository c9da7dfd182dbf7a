//! Nova's shared field types (`nova/api/validation/parameter_types.py` and the format
//! checkers of `validators.py`) that the operator's requests carry: `name`,
//! `description`, `metadata`, `tag`, and `user_data`'s base64.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::keywords::{
    Check, Invalid, fail, max_length, no_other_keys, non_empty, object, pattern, string,
};
use crate::wire::py_repr;

const MAX_LENGTH: usize = 255;
/// `tag.MAX_TAG_LENGTH`.
const MAX_TAG_LENGTH: usize = 60;
const TAG_PATTERN: &str = "^[^,/]*$";
const METADATA_KEY: &str = "^[a-zA-Z0-9-_:. ]{1,255}$";
const INVALID_NAME: &str = "An invalid 'name' value was provided. The name must be: printable characters. Can not start or end with whitespace.";
/// Nova prints its generated pattern here: thousands of characters, one range per
/// printable block of the Basic Multilingual Plane. This stands for it.
const DESCRIPTION_PATTERN: &str = "^[<printable characters>]*$";

/// Not printable for Nova (`_is_printable`: categories C*, Zl, Zp), or outside the
/// Basic Multilingual Plane, which Nova's generated patterns do not cover.
static UNPRINTABLE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[\p{C}\p{Zl}\p{Zp}\x{FFFF}-\x{10FFFF}]").ok());
static EDGE_SPACE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^\p{Zs}|\p{Zs}$").ok());

fn found(re: &Option<Regex>, s: &str) -> bool {
    re.as_ref().is_some_and(|re| re.is_match(s))
}

/// `name` (format `name`): printable, no leading or trailing whitespace, 1-255
/// characters. A format failure is Nova's `InvalidName`, worded on its own.
pub(super) fn name(at: &str, v: &Value) -> Check {
    let s = string(at, v)?;
    if found(&UNPRINTABLE, s) || found(&EDGE_SPACE, s) {
        return Err(Invalid::Bare(INVALID_NAME.into()));
    }
    non_empty(at, v, s.is_empty())?;
    max_length(at, v, s, MAX_LENGTH)
}

/// `description`: null, or printable characters, at most 255.
pub(super) fn description(v: &Value) -> Check {
    let at = "description";
    let Some(s) = v.as_str() else {
        let why = format!("{} is not of type 'string', 'null'", py_repr(v));
        return if v.is_null() {
            Ok(())
        } else {
            Err(fail(at, v, why))
        };
    };
    pattern(at, v, !found(&UNPRINTABLE, s), DESCRIPTION_PATTERN)?;
    max_length(at, v, s, MAX_LENGTH)
}

/// `metadata`: string values of at most 255 characters under keys matching
/// [`METADATA_KEY`]; any other key refuses the whole object.
pub(super) fn metadata<'a>(at: &str, v: &'a Value) -> Result<&'a Map<String, Value>, Invalid> {
    let m = object(at, v)?;
    for (key, value) in m.iter().filter(|(k, _)| metadata_key(k)) {
        let s = string(key, value)?;
        max_length(key, value, s, MAX_LENGTH)?;
    }
    let others = m.keys().filter(|k| !metadata_key(k)).collect();
    no_other_keys(at, v, others, METADATA_KEY)?;
    Ok(m)
}

/// [`METADATA_KEY`]: 1-255 of letters, digits, `-`, `_`, `:`, `.` and spaces.
fn metadata_key(k: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-_:. ".contains(c);
    (1..=MAX_LENGTH).contains(&k.chars().count()) && k.chars().all(allowed)
}

/// `tag`: no `,` or `/`, 1-60 characters.
pub(super) fn tag(at: &str, v: &Value) -> Check {
    let s = string(at, v)?;
    pattern(at, v, !s.contains([',', '/']), TAG_PATTERN)?;
    non_empty(at, v, s.is_empty())?;
    max_length(at, v, s, MAX_TAG_LENGTH)
}

/// Format `base64`, strict (standard alphabet, padded).
pub(super) fn base64(at: &str, v: &Value, s: &str) -> Check {
    let s: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let body = s.trim_end_matches('=');
    let ok = s.len().is_multiple_of(4)
        && s.len() - body.len() <= 2
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/');
    match ok {
        true => Ok(()),
        false => Err(fail(at, v, format!("{} is not a 'base64'", py_repr(v)))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn base64_check_accepts_padded_and_rejects_garbage() {
        let ok = |s: &str| base64("user_data", &json!(s), s).is_ok();
        assert!(ok("I2Nsb3VkLWNvbmZpZwpydW5jbWQ6CiAgLSBlY2hvIGhlbGxvCg=="));
        assert!(ok("bHM="));
        assert!(!ok("not base64!!"));
        assert!(!ok("abc"));
    }

    #[test]
    fn names_must_be_printable_without_edge_whitespace() {
        for good in ["web-0", "a b", "日本語"] {
            assert!(name("name", &json!(good)).is_ok(), "{good}");
        }
        for bad in [" web", "web ", "a\tb", "a\nb", "\u{200b}x", "😀"] {
            let refused = matches!(name("name", &json!(bad)), Err(Invalid::Bare(_)));
            assert!(refused, "{bad:?}");
        }
    }

    #[test]
    fn descriptions_may_hold_inner_spaces_but_no_control_characters() {
        assert!(description(&json!(" two  words ")).is_ok());
        assert!(description(&json!(null)).is_ok());
        assert!(description(&json!("line\nbreak")).is_err());
    }

    #[test]
    fn metadata_keys_follow_novas_pattern() {
        assert!(metadata_key("verda.linecorp.com:uid"));
        assert!(metadata_key("a-b_c d.e"));
        assert!(!metadata_key("verda.linecorp.com/uid"));
        assert!(!metadata_key(""));
        assert!(!metadata_key(&"k".repeat(256)));
    }
}
