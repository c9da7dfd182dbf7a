//! Lookups of servers and load balancers by owner, coalesced: lookups asked for while
//! another is on the wire go out together as one list filtered by `tags-any=<owner tags>`
//! (Nova 2.26, Octavia), so a fleet's VirtualMachines and LoadBalancers looking before
//! their creates (and VirtualMachines polling their builds) cost a few calls, not one each.
//!
//! Calls are also paced: a call for a batch with room left goes out at most once per
//! [`BEAT`] (a lone lookup after a quiet spell goes at once), so a fleet polling its
//! builds costs one call per beat per region, not one per poll — whatever the cloud's
//! latency, which alone used to decide how much a call gathered.
//!
//! Each lookup is still answered by a call that started after it was asked for, with
//! the same filter (the owner tag), so it is as authoritative as a call of its own: what
//! a create is decided on never predates the question.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::cloud::model::compute::Server;
use crate::cloud::model::loadbalancing::LoadBalancer;
use crate::cloud::owner::owner_tag;
use crate::cloud::services::CloudResult;

/// Owners asked for in one call: their tags fit a URL (about 50 characters each).
pub const MOST_OWNERS_PER_CALL: usize = 40;

/// The least time between the starts of two calls whose batches have room left: long
/// enough to gather a busy fleet's polls (they come every few seconds each), short
/// beside a server's build.
pub const BEAT: Duration = Duration::from_millis(500);

/// What an owner's lookup finds: cloud resources carrying their owner's tag.
pub trait Tagged: Clone {
    fn tags(&self) -> &[String];
}

impl Tagged for Server {
    fn tags(&self) -> &[String] {
        &self.tags
    }
}

impl Tagged for LoadBalancer {
    fn tags(&self) -> &[String] {
        &self.tags
    }
}

/// The coalescing lookups of one cloud, per region (each its own Nova and Octavia).
pub struct OwnerLookups<T> {
    regions: Mutex<HashMap<Option<String>, Arc<Queue<T>>>>,
}

impl<T> Default for OwnerLookups<T> {
    fn default() -> Self {
        OwnerLookups {
            regions: Mutex::default(),
        }
    }
}

impl<T> OwnerLookups<T> {
    pub fn of(&self, region: Option<&str>) -> Arc<Queue<T>> {
        let mut regions = self.regions.lock().unwrap_or_else(PoisonError::into_inner);
        regions
            .entry(region.map(str::to_owned))
            .or_default()
            .clone()
    }
}

type Answer<T> = CloudResult<Vec<T>>;

struct Waiter<T> {
    uid: String,
    answer: oneshot::Sender<Answer<T>>,
}

/// Lookups waiting for the next call, and the turn to make it (holding when the last
/// call started).
pub struct Queue<T> {
    waiting: Mutex<Vec<Waiter<T>>>,
    turn: tokio::sync::Mutex<Option<Instant>>,
    /// Told of every lookup asked for, so a call waiting for the beat goes once full.
    asked: tokio::sync::Notify,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            waiting: Mutex::default(),
            turn: tokio::sync::Mutex::default(),
            asked: tokio::sync::Notify::new(),
        }
    }
}

impl<T: Tagged> Queue<T> {
    /// What carries `uid`'s owner tag, from a call made after this one was asked for;
    /// `list(uids)` makes the call for the owners of a batch.
    pub async fn of_owner<F, Fut>(&self, uid: &str, list: F) -> Answer<T>
    where
        F: Fn(Vec<String>) -> Fut,
        Fut: Future<Output = Answer<T>>,
    {
        let mut answer = self.wait_for(uid);
        loop {
            let mut last_call = self.turn.lock().await;
            match answer.try_recv() {
                Ok(found) => return found,
                // The call that held it was dropped half-way: ask again.
                Err(oneshot::error::TryRecvError::Closed) => answer = self.wait_for(uid),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            if let Some(at) = *last_call {
                // Lookups asked meanwhile wait for the turn, and join this call.
                let beat = tokio::time::sleep_until(at + BEAT);
                tokio::pin!(beat);
                while !self.full() {
                    tokio::select! {
                        () = &mut beat => break,
                        () = self.asked.notified() => {}
                    }
                }
            }
            *last_call = Some(Instant::now());
            let batch = self.next_batch();
            if batch.is_empty() {
                continue;
            }
            let uids: Vec<String> = batch.iter().map(|w| w.uid.clone()).collect();
            let found = list(uids).await;
            for waiter in batch {
                let _ = waiter.answer.send(share(&found, &waiter.uid));
            }
        }
    }

    fn wait_for(&self, uid: &str) -> oneshot::Receiver<Answer<T>> {
        let (answer, receiver) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Waiter {
                uid: uid.to_owned(),
                answer,
            });
        self.asked.notify_one();
        receiver
    }

    /// Whether a call would carry as many owners as it can.
    fn full(&self) -> bool {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let open = waiting.iter().filter(|w| !w.answer.is_closed());
        first_owners(open).1 == MOST_OWNERS_PER_CALL
    }

    /// The longest-waiting lookups still wanted, owners counted once, up to
    /// [`MOST_OWNERS_PER_CALL`] owners.
    fn next_batch(&self) -> Vec<Waiter<T>> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.retain(|w| !w.answer.is_closed());
        let (taken, _) = first_owners(waiting.iter());
        waiting.drain(..taken).collect()
    }
}

/// Of lookups in the order asked, how many the next call takes and how many owners
/// they are: owners counted once, up to [`MOST_OWNERS_PER_CALL`].
fn first_owners<'a, T: 'a>(waiting: impl Iterator<Item = &'a Waiter<T>>) -> (usize, usize) {
    let mut owners: Vec<&str> = Vec::new();
    let mut taken = 0;
    for w in waiting {
        if !owners.contains(&w.uid.as_str()) {
            if owners.len() == MOST_OWNERS_PER_CALL {
                break;
            }
            owners.push(&w.uid);
        }
        taken += 1;
    }
    (taken, owners.len())
}

/// The list filter for a batch of owners, and the call in words: `tags` for one owner,
/// `tags-any` for several (the same rule for every kind of resource looked up).
pub struct OwnerFilter {
    pub key: &'static str,
    pub tags: String,
    pub action: String,
}

impl OwnerFilter {
    /// `listing` names what is listed ("servers", "load balancers").
    pub fn of(uids: &[String], listing: &str) -> Self {
        let (key, action) = match uids {
            [uid] => ("tags", format!("list {listing} of owner {uid}")),
            _ => (
                "tags-any",
                format!("list {listing} of {} owners", uids.len()),
            ),
        };
        let tags: Vec<String> = uids.iter().map(|u| owner_tag(u)).collect();
        OwnerFilter {
            key,
            tags: tags.join(","),
            action,
        }
    }
}

/// `uid`'s part of a batch's answer.
fn share<T: Tagged>(found: &Answer<T>, uid: &str) -> Answer<T> {
    let tag = owner_tag(uid);
    match found {
        Ok(resources) => Ok(resources
            .iter()
            .filter(|r| r.tags().contains(&tag))
            .cloned()
            .collect()),
        Err(e) => Err(e.clone()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::cloud::model::compute::ServerStatus;

    fn server(uid: &str) -> Server {
        Server {
            id: crate::cloud::ids::ServerId::new(format!("server-{uid}")),
            name: uid.to_owned(),
            status: ServerStatus::Active,
            task_state: None,
            addresses: Vec::new(),
            metadata: Default::default(),
            tags: vec![owner_tag(uid)],
            description: None,
            flavor: None,
            image: None,
            fault: None,
            availability_zone: None,
            volumes_attached: Vec::new(),
        }
    }

    #[tokio::test]
    async fn lookups_asked_while_one_is_on_the_wire_go_out_together() {
        let queue = Arc::new(Queue::<Server>::default());
        let calls = Arc::new(Mutex::new(Vec::<Vec<String>>::new()));
        let list = |calls: Arc<Mutex<Vec<Vec<String>>>>| {
            move |uids: Vec<String>| {
                let calls = calls.clone();
                async move {
                    calls.lock().expect("calls").push(uids.clone());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok(uids.iter().map(|u| server(u)).collect())
                }
            }
        };
        let lookups: Vec<_> = (0..10)
            .map(|i| {
                let (queue, list) = (queue.clone(), list(calls.clone()));
                tokio::spawn(async move {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    queue.of_owner(&format!("vm-{i}"), list).await
                })
            })
            .collect();
        for (i, lookup) in lookups.into_iter().enumerate() {
            let found = lookup.await.expect("joined").expect("listed");
            assert_eq!(found.len(), 1, "vm-{i} gets exactly its own server");
            assert_eq!(found[0].name, format!("vm-{i}"));
        }
        let calls = calls.lock().expect("calls").clone();
        // The first went alone; the nine asked while it was on the wire, together.
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(calls[1].len(), 9);
    }

    #[tokio::test]
    async fn every_lookup_is_answered_by_a_call_begun_after_it_was_asked() {
        let queue = Arc::new(Queue::<Server>::default());
        let started = Arc::new(AtomicUsize::new(0));
        let list = {
            let started = started.clone();
            move |uids: Vec<String>| {
                let started = started.clone();
                async move {
                    started.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok(uids.iter().map(|u| server(u)).collect())
                }
            }
        };
        let first = tokio::spawn({
            let (queue, list) = (queue.clone(), list.clone());
            async move { queue.of_owner("a", list).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Asked while the first call is on the wire: not answered by it.
        let calls_before = started.load(Ordering::SeqCst);
        queue.of_owner("b", list).await.expect("listed");
        assert!(started.load(Ordering::SeqCst) > calls_before);
        first.await.expect("joined").expect("listed");
    }

    #[tokio::test]
    async fn a_failed_call_fails_every_lookup_it_held_and_no_more() {
        let queue = Queue::<Server>::default();
        let failing = |_: Vec<String>| async {
            Err(crate::cloud::error::CloudError::new(
                "list servers",
                crate::cloud::error::ErrorKind::Unavailable {
                    status: Some(503),
                    retry_after: None,
                    message: "down".into(),
                },
            ))
        };
        assert!(queue.of_owner("a", failing).await.is_err());
        let ok = |uids: Vec<String>| async move { Ok(uids.iter().map(|u| server(u)).collect()) };
        assert_eq!(queue.of_owner("a", ok).await.expect("listed").len(), 1);
    }

    /// A lister that records when each call started and waits `on_the_wire` before
    /// answering every owner with a server.
    fn timed(
        starts: Arc<Mutex<Vec<(Instant, usize)>>>,
        on_the_wire: Duration,
    ) -> impl Fn(Vec<String>) -> std::pin::Pin<Box<dyn Future<Output = Answer<Server>> + Send>> + Clone
    {
        move |uids: Vec<String>| {
            let starts = starts.clone();
            Box::pin(async move {
                starts
                    .lock()
                    .expect("starts")
                    .push((Instant::now(), uids.len()));
                tokio::time::sleep(on_the_wire).await;
                Ok(uids.iter().map(|u| server(u)).collect())
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_with_room_left_waits_for_the_beat_and_a_full_one_does_not() {
        let queue = Arc::new(Queue::<Server>::default());
        let starts = Arc::new(Mutex::new(Vec::new()));
        let list = timed(starts.clone(), Duration::from_millis(50));
        queue.of_owner("a", list.clone()).await.expect("listed");
        // Right after: a lone lookup waits for the beat since the last call began.
        queue.of_owner("b", list.clone()).await.expect("listed");
        // Forty asked while a lone one waits: the batch is full, so it goes at once.
        let lone = tokio::spawn({
            let (queue, list) = (queue.clone(), list.clone());
            async move { queue.of_owner("c", list).await }
        });
        tokio::task::yield_now().await;
        let full: Vec<_> = (0..MOST_OWNERS_PER_CALL)
            .map(|i| {
                let (queue, list) = (queue.clone(), list.clone());
                tokio::spawn(async move { queue.of_owner(&format!("vm-{i}"), list).await })
            })
            .collect();
        lone.await.expect("joined").expect("listed");
        for lookup in full {
            lookup.await.expect("joined").expect("listed");
        }
        let starts = starts.lock().expect("starts").clone();
        let gap = |i: usize| starts[i].0 - starts[i - 1].0;
        assert_eq!(starts[1].1, 1);
        assert!(
            gap(1) >= BEAT,
            "the second call waited for the beat: {:?}",
            gap(1)
        );
        assert_eq!(starts[2].1, MOST_OWNERS_PER_CALL, "{starts:?}");
        assert!(gap(2) < BEAT, "a full batch goes at once: {:?}", gap(2));
    }

    #[test]
    fn one_owner_is_looked_up_by_tags_and_several_by_tags_any() {
        let one = OwnerFilter::of(&["a".to_owned()], "servers");
        assert_eq!((one.key, one.tags), ("tags", owner_tag("a")));
        assert_eq!(one.action, "list servers of owner a");
        let two = OwnerFilter::of(&["a".to_owned(), "b".to_owned()], "load balancers");
        assert_eq!(
            (two.key, two.tags),
            ("tags-any", format!("{},{}", owner_tag("a"), owner_tag("b")))
        );
        assert_eq!(two.action, "list load balancers of 2 owners");
    }

    #[test]
    fn a_batch_holds_the_first_forty_owners_asked_for() {
        let queue = Queue::<Server>::default();
        let mut receivers = Vec::new();
        for i in 0..45 {
            receivers.push(queue.wait_for(&format!("vm-{i}")));
        }
        receivers.push(queue.wait_for("vm-0"));
        let batch = queue.next_batch();
        assert_eq!(batch.len(), 40);
        assert_eq!(queue.waiting.lock().expect("waiting").len(), 6);
    }
}
