//! The object store: every object of every resource type, one cluster-wide monotonically increasing
//! resourceVersion, and a bounded history of changes that watches replay from.
//!
//! Writes go through [`Store::put`] / [`Store::remove`], which stamp the new resourceVersion, append a
//! [`Change`] to the history and broadcast it to live watches. The store knows nothing about HTTP, selectors or
//! semantics such as finalizers (see `ops`). The history is bounded: once events are dropped, a watch from an
//! older resourceVersion is answered with `410 Expired`, so clients relist exactly as against a real cluster.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One committed write, as watches see it.
#[derive(Debug, Clone)]
pub struct Change {
    pub rv: u64,
    pub storage: String,
    pub namespace: String,
    pub name: String,
    pub kind: ChangeKind,
    /// The object after the write (for a deletion: the last stored state, stamped with the deletion's RV).
    pub object: Value,
    /// The object before the write (to translate label-selector transitions).
    pub prev: Option<Value>,
}

type Bucket = BTreeMap<(String, String), Value>;

pub struct Store {
    rv: u64,
    objects: BTreeMap<String, Bucket>,
    history: VecDeque<Arc<Change>>,
    history_limit: usize,
    /// Highest resourceVersion whose change is no longer in the history (0: nothing dropped yet).
    compacted_rv: u64,
    tx: broadcast::Sender<Arc<Change>>,
}

pub fn set_rv(obj: &mut Value, rv: u64) {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("resourceVersion".into(), json!(rv.to_string()));
    }
}

impl Store {
    pub fn new(history_limit: usize, tx: broadcast::Sender<Arc<Change>>) -> Self {
        Self {
            rv: 1,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            compacted_rv: 0,
            tx,
        }
    }

    pub fn rv(&self) -> u64 {
        self.rv
    }

    pub fn compacted_rv(&self) -> u64 {
        self.compacted_rv
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.tx.subscribe()
    }

    pub fn get(&self, storage: &str, ns: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(storage)?
            .get(&(ns.to_string(), name.to_string()))
    }

    /// Objects of a bucket in key order (namespace, name), optionally restricted to one namespace.
    pub fn list<'a>(
        &'a self,
        storage: &str,
        ns: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects
            .get(storage)
            .into_iter()
            .flat_map(|b| b.iter())
            .filter(move |((n, _), _)| ns.is_none_or(|want| want == n))
            .map(|(_, v)| v)
    }

    /// Every stored object with its bucket, borrowed: the garbage collector scans them
    /// all after every burst of writes, under the store's lock.
    pub fn all(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.objects
            .iter()
            .flat_map(|(s, b)| b.values().map(move |v| (s.as_str(), v)))
    }

    /// Stores `obj` under a new resourceVersion and records the change; returns the stored object.
    pub fn put(&mut self, storage: &str, ns: &str, name: &str, mut obj: Value) -> Value {
        self.rv += 1;
        set_rv(&mut obj, self.rv);
        let key = (ns.to_string(), name.to_string());
        let prev = self
            .objects
            .entry(storage.to_string())
            .or_default()
            .insert(key, obj.clone());
        let kind = if prev.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Added
        };
        self.record(storage, ns, name, kind, obj.clone(), prev);
        obj
    }

    /// Removes an object; the DELETED change carries its last state with the deletion's resourceVersion.
    pub fn remove(&mut self, storage: &str, ns: &str, name: &str) -> Option<Value> {
        let mut obj = self
            .objects
            .get_mut(storage)?
            .remove(&(ns.to_string(), name.to_string()))?;
        self.rv += 1;
        let prev = obj.clone();
        set_rv(&mut obj, self.rv);
        self.record(
            storage,
            ns,
            name,
            ChangeKind::Deleted,
            obj.clone(),
            Some(prev),
        );
        Some(obj)
    }

    fn record(
        &mut self,
        storage: &str,
        ns: &str,
        name: &str,
        kind: ChangeKind,
        object: Value,
        prev: Option<Value>,
    ) {
        let change = Arc::new(Change {
            rv: self.rv,
            storage: storage.to_string(),
            namespace: ns.to_string(),
            name: name.to_string(),
            kind,
            object,
            prev,
        });
        self.history.push_back(change.clone());
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.compacted_rv = old.rv;
            }
        }
        // No receiver is fine: nobody is watching.
        let _ = self.tx.send(change);
    }

    /// Changes after `rv`, or `Err(oldest available rv)` when some of them were already dropped.
    pub fn since(&self, rv: u64) -> Result<Vec<Arc<Change>>, u64> {
        if rv < self.compacted_rv {
            return Err(self.compacted_rv + 1);
        }
        Ok(self.history.iter().filter(|c| c.rv > rv).cloned().collect())
    }

    /// Drops the whole history, as an etcd compaction does: older resourceVersions become `410 Expired`.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted_rv = self.rv;
    }
}
