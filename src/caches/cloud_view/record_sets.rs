//! A project's DNS record sets, per Designate zone: listed at most once per period
//! however many objects name the zone (whoever asks first lists, the others wait and
//! share it). A listing that shows a change still `PENDING` is kept only for a moment,
//! so those waiting for Designate see it done. The operator's own writes go into the
//! listing as Designate answered them (`PENDING`): the objects of a zone that write
//! together then share the next listing, a moment later, which confirms them all,
//! instead of listing the zone once per write.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cloud::CloudError;
use crate::cloud::ids::{DnsZoneId, RecordSetId};
use crate::cloud::model::dns::RecordSet;
use crate::lock::Lock;

/// How long a listing with a change still `PENDING` is shared: the objects of one zone
/// that poll together share it, and the next poll lists again.
const PENDING_SHARED: Duration = Duration::from_secs(1);

type Listed = tokio::sync::Mutex<Option<(Instant, Arc<Vec<RecordSet>>)>>;

#[derive(Default)]
pub struct RecordSetView {
    zones: Lock<HashMap<DnsZoneId, Arc<Listed>>>,
}

impl RecordSetView {
    /// The zone's record sets as listed within `max_age`, else as `listing` lists them.
    pub async fn within(
        &self,
        zone: &DnsZoneId,
        max_age: Duration,
        listing: impl Future<Output = Result<Vec<RecordSet>, CloudError>>,
    ) -> Result<Arc<Vec<RecordSet>>, CloudError> {
        let entry = self.zones.lock().entry(zone.clone()).or_default().clone();
        let mut listed = entry.lock().await;
        if let Some((at, sets)) = listed.as_ref() {
            let age = at.elapsed();
            let pending = sets.iter().any(RecordSet::is_pending);
            if age < max_age && (!pending || age < PENDING_SHARED) {
                return Ok(sets.clone());
            }
        }
        let sets = Arc::new(listing.await?);
        *listed = Some((Instant::now(), sets.clone()));
        Ok(sets)
    }

    /// Lists the zone again on the next ask: what the operator's write did is not known.
    pub fn forget(&self, zone: &DnsZoneId) {
        self.zones.lock().remove(zone);
    }

    /// Puts the operator's write, as Designate answered it, into the zone's listing
    /// (when there is one); the listing keeps its age, and with the write `PENDING` is
    /// shared only as [`PENDING_SHARED`] allows.
    pub async fn wrote(&self, zone: &DnsZoneId, written: Written) {
        let Some(entry) = self.zones.lock().get(zone).cloned() else {
            return;
        };
        let mut listed = entry.lock().await;
        let Some((_, sets)) = listed.as_mut() else {
            return;
        };
        let id = match &written {
            Written::Put(set) => &set.id,
            Written::Deleted(id) => id,
        };
        let mut next: Vec<RecordSet> = sets.iter().filter(|s| s.id != *id).cloned().collect();
        if let Written::Put(set) = written {
            next.push(set);
        }
        *sets = Arc::new(next);
    }
}

/// What one of the operator's writes did to a zone's record sets.
#[derive(Clone, Debug, PartialEq)]
pub enum Written {
    /// Created or updated: the record set as Designate answered (`PENDING`).
    Put(RecordSet),
    Deleted(RecordSetId),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(id: &str, status: &str) -> RecordSet {
        RecordSet {
            id: RecordSetId::new(id),
            zone_id: DnsZoneId::new("z"),
            name: format!("{id}.example.test."),
            type_: "A".into(),
            records: vec!["192.0.2.1".into()],
            ttl: None,
            description: None,
            status: status.into(),
        }
    }

    #[tokio::test]
    async fn a_write_joins_the_shared_listing_and_the_next_listing_confirms_it() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let view = RecordSetView::default();
        let zone = DnsZoneId::new("z");
        let lists = AtomicUsize::new(0);
        let listing = |sets: Vec<RecordSet>| {
            let lists = &lists;
            async move {
                lists.fetch_add(1, SeqCst);
                Ok(sets)
            }
        };
        let hour = Duration::from_secs(3600);
        let first = vec![set("a", "ACTIVE"), set("b", "ACTIVE")];
        view.within(&zone, hour, listing(first))
            .await
            .expect("listed");
        view.wrote(&zone, Written::Put(set("c", "PENDING"))).await;
        view.wrote(&zone, Written::Deleted(RecordSetId::new("a")))
            .await;
        let shared = view
            .within(&zone, hour, listing(Vec::new()))
            .await
            .expect("shared");
        let ids: Vec<&str> = shared.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["b", "c"]);
        assert_eq!(lists.load(SeqCst), 1, "the writes cost no listing");
        // A write PENDING: a moment later the zone is listed again, confirming it.
        tokio::time::sleep(PENDING_SHARED).await;
        let confirmed = vec![set("b", "ACTIVE"), set("c", "ACTIVE")];
        let fresh = view
            .within(&zone, hour, listing(confirmed))
            .await
            .expect("listed");
        assert!(fresh.iter().all(|s| !s.is_pending()));
        assert_eq!(lists.load(SeqCst), 2);
    }
}
