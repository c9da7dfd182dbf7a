//! A project's availability zones (Nova's, or Cinder's), listed at most once per period
//! however many objects ask: whoever asks first lists, the others wait and share it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cloud::CloudError;
use crate::cloud::model::compute::AvailabilityZone;

#[derive(Default)]
pub struct ZoneView {
    listed: tokio::sync::Mutex<Option<(Instant, Arc<Vec<AvailabilityZone>>)>>,
}

impl ZoneView {
    /// The zones as listed within `max_age`, else as `listing` lists them now.
    pub async fn within(
        &self,
        max_age: Duration,
        listing: impl Future<Output = Result<Vec<AvailabilityZone>, CloudError>>,
    ) -> Result<Arc<Vec<AvailabilityZone>>, CloudError> {
        let mut listed = self.listed.lock().await;
        if let Some((at, zones)) = listed.as_ref()
            && at.elapsed() < max_age
        {
            return Ok(zones.clone());
        }
        let zones = Arc::new(listing.await?);
        *listed = Some((Instant::now(), zones.clone()));
        Ok(zones)
    }
}
