//! A project's DNS record sets, per Designate zone: listed at most once per period
//! however many objects name the zone (whoever asks first lists, the others wait and
//! share it). A listing that shows a change still `PENDING` is kept only for a moment,
//! so those waiting for Designate see it done; a zone the operator wrote in is listed
//! again, so what it wrote is confirmed by Designate, not remembered.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cloud::CloudError;
use crate::cloud::ids::DnsZoneId;
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

    /// Lists the zone again on the next ask: the operator just wrote in it.
    pub fn forget(&self, zone: &DnsZoneId) {
        self.zones.lock().remove(zone);
    }
}
