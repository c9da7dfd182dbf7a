//! Which write an event becomes, decided as client-go's event recorder decides it
//! (`tools/record`, its `EventCorrelator`), with the clock passed in:
//!
//! - an event identical to one seen before (same object, type, reason, action and
//!   note) patches that event: its count goes up and its last time moves;
//! - an event with a new note is a new event, until an object has had
//!   [`SIMILAR_LIMIT`] different notes for one reason within [`SIMILAR_WINDOW`] of
//!   each other; from then on they go to one aggregate event whose note is the latest,
//!   prefixed with [`COMBINED`].
//!
//! kube-runtime's `Recorder` keys a series on everything but the note, so a second
//! event with a new note only counted up the first and kept its stale text; and
//! events.k8s.io/v1 refuses a changed note, which is why the aggregate is a core/v1
//! Event as client-go writes it.
//!
//! Deliberately not here: client-go's spam filter, which drops events outright; the
//! aggregate bounds what one object can cost instead.
//!
//! What is remembered is digests, not text: a replica remembers up to
//! [`REMEMBERED_MAX`] events and the recent notes of every object, whatever its share of
//! the fleet, and the object's UID, reason, action and notes were most of that memory.
//! The digests are keyed afresh in every process, so no object's notes can be made to
//! collide with another's.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// Different notes of one reason on one object before they are combined.
pub const SIMILAR_LIMIT: usize = 10;
/// How close together similar events must come to count towards [`SIMILAR_LIMIT`].
pub const SIMILAR_WINDOW: SignedDuration = SignedDuration::from_mins(10);
/// How long an event is remembered for a repeat to count it up (the API server's
/// default event time-to-live: after it, the event is gone anyway).
pub const REMEMBERED: SignedDuration = SignedDuration::from_hours(1);
/// At most this many events are remembered; the least recently seen go first.
pub const REMEMBERED_MAX: usize = 4096;
/// How often what is too old to matter is dropped.
const SWEEP_EVERY: SignedDuration = SignedDuration::from_mins(1);
/// The prefix of an aggregate event's note.
pub const COMBINED: &str = "(combined from similar events): ";

/// What makes events similar: the object (by UID), the type, reason and action.
#[derive(Debug, Hash)]
pub struct Similar<'a> {
    pub object_uid: &'a str,
    pub warning: bool,
    pub reason: &'a str,
    pub action: &'a str,
}

/// One event as remembered: the digest of what makes it similar, and of its note, or
/// `None` for the aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    similar: u128,
    note: Option<u64>,
}

/// The write that records an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// A new Event object.
    Create { note: String, at: Timestamp },
    /// Another occurrence of the Event `name`.
    Patch {
        name: String,
        note: String,
        count: i32,
        first: Timestamp,
        at: Timestamp,
    },
}

/// An event as it was written.
#[derive(Clone, Debug)]
struct Seen {
    name: String,
    count: i32,
    first: Timestamp,
    last: Timestamp,
}

/// The notes (their digests) of one kind of event on one object, in the current window:
/// at most [`SIMILAR_LIMIT`].
#[derive(Debug)]
struct Notes {
    distinct: Vec<u64>,
    last: Timestamp,
}

/// Digests of what the correlator remembers: 128 bits for what makes events similar
/// (two independently keyed hashes), 64 for a note among one object's few.
#[derive(Debug, Default)]
struct Digests {
    low: RandomState,
    high: RandomState,
}

impl Digests {
    fn similar(&self, similar: &Similar<'_>) -> u128 {
        (u128::from(self.high.hash_one(similar)) << 64) | u128::from(self.low.hash_one(similar))
    }

    fn note(&self, note: &str) -> u64 {
        self.low.hash_one(note)
    }
}

/// What the recorder remembers of the events it wrote.
#[derive(Debug, Default)]
pub struct Correlator {
    seen: HashMap<Key, Seen>,
    notes: HashMap<u128, Notes>,
    digests: Digests,
    swept: Option<Timestamp>,
}

impl Correlator {
    /// The write for an event `similar` with `note`, observed `now`, and the key to
    /// [`Correlator::written`] once it succeeded.
    pub fn decide(&mut self, similar: &Similar<'_>, note: &str, now: Timestamp) -> (Key, Write) {
        self.forget_old(now);
        let similar = self.digests.similar(similar);
        let digest = self.digests.note(note);
        let key = Key {
            similar,
            note: (!self.combines(similar, digest, now)).then_some(digest),
        };
        let note = match key.note {
            Some(_) => note.to_owned(),
            None => format!("{COMBINED}{note}"),
        };
        let write = match self.seen.get(&key) {
            Some(seen) => Write::Patch {
                name: seen.name.clone(),
                note,
                count: seen.count + 1,
                first: seen.first,
                at: now,
            },
            None => Write::Create { note, at: now },
        };
        (key, write)
    }

    /// Records that `write` for `key` reached the API server as the Event `name`.
    pub fn written(&mut self, key: Key, name: &str, write: &Write) {
        let seen = match write {
            Write::Create { at, .. } => Seen {
                name: name.to_owned(),
                count: 1,
                first: *at,
                last: *at,
            },
            Write::Patch {
                count, first, at, ..
            } => Seen {
                name: name.to_owned(),
                count: *count,
                first: *first,
                last: *at,
            },
        };
        self.seen.insert(key, seen);
        if self.seen.len() > REMEMBERED_MAX {
            self.forget_least_recent();
        }
    }

    /// Forgets the event of `key`: it is gone from the API server, so the next
    /// occurrence creates it again.
    pub fn lost(&mut self, key: &Key) {
        self.seen.remove(key);
    }

    /// Counts `note` among the similar notes and says whether the event goes to the
    /// aggregate: it does once the window holds [`SIMILAR_LIMIT`] different notes.
    fn combines(&mut self, similar: u128, note: u64, now: Timestamp) -> bool {
        let notes = self.notes.entry(similar).or_insert_with(|| Notes {
            distinct: Vec::new(),
            last: now,
        });
        if now.duration_since(notes.last) > SIMILAR_WINDOW {
            notes.distinct.clear();
        }
        notes.last = now;
        if notes.distinct.contains(&note) {
            return false;
        }
        if notes.distinct.len() + 1 < SIMILAR_LIMIT {
            notes.distinct.push(note);
            return false;
        }
        // Keep the set at its limit, as client-go does: drop one of the others.
        notes.distinct.remove(0);
        notes.distinct.push(note);
        true
    }

    /// Drops what is too old to matter, at most once a minute (a sweep visits
    /// everything remembered).
    fn forget_old(&mut self, now: Timestamp) {
        if self
            .swept
            .is_some_and(|at| now.duration_since(at) < SWEEP_EVERY)
        {
            return;
        }
        self.swept = Some(now);
        self.seen
            .retain(|_, seen| now.duration_since(seen.last) < REMEMBERED);
        self.notes
            .retain(|_, notes| now.duration_since(notes.last) <= SIMILAR_WINDOW);
    }

    fn forget_least_recent(&mut self) {
        if let Some(oldest) = self
            .seen
            .iter()
            .min_by_key(|(_, seen)| seen.last)
            .map(|(key, _)| *key)
        {
            self.seen.remove(&oldest);
        }
    }
}

#[cfg(test)]
#[path = "correlator_tests.rs"]
mod tests;
