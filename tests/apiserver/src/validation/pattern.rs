//! Regular expressions of names and schema `pattern`s, compiled once per thread: every
//! write checks a handful, and compiling one costs more than the rest of the write.

use std::cell::RefCell;
use std::collections::HashMap;

use regex::Regex;

thread_local! {
    static COMPILED: RefCell<HashMap<String, Option<Regex>>> = RefCell::new(HashMap::new());
}

/// Patterns come from the server's own constants and from CRD schemas, so few are ever
/// seen; past this many the cache starts over.
const KEPT: usize = 256;

/// Whether `s` matches `pattern`; `None` when `pattern` is not a valid expression.
pub fn is_match(pattern: &str, s: &str) -> Option<bool> {
    COMPILED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.contains_key(pattern) {
            if cache.len() >= KEPT {
                cache.clear();
            }
            cache.insert(pattern.to_owned(), Regex::new(pattern).ok());
        }
        cache
            .get(pattern)
            .and_then(Option::as_ref)
            .map(|re| re.is_match(s))
    })
}

#[cfg(test)]
mod tests {
    use super::is_match;

    #[test]
    fn a_pattern_matches_as_compiled_and_an_invalid_one_is_none() {
        assert_eq!(is_match("^[a-z]+$", "web"), Some(true));
        assert_eq!(is_match("^[a-z]+$", "Web"), Some(false));
        // Seen before: the same answer from the cache.
        assert_eq!(is_match("^[a-z]+$", "web"), Some(true));
        assert_eq!(is_match("([", "web"), None);
    }
}
