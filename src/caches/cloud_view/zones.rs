//! The project's Nova availability zones, listed at most once per period however many
//! groups spread over them: whoever asks first lists, the others wait and share it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cloud::model::compute::AvailabilityZone;
use crate::cloud::{CloudError, Compute};

#[derive(Default)]
pub struct ZoneView {
    listed: tokio::sync::Mutex<Option<(Instant, Arc<Vec<AvailabilityZone>>)>>,
}

impl ZoneView {
    /// The zones as listed within `max_age`, else as `compute` lists them now.
    pub async fn within(
        &self,
        max_age: Duration,
        compute: &dyn Compute,
    ) -> Result<Arc<Vec<AvailabilityZone>>, CloudError> {
        let mut listed = self.listed.lock().await;
        if let Some((at, zones)) = listed.as_ref()
            && at.elapsed() < max_age
        {
            return Ok(zones.clone());
        }
        let zones = Arc::new(compute.list_availability_zones().await?);
        *listed = Some((Instant::now(), zones.clone()));
        Ok(zones)
    }
}
