//! The user agent of every cloud call: `verda-operator/<version> (cluster <cluster>)`,
//! the cluster being the one recorded on every cloud resource the operator makes (the
//! configured `clusterName`, else the `kube-system` namespace's UID). A shared cloud's
//! administrators read it in their access logs: with many clusters' operators calling
//! one cloud, it tells them whose calls they see. Named once, as soon as the cluster is
//! known (before any cloud call), for the whole process.

use std::sync::OnceLock;

use http::HeaderValue;

use super::owner::ClusterId;

const PRODUCT: &str = concat!("verda-operator/", env!("CARGO_PKG_VERSION"));

static NAMED: OnceLock<HeaderValue> = OnceLock::new();

/// The user agent of a process serving `cluster`, as access logs show it.
pub fn of_cluster(cluster: &ClusterId) -> String {
    format!("{PRODUCT} (cluster {cluster})")
}

/// Names `cluster` in every cloud call from now on. A second call changes nothing: a
/// process serves one cluster.
pub fn name_cluster(cluster: &ClusterId) {
    // A cluster ID is 1-46 of `A-Za-z0-9._-`: always a valid header value.
    if let Ok(value) = HeaderValue::from_str(&of_cluster(cluster)) {
        let _ = NAMED.set(value);
    }
}

/// The User-Agent header of a cloud call.
pub(crate) fn header() -> HeaderValue {
    NAMED
        .get()
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static(PRODUCT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_name_the_product_then_the_cluster_once_it_is_known() {
        assert_eq!(header(), PRODUCT);
        let cluster = ClusterId::new("prod-tokyo.1_a").expect("a cluster name");
        name_cluster(&cluster);
        name_cluster(&ClusterId::new("another").expect("a cluster name"));
        assert_eq!(
            header(),
            concat!(
                "verda-operator/",
                env!("CARGO_PKG_VERSION"),
                " (cluster prod-tokyo.1_a)"
            )
        );
    }
}
