//! The project's security groups with their rules, as one listing shared by every
//! SecurityGroup of the project (per region): a round takes a group from a listing
//! younger than the caller's freshness and taken after the group's last write by this
//! operator, else lists the project's groups again (one call, the concurrent rounds
//! waiting for it and taking it too). What the listing lacks is gone. Each refresh of
//! the view lists them again and wakes the SecurityGroups whose group changed (its
//! revision moves with every rule created or deleted) or went: drift is healed within
//! a period, and a converged SecurityGroup reads nothing of its own.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::runtime::reflector::ObjectRef;
use verda_api::v1alpha1::SecurityGroup;

use crate::cloud::CloudResult;
use crate::cloud::model::firewall::Firewall;
use crate::lock::Lock;

/// A group's region (`None`: the cloud's own) and the object it stands for.
type Owner = (Option<String>, ObjectRef<SecurityGroup>);

/// One listing of a region's groups, by ID.
struct Listed {
    at: Instant,
    groups: Arc<HashMap<String, Firewall>>,
}

#[derive(Default)]
pub struct FirewallView {
    /// Per region (`None`: the cloud's own), the last listing; the async lock makes
    /// concurrent rounds wait for one listing rather than each make their own.
    listed: tokio::sync::Mutex<HashMap<Option<String>, Listed>>,
    /// When this operator last wrote each group (its rules, its description).
    wrote: Lock<HashMap<String, Instant>>,
    /// The groups a refresh looks after, by ID.
    owners: Lock<HashMap<String, Owner>>,
}

impl FirewallView {
    /// Group `id` of `region` (none: gone), from a listing younger than `fresh` and
    /// taken after its last write, else from a new listing made with `list`.
    pub async fn group<F>(
        &self,
        region: Option<&str>,
        id: &str,
        fresh: Duration,
        list: F,
    ) -> CloudResult<Option<Firewall>>
    where
        F: Future<Output = CloudResult<Vec<Firewall>>>,
    {
        let written = self.wrote.lock().get(id).copied();
        let mut listed = self.listed.lock().await;
        let key = region.map(str::to_owned);
        let usable = listed
            .get(&key)
            .filter(|l| l.at.elapsed() < fresh && written.is_none_or(|w| l.at > w));
        if let Some(l) = usable {
            return Ok(l.groups.get(id).cloned());
        }
        let at = Instant::now();
        let groups: HashMap<String, Firewall> =
            list.await?.into_iter().map(|f| (f.id.clone(), f)).collect();
        let found = groups.get(id).cloned();
        listed.insert(
            key,
            Listed {
                at,
                groups: Arc::new(groups),
            },
        );
        Ok(found)
    }

    /// Group `id` of `region` stands for `owner`: a refresh that finds it changed or
    /// gone wakes it.
    pub fn watch(&self, region: Option<&str>, id: &str, owner: ObjectRef<SecurityGroup>) {
        let entry = (region.map(str::to_owned), owner);
        self.owners.lock().insert(id.to_owned(), entry);
    }

    /// The regions a refresh lists.
    pub fn regions(&self) -> Vec<Option<String>> {
        let mut regions: Vec<_> = self.owners.lock().values().map(|o| o.0.clone()).collect();
        regions.sort();
        regions.dedup();
        regions
    }

    /// A new listing of `region` (made with `list`): the owners of the groups it shows
    /// changed or no longer shows.
    pub async fn refresh<F>(
        &self,
        region: Option<&str>,
        list: F,
    ) -> CloudResult<Vec<ObjectRef<SecurityGroup>>>
    where
        F: Future<Output = CloudResult<Vec<Firewall>>>,
    {
        let mut listed = self.listed.lock().await;
        let at = Instant::now();
        let groups: HashMap<String, Firewall> =
            list.await?.into_iter().map(|f| (f.id.clone(), f)).collect();
        let key = region.map(str::to_owned);
        let before = listed.get(&key).map(|l| l.groups.clone());
        let changed = |id: &String| {
            let was = before.as_ref().and_then(|b| b.get(id));
            let now = groups.get(id);
            now.is_none() || was.is_some_and(|w| Some(w) != now)
        };
        let woken = self
            .owners
            .lock()
            .iter()
            .filter(|(id, (r, _))| *r == key && changed(id))
            .map(|(_, (_, owner))| owner.clone())
            .collect();
        listed.insert(
            key,
            Listed {
                at,
                groups: Arc::new(groups),
            },
        );
        Ok(woken)
    }

    /// This operator wrote group `id`: no listing taken before now vouches for it.
    pub fn wrote(&self, id: &str) {
        self.wrote.lock().insert(id.to_owned(), Instant::now());
    }

    /// The group is gone: nothing to remember of it.
    pub fn forget(&self, id: &str) {
        self.wrote.lock().remove(id);
        self.owners.lock().remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn group(id: &str) -> Firewall {
        Firewall {
            id: id.into(),
            ..Firewall::default()
        }
    }

    #[tokio::test]
    async fn one_listing_serves_every_group_until_one_of_them_is_written() {
        let view = FirewallView::default();
        let calls = AtomicUsize::new(0);
        let list = || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(vec![group("a"), group("b")])
        };
        let fresh = Duration::from_secs(60);
        assert!(
            view.group(None, "a", fresh, list())
                .await
                .expect("listed")
                .is_some()
        );
        assert!(
            view.group(None, "b", fresh, list())
                .await
                .expect("listed")
                .is_some()
        );
        assert!(
            view.group(None, "c", fresh, list())
                .await
                .expect("listed")
                .is_none()
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // A write makes the listing stale for that group only.
        view.wrote("a");
        assert!(
            view.group(None, "b", fresh, list())
                .await
                .expect("listed")
                .is_some()
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(
            view.group(None, "a", fresh, list())
                .await
                .expect("listed")
                .is_some()
        );
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        // Another region lists on its own; an old listing is listed again.
        assert!(
            view.group(Some("tokyo1"), "a", fresh, list())
                .await
                .expect("listed")
                .is_some()
        );
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        let none = Duration::ZERO;
        assert!(
            view.group(None, "a", none, list())
                .await
                .expect("listed")
                .is_some()
        );
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn a_refresh_wakes_the_owners_of_groups_changed_or_gone() {
        let view = FirewallView::default();
        let owner = |name: &str| ObjectRef::<SecurityGroup>::new(name).within("team");
        view.watch(None, "a", owner("a"));
        view.watch(None, "b", owner("b"));
        view.watch(None, "c", owner("c"));
        let before = || async { Ok(vec![group("a"), group("b"), group("c")]) };
        assert!(
            view.refresh(None, before())
                .await
                .expect("listed")
                .is_empty()
        );
        let mut b = group("b");
        b.revision_number = 2;
        let after = || async { Ok(vec![group("a"), b.clone()]) };
        let mut woken = view.refresh(None, after()).await.expect("listed");
        woken.sort_by(|x, y| x.name.cmp(&y.name));
        assert_eq!(woken, vec![owner("b"), owner("c")]);
        assert_eq!(view.regions(), vec![None]);
    }
}
