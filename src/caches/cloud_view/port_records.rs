//! The declared ports the operator owns, by owner record (the port's `description`):
//! so that a new VirtualMachine's ports, and the server booting on them, cost no
//! lookup each.
//!
//! Two answers, both for a term only:
//! - *none*: one listing of the project's ports (IDs and descriptions only), taken on
//!   the first create that needs it, showed no port of the record, and since then no
//!   read, create or write of this process touched one;
//! - *these*: what a read, or this process's own create, found within the last
//!   refresh periods, with no write since.
//!
//! Anything else (a failed create, an update, a deletion) makes the record's next look
//! go to Neutron.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::cloud::model::network::Port;
use crate::lock::Lock;

use super::servers::asked_since;

struct Entry {
    ports: Vec<Port>,
    confirmed: Instant,
    /// Written since: the view does not answer until Neutron is read again.
    stale: bool,
}

#[derive(Default)]
struct Records {
    by_record: HashMap<String, Entry>,
    /// When the latest listing of the project's ports was asked for.
    listed: Option<Instant>,
    /// The records that listing showed.
    shown: HashSet<String>,
}

#[derive(Default)]
pub struct PortView {
    records: Lock<Records>,
}

impl PortView {
    /// The record's ports, when the view can answer for them.
    pub fn settled(&self, record: &str, max_age: Duration) -> Option<Vec<Port>> {
        let records = self.records.lock();
        let entry = records.by_record.get(record)?;
        let fresh = !entry.stale && entry.confirmed.elapsed() <= max_age;
        fresh.then(|| entry.ports.clone())
    }

    /// Whether no port carries `record`, on the word of a listing asked for since
    /// `since` and of everything this process did since.
    pub fn vouches_none(&self, record: &str, since: Option<Instant>) -> bool {
        let records = self.records.lock();
        asked_since(records.listed, since)
            && !records.shown.contains(record)
            && !records.by_record.contains_key(record)
    }

    /// Whether a listing asked for since `since` (any, when `None`) was taken in.
    pub fn listed(&self, since: Option<Instant>) -> bool {
        asked_since(self.records.lock().listed, since)
    }

    /// What an authoritative read of the record's ports found.
    pub fn record(&self, record: &str, ports: &[Port]) {
        self.records.lock().by_record.insert(
            record.to_owned(),
            Entry {
                ports: ports.to_vec(),
                confirmed: Instant::now(),
                stale: false,
            },
        );
    }

    /// This process created `port` for `record`: with what the view knew, that is all
    /// there is (a record the view held nothing of was vouched empty before the create).
    pub fn created(&self, record: &str, port: Port) {
        let mut records = self.records.lock();
        let entry = entry_of(&mut records, record, false);
        if !entry.stale {
            entry.ports.push(port);
            entry.confirmed = Instant::now();
        }
    }

    /// After any other write, or one whose outcome is unknown: the next look goes to
    /// Neutron.
    pub fn forget(&self, record: &str) {
        entry_of(&mut self.records.lock(), record, true).stale = true;
    }

    /// Takes in a listing of the project's port records, asked for at `asked`.
    pub fn listing(&self, shown: HashSet<String>, asked: Instant) {
        let mut records = self.records.lock();
        records.shown = shown;
        records.listed = Some(asked);
    }
}

/// The record's entry; a new one holds no port (`stale`: none known yet).
fn entry_of<'a>(records: &'a mut Records, record: &str, stale: bool) -> &'a mut Entry {
    records
        .by_record
        .entry(record.to_owned())
        .or_insert_with(|| Entry {
            ports: Vec::new(),
            confirmed: Instant::now(),
            stale,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::ids::{NetworkId, PortId};

    const MINUTE: Duration = Duration::from_secs(60);

    fn port(id: &str) -> Port {
        Port {
            id: PortId::new(id),
            name: format!("db-0-{id}"),
            network_id: NetworkId::new("net"),
            device_id: String::new(),
            device_owner: String::new(),
            fixed_ips: vec![],
            status: "DOWN".into(),
            description: "r".into(),
            mac_address: "fa:16:3e:00:00:01".into(),
            allowed_address_pairs: vec![],
            security_groups: vec![],
        }
    }

    #[test]
    fn nothing_is_vouched_for_before_a_listing_or_once_a_record_was_touched() {
        let view = PortView::default();
        assert!(!view.vouches_none("a", None));
        let asked = Instant::now();
        view.listing(HashSet::from(["shown".to_owned()]), asked);
        assert!(view.vouches_none("a", None));
        assert!(view.vouches_none("a", Some(asked)));
        assert!(
            !view.vouches_none("a", Some(asked + Duration::from_millis(1))),
            "older than the term"
        );
        assert!(!view.vouches_none("shown", None));
        view.forget("a");
        assert!(!view.vouches_none("a", None));
        assert_eq!(view.settled("a", MINUTE), None);
    }

    #[test]
    fn an_own_create_is_all_there_is_unless_a_write_was_unanswered() {
        let view = PortView::default();
        view.created("a", port("p1"));
        assert_eq!(view.settled("a", MINUTE), Some(vec![port("p1")]));
        view.created("a", port("p2"));
        assert_eq!(view.settled("a", MINUTE).map(|p| p.len()), Some(2));
        view.forget("a");
        view.created("a", port("p3"));
        assert_eq!(
            view.settled("a", MINUTE),
            None,
            "the record was written since"
        );
        view.record("a", &[port("p1")]);
        assert_eq!(view.settled("a", MINUTE), Some(vec![port("p1")]));
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(view.settled("a", Duration::from_millis(1)), None, "too old");
    }
}
