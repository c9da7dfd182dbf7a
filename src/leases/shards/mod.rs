//! Active-active shards (`--shards`): every replica runs the controllers, and the
//! replicas divide the cluster's namespaces among themselves through Leases in the API
//! server.
//!
//! Each replica renews a member Lease of its own (`<ring>-member-<identity>`) and, while
//! it holds it, keeps its claims: a claim Lease per namespace (`<ring>-ns-<namespace>`)
//! names the one replica that reconciles it. Each round it reads the ring (member
//! Leases, claims, namespaces), computes who should own what ([`ring::assign`]) and acts
//! on each claim as [`claim::decide`] says: it takes a namespace only when its claim is
//! missing, released, or held by a member it has seen dead; it gives one up only by
//! stopping every reconcile of it first and then releasing the claim. A replica whose
//! membership lapses (its renewals do not get through) stops everything at once, before
//! any peer may judge it dead.

pub mod budget_share;
pub mod claim;
pub mod ring;
pub mod roster;
pub mod sweep;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams, Preconditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::watch;

use self::claim::Claim;
use self::roster::{Liveness, Names, Round, holder};
use self::sweep::{Leftovers, Sweep};

use crate::leases::assignment::OwnedNamespaces;
use crate::leases::leader::{Annotations, FatalLeaseError, LeaderElector, run_elected};
use crate::lock::Lock;

/// How long a namespace's running reconciles may finish before they are stopped.
const GRACE: Duration = Duration::from_secs(5);
/// After stopping reconciles mid-way: time for a request already sent to land before
/// another replica may look.
const SETTLE: Duration = Duration::from_secs(1);
/// A round read at a member's expiry is read this much after it, so the member surely
/// counts as dead by then.
const EXPIRY_SLACK: Duration = Duration::from_millis(10);

/// Where the ring's Leases live and who this replica is.
#[derive(Clone, Debug)]
pub struct ShardOptions {
    pub lease_namespace: String,
    /// The ring's name, the prefix of its Leases' names.
    pub ring: String,
    pub identity: String,
    pub lease_duration: Duration,
    /// Only the namespaces with these labels are divided (a label selector); every
    /// namespace when `None`.
    pub namespace_selector: Option<String>,
    /// How long a Lease no one writes any more (a gone member's, the claim of a gone
    /// namespace) stays before it is deleted.
    pub sweep_after: Duration,
}

impl ShardOptions {
    /// A gone member's Lease and claims are deleted after this many lease durations.
    pub const SWEEP_AFTER_LEASES: u32 = 10;
}

/// What follows the ring from outside it (the gauges, the caches, the request budgets):
/// told each round's result and each namespace handed back. The ring knows nothing of
/// what they do with it.
pub trait Follower: Send + Sync {
    /// After each round acted on: what this replica owns now, who is live, and where
    /// to publish what the other members should know of this one.
    fn round(&self, outcome: &Outcome<'_>);
    /// `namespace` is no longer this replica's: what is held of it may go.
    fn handed_back(&self, namespace: &str);
}

/// A round's result, as the followers see it.
pub struct Outcome<'a> {
    /// The namespaces this replica owns now.
    pub owned: &'a [String],
    /// The live members, this replica included.
    pub members: &'a BTreeSet<String>,
    /// The member Leases of the other live members, as this round read them.
    pub others: Vec<&'a Lease>,
    /// What this replica's member Lease carries at its next renewal.
    pub published: &'a Annotations,
}

/// Runs this replica as one shard until `shutdown` resolves: renews its membership,
/// keeps its claims while it is a member, and on shutdown hands every namespace it owns
/// back (stopped, then released) before it leaves the ring.
pub async fn run(
    follower: Arc<dyn Follower>,
    owned: Arc<OwnedNamespaces>,
    lease_client: Client,
    options: ShardOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), FatalLeaseError> {
    let names = Names {
        ring: options.ring.clone(),
    };
    let member = LeaderElector::new(
        lease_client.clone(),
        &options.lease_namespace,
        &names.member(&options.identity),
        &options.identity,
        options.lease_duration,
    );
    let shard = Arc::new(Shard {
        follower,
        owned,
        published: member.annotations(),
        leases: Api::namespaced(lease_client.clone(), &options.lease_namespace),
        namespaces: Api::all(lease_client),
        names,
        options,
    });
    let (stop, stopping) = watch::channel(false);
    let (done, handed_back) = watch::channel(false);
    let every = shard.options.lease_duration / 3;
    let leaving = async {
        shutdown.await;
        stop.send_replace(true);
        // Bounded: a replica that is no member now has nothing to hand back.
        let mut handed_back = handed_back.clone();
        let wait = handed_back.wait_for(|done| *done);
        let _ = tokio::time::timeout(GRACE + SETTLE + every * 3, wait).await;
    };
    run_elected(&member, every, leaving, || {
        let shard = shard.clone();
        tokio::spawn(shard.keep_claims(stopping.clone(), done.clone()))
    })
    .await
}

/// One replica of the ring.
struct Shard {
    follower: Arc<dyn Follower>,
    owned: Arc<OwnedNamespaces>,
    /// What this replica's member Lease says of it (the projects it acts in).
    published: Annotations,
    leases: Api<Lease>,
    namespaces: Api<Namespace>,
    names: Names,
    options: ShardOptions,
}

/// Ends a task when its owner is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Fences the owned namespaces when the task keeping the claims ends for any reason
/// (membership lost, shutdown): nothing is reconciled without a member keeping it.
struct FenceOnDrop(Arc<OwnedNamespaces>);

impl Drop for FenceOnDrop {
    fn drop(&mut self) {
        self.0.fence();
    }
}

impl Shard {
    /// While this replica is a member: each round, reads the ring and acts on every
    /// claim; on `stop`, hands every namespace back and says so on `done`.
    async fn keep_claims(
        self: Arc<Self>,
        mut stop: watch::Receiver<bool>,
        done: watch::Sender<bool>,
    ) {
        let _fence = FenceOnDrop(self.owned.clone());
        // Terms left from before the membership lapsed were revoked by the fence; their
        // namespaces are taken again only by writing their claims again.
        for namespace in self.owned.namespaces() {
            self.owned.close(&namespace, Duration::ZERO).await;
        }
        self.owned.unfence();
        // A member counts as dead once its Lease stayed unchanged for the lease duration
        // since this replica saw it change (client-go's observed time): never before its
        // own fence, two thirds of the duration after its renewal was stamped, stopped it.
        let liveness = Arc::new(Lock::new(Liveness::new(self.options.lease_duration)));
        let _following = self.follow_members(liveness.clone());
        let mut leftovers = Leftovers::new(self.options.sweep_after);
        loop {
            if *stop.borrow() {
                self.hand_back_all().await;
                done.send_replace(true);
                return;
            }
            match self.read(&liveness).await {
                Ok(round) => {
                    // The round acts on the members as this read left them.
                    let seen = liveness.lock().clone();
                    self.act(&round, &seen).await;
                    self.tell(&round, &seen);
                    let me = &self.options.identity;
                    for sweep in leftovers.due(&round, &seen, me, Instant::now()) {
                        self.delete_leftover(sweep).await;
                    }
                }
                Err(error) => tracing::warn!(
                    error = %crate::kube_error::describe(&error),
                    "could not read the shards' Leases and namespaces; trying again next round"
                ),
            }
            let next = self.next_round(&liveness.lock());
            tokio::select! {
                () = tokio::time::sleep_until(next.into()) => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// Follows the member Leases between rounds (a watch), so that a renewal counts
    /// from when it happened rather than from the next round's listing, up to a third
    /// of the lease duration later: a dead member's namespaces are then taken the lease
    /// duration after its last renewal, not up to a third more. The rounds alone still
    /// decide, should the watch fail (a Role without `watch` on Leases, say).
    fn follow_members(&self, liveness: Arc<Lock<Liveness>>) -> AbortOnDrop {
        let names = self.names.clone();
        let events = watcher(self.leases.clone(), watcher::Config::default()).default_backoff();
        AbortOnDrop(tokio::spawn(async move {
            let mut events = std::pin::pin!(events);
            let mut warned = false;
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::Apply(lease) | watcher::Event::InitApply(lease))
                        if names.is_member(&lease.name_any()) =>
                    {
                        liveness.lock().saw(&lease, Instant::now());
                    }
                    Ok(_) => {}
                    Err(error) if !warned => {
                        warned = true;
                        tracing::warn!(%error, "could not watch the shards' member Leases (retrying); meanwhile a dead member is told from the rounds' readings alone, up to a third of the lease duration later. If the error is 403 Forbidden, the operator's Role lacks `watch` on Leases: apply this release's RBAC");
                    }
                    Err(error) => {
                        tracing::debug!(%error, "the watch of the member Leases failed again")
                    }
                }
            }
        }))
    }

    /// When to read the ring next: a third of the lease duration from now, or sooner
    /// when a member not seen renewing would count as dead before then (so its
    /// namespaces are taken when it dies, not up to a round later).
    fn next_round(&self, liveness: &Liveness) -> Instant {
        let now = Instant::now();
        let regular = now + self.options.lease_duration / 3;
        liveness
            .next_expiry(now)
            .map_or(regular, |expiry| regular.min(expiry + EXPIRY_SLACK))
    }

    /// Tells the follower what the round just acted on left.
    fn tell(&self, round: &Round, liveness: &Liveness) {
        let (me, now) = (self.options.identity.as_str(), Instant::now());
        let mut members = liveness.members(now);
        members.insert(me.to_owned());
        let owned = self.owned.namespaces();
        let others = round.members.iter().filter(|lease| {
            holder(lease).is_some_and(|member| member != me && liveness.live(member, now))
        });
        self.follower.round(&Outcome {
            owned: &owned,
            members: &members,
            others: others.collect(),
            published: &self.published,
        });
    }

    async fn read(&self, liveness: &Lock<Liveness>) -> Result<Round, kube::Error> {
        let leases = self.leases.list(&ListParams::default()).await?.items;
        let mut selected = ListParams::default();
        if let Some(selector) = &self.options.namespace_selector {
            selected = selected.labels(selector);
        }
        let namespaces = self.namespaces.list_metadata(&selected).await?;
        let namespaces: BTreeSet<String> = namespaces.items.iter().map(|n| n.name_any()).collect();
        Ok(Round::read(
            &self.names,
            leases,
            namespaces,
            &mut liveness.lock(),
            Instant::now(),
        ))
    }

    /// Takes, keeps or hands back each namespace as the ring and its claim say.
    async fn act(&self, round: &Round, liveness: &Liveness) {
        let now = Instant::now();
        let me = self.options.identity.as_str();
        let mut members = liveness.members(now);
        members.insert(me.to_owned());
        let assigned = ring::assign(&members, &round.namespaces, &round.holders());
        let mine = assigned.get(me).cloned().unwrap_or_default();
        let mut candidates: BTreeSet<String> = round.namespaces.clone();
        candidates.extend(round.claims.keys().cloned());
        candidates.extend(self.owned.namespaces());
        let mut hand_backs = Vec::new();
        for namespace in candidates {
            let lease = round.claims.get(&namespace);
            if !round.namespaces.contains(&namespace) {
                // Gone (its objects with it): a claim of ours is deleted.
                let ours = lease.filter(|l| holder(l) == Some(me)).cloned();
                if ours.is_some() || self.owned.owns(&namespace) {
                    hand_backs.push(self.hand_back(namespace, ours, None));
                }
                continue;
            }
            let live = |member: &str| member == me || liveness.live(member, now);
            let spec = lease.and_then(|l| l.spec.as_ref());
            match claim::decide(spec, me, mine.contains(&namespace), live, Timestamp::now()) {
                Claim::Create(spec) => self.take(&namespace, None, spec).await,
                Claim::Take(spec) => self.take(&namespace, lease, spec).await,
                Claim::Keep if !self.owned.owns(&namespace) => {
                    let mut spec = spec.cloned().unwrap_or_default();
                    spec.acquire_time = Some(MicroTime(Timestamp::now()));
                    self.take(&namespace, lease, spec).await;
                }
                Claim::Keep => {}
                Claim::Release(spec) => {
                    hand_backs.push(self.hand_back(namespace, lease.cloned(), Some(spec)));
                }
                Claim::Wait { .. } | Claim::NotOurs => {
                    // Held by another: nothing of it may run here.
                    if self.owned.owns(&namespace) {
                        hand_backs.push(self.hand_back(namespace, None, None));
                    }
                }
            }
        }
        futures::future::join_all(hand_backs).await;
    }

    /// Writes the claim with this replica as holder (a create when there is none, else
    /// a replace guarded by the read's resourceVersion) and, if that got through, opens
    /// the namespace's term.
    async fn take(&self, namespace: &str, current: Option<&Lease>, spec: LeaseSpec) {
        let name = self.names.claim(namespace);
        let written = match current {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec),
                };
                self.leases.create(&PostParams::default(), &lease).await
            }
            Some(current) => {
                let mut lease = current.clone();
                lease.spec = Some(spec);
                self.leases
                    .replace(&name, &PostParams::default(), &lease)
                    .await
            }
        };
        match written {
            Ok(_) => {
                tracing::info!(%namespace, identity = %self.options.identity, "took the namespace's claim; reconciling it");
                self.owned.open(namespace);
            }
            // Another replica wrote first; the next round reads who.
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => tracing::warn!(
                %namespace,
                error = %crate::kube_error::describe(&error),
                "could not write the namespace's claim; trying again next round"
            ),
        }
    }

    /// Stops reconciling `namespace` (running reconciles finish within [`GRACE`]), drops
    /// what this replica held of it, then writes `release` to its claim — or deletes the
    /// claim when the namespace is gone (`release` none and the claim ours).
    async fn hand_back(&self, namespace: String, claim: Option<Lease>, release: Option<LeaseSpec>) {
        let stopped = self.owned.close(&namespace, GRACE).await;
        self.follower.handed_back(&namespace);
        if stopped {
            tokio::time::sleep(SETTLE).await;
        }
        let Some(claim) = claim else {
            return;
        };
        let name = claim.name_any();
        let written = match release {
            Some(spec) => {
                let mut released = claim.clone();
                released.spec = Some(spec);
                let params = PostParams::default();
                self.leases
                    .replace(&name, &params, &released)
                    .await
                    .map(drop)
            }
            None => self.delete_unchanged(&name, claim.resource_version()).await,
        };
        match written {
            Ok(()) => {
                tracing::info!(%namespace, identity = %self.options.identity, "stopped reconciling the namespace and released its claim")
            }
            Err(error) => tracing::warn!(
                %namespace,
                error = %crate::kube_error::describe(&error),
                "stopped reconciling the namespace but could not release its claim; another replica takes it once this one's membership ends"
            ),
        }
    }

    /// Deletes a Lease no one writes any more, unless it changed since it was read.
    async fn delete_leftover(&self, sweep: Sweep) {
        match self
            .delete_unchanged(&sweep.name, Some(sweep.version))
            .await
        {
            Ok(()) => {
                tracing::info!(lease = %sweep.name, "deleted a Lease of the ring no replica has written for the sweep period (a member gone, or the claim of a namespace gone)")
            }
            // Written again, or deleted by another replica first.
            Err(error) if matches!(crate::kube_error::api_code(&error), Some(404 | 409)) => {}
            Err(error) => tracing::warn!(
                lease = %sweep.name,
                error = %crate::kube_error::describe(&error),
                "could not delete a Lease of the ring no replica writes any more; trying again next round"
            ),
        }
    }

    /// Deletes the Lease `name` unless it changed since it was read at `version`.
    async fn delete_unchanged(
        &self,
        name: &str,
        version: Option<String>,
    ) -> Result<(), kube::Error> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: version,
                uid: None,
            }),
            ..DeleteParams::default()
        };
        self.leases.delete(name, &params).await.map(drop)
    }

    /// On shutdown: every namespace this replica holds, stopped and released.
    async fn hand_back_all(&self) {
        let me = self.options.identity.as_str();
        let leases = match self.leases.list(&ListParams::default()).await {
            Ok(leases) => leases.items,
            Err(error) => {
                tracing::warn!(error = %crate::kube_error::describe(&error), "could not read the claims to release them; other replicas take them once this one's membership ends");
                Vec::new()
            }
        };
        let mut hand_backs = Vec::new();
        for (namespace, lease) in Round::claims(&self.names, leases) {
            // Ours, and to be ours no longer: released as a rebalance releases it.
            let spec = lease.spec.as_ref();
            if let Claim::Release(release) =
                claim::decide(spec, me, false, |_| true, Timestamp::now())
            {
                hand_backs.push(self.hand_back(namespace, Some(lease), Some(release)));
            }
        }
        futures::future::join_all(hand_backs).await;
        for namespace in self.owned.namespaces() {
            self.owned.close(&namespace, GRACE).await;
        }
    }
}
