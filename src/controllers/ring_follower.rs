//! What the controllers' parts do with each round of the shards' ring: the shard
//! gauges, the request budget shared among the replicas acting in a project, and the
//! cloud view forgetting a namespace handed back. The ring only reports its rounds
//! ([`Follower`]); this is where a replica listens.

use std::sync::Arc;

use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};

use crate::leases::shards::{Follower, Outcome, budget_share};
use crate::runtime::Context;
use crate::runtime::object::Managed;

/// A replica's controllers, following its ring.
pub struct RingFollower(pub Arc<Context>);

impl Follower for RingFollower {
    fn round(&self, outcome: &Outcome<'_>) {
        self.export(outcome);
        self.share_budgets(outcome);
    }

    fn handed_back(&self, namespace: &str) {
        self.0.view.forget_namespace(namespace);
    }
}

impl RingFollower {
    /// The shard gauges, as of the round just acted on.
    fn export(&self, outcome: &Outcome<'_>) {
        let metrics = &self.0.metrics.shards;
        metrics.members.set(outcome.members.len() as i64);
        metrics.namespaces.set(outcome.owned.len() as i64);
        let caches = self.0.caches.current();
        let counts = [
            (
                VirtualMachine::CONTROLLER,
                caches.virtual_machines.store.len(),
            ),
            (VirtualMachineGroup::CONTROLLER, caches.groups.store.len()),
            (LoadBalancer::CONTROLLER, caches.load_balancers.store.len()),
        ];
        for (kind, count) in counts {
            let labels = crate::metrics::KindLabels { kind };
            metrics.objects.get_or_create(&labels).set(count as i64);
        }
    }

    /// Publishes the projects this replica's namespaces act in, and spends of each
    /// project's request budget its share among the live members acting in it.
    fn share_budgets(&self, outcome: &Outcome<'_>) {
        let tenancy = &self.0.tenancy;
        let Some(budgets) = tenancy.budgets() else {
            return;
        };
        let ours = tenancy.projects_of(outcome.owned.iter().map(String::as_str));
        let value = budget_share::published(&ours);
        let annotation = budget_share::ANNOTATION.to_owned();
        outcome.published.lock().insert(annotation, value);
        let others = outcome.others.iter().copied();
        for (project, sharers) in budgets.share(budget_share::sharers(&ours, others)) {
            tracing::info!(
                project,
                sharers,
                "replicas acting in this project changed: this one spends that part of its request budget"
            );
        }
    }
}
