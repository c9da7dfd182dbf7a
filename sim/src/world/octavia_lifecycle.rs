//! Octavia's provisioning state machine. A write marks its object `PENDING_*`, and its
//! parents and load balancer `PENDING_UPDATE` (the whole tree is locked, so any other
//! write answers 409); after `lb_delay` the tree settles: pending objects become
//! `ACTIVE`, `PENDING_DELETE` ones disappear. Operating status is derived on read.

use std::cell::OnceCell;
use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::time::Instant;

use chrono::Utc;

use super::World;
use super::octavia::{Member, Pool, Prov};
use crate::model::Status;

/// Locks the load balancer's tree for `lb_delay` (the LB itself goes `PENDING_UPDATE`
/// unless it is already pending create/delete).
pub(crate) fn lock_tree(w: &mut World, lb_id: &str) {
    let at = Instant::now() + w.lb_delay;
    if let Some(lb) = w.octavia.lbs.get_mut(lb_id) {
        if lb.meta.prov == Prov::Active {
            lb.meta.prov = Prov::PendingUpdate;
        }
        lb.settle_at = Some(at);
        w.schedule(at);
    }
}

/// Marks a parent `PENDING_UPDATE` if it is at rest.
pub(crate) fn touch(prov: &mut Prov) {
    if *prov == Prov::Active {
        *prov = Prov::PendingUpdate;
    }
}

impl World {
    /// Applies Octavia's transitions due at `now`.
    pub(crate) fn settle_octavia(&mut self, now: Instant) {
        let w = self;
        let due: Vec<String> = w
            .octavia
            .lbs
            .values()
            .filter(|lb| lb.settle_at.is_some_and(|t| t <= now))
            .map(|lb| lb.meta.id.clone())
            .collect();
        let later: Vec<Instant> = w
            .octavia
            .lbs
            .values()
            .filter_map(|lb| lb.settle_at.filter(|t| *t > now))
            .collect();
        for t in later {
            w.schedule(t);
        }
        for id in due {
            settle_lb(w, &id);
        }
    }
}

fn settle_lb(w: &mut World, lb_id: &str) {
    let now = Utc::now();
    let Some(lb) = w.octavia.lbs.get_mut(lb_id) else {
        return;
    };
    lb.settle_at = None;
    if lb.meta.prov == Prov::PendingDelete {
        delete_tree(w, lb_id);
        return;
    }
    lb.meta.prov = Prov::Active;
    lb.meta.updated = Some(now);
    let o = &mut w.octavia;
    let gone: Vec<String> = o
        .listeners
        .values()
        .filter(|l| l.lb_id == lb_id && l.meta.prov == Prov::PendingDelete)
        .map(|l| l.meta.id.clone())
        .collect();
    for id in gone {
        o.listeners.remove(&id);
        for p in o
            .pools
            .values_mut()
            .filter(|p| p.listener_id.as_deref() == Some(id.as_str()))
        {
            p.listener_id = None;
        }
    }
    for l in o
        .listeners
        .values_mut()
        .filter(|l| l.lb_id == lb_id && l.meta.prov.pending())
    {
        l.meta.prov = Prov::Active;
        l.meta.updated = Some(now);
    }
    let pool_ids: Vec<String> = o
        .pools
        .values()
        .filter(|p| p.lb_id == lb_id)
        .map(|p| p.meta.id.clone())
        .collect();
    for id in pool_ids {
        settle_pool(w, &id);
    }
}

/// Removes a load balancer, its children and its VIP port.
fn delete_tree(w: &mut World, lb_id: &str) {
    let Some(lb) = w.octavia.lbs.remove(lb_id) else {
        return;
    };
    w.octavia.listeners.retain(|_, l| l.lb_id != lb_id);
    let pools: Vec<String> = w
        .octavia
        .pools
        .values()
        .filter(|p| p.lb_id == lb_id)
        .map(|p| p.meta.id.clone())
        .collect();
    for p in pools {
        remove_pool(w, &p);
    }
    // A port the user passed as `vip_port_id` is theirs; only Octavia's own goes.
    if w.ports
        .get(&lb.vip_port_id)
        .is_some_and(|p| p.device_owner == "Octavia")
    {
        w.delete_port(&lb.vip_port_id);
    }
}

fn settle_pool(w: &mut World, pool_id: &str) {
    let now = Utc::now();
    let Some(prov) = w.octavia.pools.get(pool_id).map(|p| p.meta.prov) else {
        return;
    };
    if prov == Prov::PendingDelete {
        remove_pool(w, pool_id);
        return;
    }
    let o = &mut w.octavia;
    let Some(pool) = o.pools.get_mut(pool_id) else {
        return;
    };
    settle_members(pool, now);
    if pool.meta.prov.pending() {
        pool.meta.prov = Prov::Active;
        pool.meta.updated = Some(now);
    }
    let Some(mid) = pool.monitor_id.clone() else {
        return;
    };
    let Some(m) = o.monitors.get_mut(&mid) else {
        return;
    };
    match m.meta.prov {
        Prov::PendingDelete => {
            o.monitors.remove(&mid);
            if let Some(pool) = o.pools.get_mut(pool_id) {
                pool.monitor_id = None;
            }
        }
        Prov::Active => {}
        _ => {
            m.meta.prov = Prov::Active;
            m.meta.updated = Some(now);
        }
    }
}

fn settle_members(pool: &mut Pool, now: chrono::DateTime<Utc>) {
    pool.members.retain(|m| m.meta.prov != Prov::PendingDelete);
    for m in pool.members.iter_mut().filter(|m| m.meta.prov.pending()) {
        m.meta.prov = Prov::Active;
        m.meta.updated = Some(now);
    }
}

fn remove_pool(w: &mut World, pool_id: &str) {
    let o = &mut w.octavia;
    if let Some(pool) = o.pools.remove(pool_id) {
        if let Some(m) = pool.monitor_id {
            o.monitors.remove(&m);
        }
        for l in o
            .listeners
            .values_mut()
            .filter(|l| l.default_pool_id.as_deref() == Some(pool_id))
        {
            l.default_pool_id = None;
        }
    }
}

/// Operating statuses, derived on read from one request's look at the world: a member
/// is ONLINE when an ACTIVE server holds its address. The addresses are gathered once,
/// on the first member asked about (scanning every server for every member made one
/// list of 1,000 load balancers cost 10^8 comparisons at 10,000 servers).
pub(crate) struct Operating<'w> {
    pub w: &'w World,
    serving: OnceCell<HashSet<Ipv4Addr>>,
}

impl<'w> Operating<'w> {
    pub(crate) fn of(w: &'w World) -> Self {
        Operating {
            w,
            serving: OnceCell::new(),
        }
    }

    fn serving(&self) -> &HashSet<Ipv4Addr> {
        self.serving.get_or_init(|| {
            self.w
                .servers
                .values()
                .filter(|s| s.status == Status::Active && !s.deleting)
                .filter(|s| !self.w.unresponsive.contains(&s.id))
                .flat_map(|s| s.nics.iter())
                .filter_map(|n| self.w.ports.get(&n.port_id))
                .flat_map(|p| p.fixed_ips.iter().map(|f| f.ip))
                .collect()
        })
    }

    /// Member `operating_status`: with a health monitor, ONLINE when an ACTIVE server
    /// whose service answers has the member's address, else ERROR; without one NO_MONITOR; OFFLINE while created.
    pub(crate) fn member(&self, pool: &Pool, member: &Member) -> &'static str {
        if member.meta.prov == Prov::PendingCreate || !member.meta.admin_state_up {
            return "OFFLINE";
        }
        let monitored = pool
            .monitor_id
            .as_ref()
            .and_then(|m| self.w.octavia.monitors.get(m))
            .is_some_and(|m| m.meta.prov != Prov::PendingCreate);
        if !monitored {
            return "NO_MONITOR";
        }
        match member.address.parse::<Ipv4Addr>() {
            Ok(address) if self.serving().contains(&address) => "ONLINE",
            _ => "ERROR",
        }
    }

    /// Pool `operating_status` from its members.
    pub(crate) fn pool(&self, pool: &Pool) -> &'static str {
        if pool.meta.prov == Prov::PendingCreate {
            return "OFFLINE";
        }
        let states: Vec<&str> = pool
            .members
            .iter()
            .map(|m| self.member(pool, m))
            .filter(|s| *s == "ONLINE" || *s == "ERROR")
            .collect();
        let errors = states.iter().filter(|s| **s == "ERROR").count();
        match (errors, states.len()) {
            (0, _) => "ONLINE",
            (e, n) if e == n => "ERROR",
            _ => "DEGRADED",
        }
    }

    /// Load balancer `operating_status`: DEGRADED when a pool is not fully ONLINE.
    pub(crate) fn lb(&self, lb_id: &str) -> &'static str {
        let Some(lb) = self.w.octavia.lbs.get(lb_id) else {
            return "OFFLINE";
        };
        if lb.meta.prov == Prov::PendingCreate {
            return "OFFLINE";
        }
        let degraded = self
            .w
            .octavia
            .pools
            .values()
            .filter(|p| p.lb_id == lb_id)
            .any(|p| self.pool(p) != "ONLINE");
        if degraded { "DEGRADED" } else { "ONLINE" }
    }
}
