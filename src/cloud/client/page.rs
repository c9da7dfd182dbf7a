//! A list page's items read straight from the body and handed on a few at a time, so
//! that a page of 1,000 servers is never held whole beside the body it came in (nor as a
//! `Value` tree: held as one, such a page cost about 10 KB a server).

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::cloud::error::ErrorKind;
use crate::cloud::transport::Reply;

/// Items handed on at a time.
const BATCH: usize = 50;

/// Gives the items under `key` to `take`, [`BATCH`] at a time, as they are read; returns
/// how many there were and the page's other fields (its links) as a `Value`. Items read
/// before one that does not parse have been given: a caller takes a page in as a whole
/// only once it is read whole.
pub(super) fn each_item<T: DeserializeOwned>(
    reply: &Reply,
    key: &str,
    take: &mut (dyn FnMut(Vec<T>) + Send),
) -> Result<(usize, Value), ErrorKind> {
    let mut fields = raw_fields(reply)?;
    let items = fields.remove(key).ok_or_else(|| invalid(key, "missing"))?;
    let mut reader = serde_json::Deserializer::from_str(items.get());
    let batches = Batches {
        take,
        items: PhantomData,
    };
    let got = batches
        .deserialize(&mut reader)
        .and_then(|got| reader.end().map(|()| got))
        .map_err(|e| invalid(key, e))?;
    let rest = fields
        .into_iter()
        .filter_map(|(k, v)| Some((k, serde_json::from_str(v.get()).ok()?)))
        .collect();
    Ok((got, Value::Object(rest)))
}

struct Batches<'a, T> {
    take: &'a mut (dyn FnMut(Vec<T>) + Send),
    items: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for Batches<'_, T> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, reader: D) -> Result<usize, D::Error> {
        reader.deserialize_seq(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for Batches<'_, T> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut batch = Vec::with_capacity(BATCH);
        let mut got = 0;
        while let Some(item) = seq.next_element::<T>()? {
            batch.push(item);
            got += 1;
            if batch.len() == BATCH {
                (self.take)(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
            }
        }
        if !batch.is_empty() {
            (self.take)(batch);
        }
        Ok(got)
    }
}

/// A reply whose field `key` cannot be read, and why.
pub(super) fn invalid(key: &str, e: impl fmt::Display) -> ErrorKind {
    ErrorKind::InvalidResponse {
        message: format!("cannot read `{key}`: {e}"),
    }
}

/// The top-level fields of a JSON object body, each left unparsed.
pub(super) fn raw_fields(reply: &Reply) -> Result<HashMap<String, &RawValue>, ErrorKind> {
    reply.json()
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http::StatusCode;
    use http::header::HeaderMap;

    use super::*;

    fn reply(body: &str) -> Reply {
        Reply {
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            body: Bytes::from(body.to_owned()),
        }
    }

    #[test]
    fn a_page_is_handed_on_in_batches_with_its_links_aside() {
        let items: Vec<u32> = (0..120).collect();
        let body = serde_json::json!({"things": items, "things_links": [{"rel": "next"}]});
        let mut batches = Vec::new();
        let (got, rest) = each_item::<u32>(&reply(&body.to_string()), "things", &mut |b| {
            batches.push(b)
        })
        .expect("a page");
        assert_eq!(got, 120);
        let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
        assert_eq!(sizes, [50, 50, 20]);
        assert_eq!(batches.concat(), (0..120).collect::<Vec<u32>>());
        assert_eq!(rest["things_links"][0]["rel"], "next");
    }

    #[test]
    fn an_item_that_does_not_parse_fails_the_page() {
        let mut taken = 0;
        let err = each_item::<u32>(&reply(r#"{"things": [1, "two"]}"#), "things", &mut |b| {
            taken += b.len()
        })
        .expect_err("a page with a string for a number");
        assert!(err.to_string().contains("`things`"), "{err}");
        assert_eq!(
            taken, 0,
            "a batch is handed on only once full or at the end"
        );
        let (got, _) = each_item::<u32>(&reply(r#"{"things": []}"#), "things", &mut |_| {
            panic!("nothing to take")
        })
        .expect("an empty page");
        assert_eq!(got, 0);
    }
}
