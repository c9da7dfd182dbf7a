//! The garbage collector and namespace controller, as a background task woken after writes.
//!
//! Emulates kube-controller-manager closely enough for cascading deletion: dependents whose owners (by uid) are
//! all gone are deleted (background); an owner carrying `foregroundDeletion` has its dependents deleted and loses
//! the finalizer once no dependent with `blockOwnerDeletion` remains; an owner carrying `orphan` has its
//! ownerReferences removed from dependents, then loses the finalizer. A terminating Namespace has its contents
//! deleted and disappears once empty. Unlike the real GC there is no type-discovery delay.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::ops::{self, WriteCtx};
use crate::state::{AppState, NAMESPACES};
use crate::store::Store;
use crate::validation::FieldValidation;

const MANAGER: &str = "kube-controller-manager";

pub async fn run(state: Arc<AppState>) {
    let mut shutdown = state.shutdown.clone();
    loop {
        tokio::select! {
            _ = state.gc.notified() => {}
            _ = shutdown.changed() => return,
        }
        // Several passes: each deletion can release further objects.
        let started = std::time::Instant::now();
        for _ in 0..32 {
            if !sweep(&state) {
                break;
            }
        }
        // A pass reads every object under the store's lock; under a stream of writes,
        // sweeping after each one would serialise the server behind it. The real
        // collector is asynchronous too: writes meanwhile are swept together. At tens of
        // thousands of objects a pass takes milliseconds: the pause grows with it, so the
        // collector holds the lock at most a tenth of the time.
        let pause = SWEEP_INTERVAL.max(started.elapsed() * 9);
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// The shortest time between two sweeps (longer when a sweep takes long).
const SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

fn meta_str<'a>(o: &'a Value, k: &str) -> &'a str {
    o["metadata"][k].as_str().unwrap_or_default()
}

fn has_finalizer(o: &Value, f: &str) -> bool {
    o["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == f))
}

fn ctx() -> WriteCtx {
    WriteCtx {
        manager: MANAGER.into(),
        fv: FieldValidation::Ignore,
        sub: None,
        preset_managed: false,
    }
}

/// Rewrites one object through the normal update path (so watches and finalizer deletion behave as usual).
fn rewrite(
    state: &AppState,
    store: &mut Store,
    storage: &str,
    obj: &Value,
    edit: impl FnOnce(&mut Value),
) {
    let Some(rt) = state.registry.by_storage(storage) else {
        return;
    };
    let ns = if rt.namespaced {
        meta_str(obj, "namespace")
    } else {
        ""
    };
    let Some(stored) = store.get(storage, ns, meta_str(obj, "name")) else {
        return;
    };
    let old = rt.to_view(stored);
    let mut new = old.clone();
    edit(&mut new);
    let _ = ops::update(store, rt, &old, new, &ctx());
}

fn delete(state: &AppState, store: &mut Store, storage: &str, obj: &Value, policy: &str) {
    let Some(rt) = state.registry.by_storage(storage) else {
        return;
    };
    let _ = ops::delete(
        store,
        rt,
        meta_str(obj, "namespace"),
        meta_str(obj, "name"),
        &json!({"propagationPolicy": policy}),
    );
}

/// What one pass found to do, owned, so the store can be written.
enum Work {
    /// An empty terminating namespace disappears.
    RemoveNamespace(String),
    /// These are deleted with this propagation policy.
    Delete(Vec<Item>, &'static str),
    /// `uid` leaves the dependents' ownerReferences, then the owner loses `orphan`.
    Orphan {
        owner: Item,
        uid: String,
        dependents: Vec<Item>,
    },
    /// The owner's dependents are deleted; it loses `foregroundDeletion` once none
    /// blocks it.
    Foreground {
        owner: Item,
        delete: Vec<Item>,
        release: bool,
    },
}

/// An object's bucket and what the collector reads of it: `{"metadata": ...}` with the
/// fields it decides on, never annotations or managed fields.
type Item = (String, Value);

fn item(storage: &str, o: &Value) -> Item {
    const READ: [&str; 6] = [
        "name",
        "namespace",
        "uid",
        "ownerReferences",
        "deletionTimestamp",
        "finalizers",
    ];
    let meta: serde_json::Map<String, Value> = READ
        .iter()
        .filter_map(|k| o["metadata"].get(*k).map(|x| ((*k).to_owned(), x.clone())))
        .collect();
    (storage.to_owned(), json!({ "metadata": meta }))
}

fn owned_by(o: &Value) -> impl Iterator<Item = &str> {
    o["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str())
}

fn deleting(o: &Value) -> bool {
    !o["metadata"]["deletionTimestamp"].is_null()
}

/// The first thing to do, found by reading every object in place: the scan runs after
/// every burst of writes, and copying thousands of objects each time was most of the
/// server's work.
fn next_work(all: &[(&str, &Value)]) -> Option<Work> {
    let uids: HashSet<&str> = all.iter().map(|(_, o)| meta_str(o, "uid")).collect();
    let dependents_of = |uid: &str| -> Vec<(&str, &Value)> {
        all.iter()
            .filter(|(_, o)| owned_by(o).any(|u| u == uid))
            .copied()
            .collect()
    };
    for (storage, o) in all {
        let uid = meta_str(o, "uid");
        if *storage == NAMESPACES && deleting(o) {
            let ns = meta_str(o, "name");
            let content: Vec<_> = all
                .iter()
                .filter(|(s, x)| *s != NAMESPACES && meta_str(x, "namespace") == ns)
                .collect();
            if content.is_empty() {
                return Some(Work::RemoveNamespace(ns.to_owned()));
            }
            let live: Vec<Item> = content
                .into_iter()
                .filter(|(_, x)| !deleting(x))
                .map(|(s, x)| item(s, x))
                .collect();
            if !live.is_empty() {
                return Some(Work::Delete(live, "Background"));
            }
        } else if deleting(o) && has_finalizer(o, "orphan") {
            return Some(Work::Orphan {
                owner: item(storage, o),
                uid: uid.to_owned(),
                dependents: dependents_of(uid)
                    .into_iter()
                    .map(|(s, d)| item(s, d))
                    .collect(),
            });
        } else if deleting(o) && has_finalizer(o, "foregroundDeletion") {
            let deps = dependents_of(uid);
            let delete: Vec<Item> = deps
                .iter()
                .filter(|(_, d)| !deleting(d))
                .map(|(s, d)| item(s, d))
                .collect();
            let blocking = deps.iter().any(|(_, d)| {
                d["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| r["uid"] == json!(uid) && r["blockOwnerDeletion"] == json!(true))
            });
            if !blocking || !delete.is_empty() {
                return Some(Work::Foreground {
                    owner: item(storage, o),
                    delete,
                    release: !blocking,
                });
            }
        } else if !deleting(o) {
            let mut owners = owned_by(o).peekable();
            if owners.peek().is_some() && owners.all(|u| !uids.contains(u)) {
                return Some(Work::Delete(vec![item(storage, o)], "Background"));
            }
        }
    }
    None
}

/// One pass; returns whether anything changed.
fn sweep(state: &AppState) -> bool {
    let mut store = state.lock();
    let work = {
        let all: Vec<(&str, &Value)> = store.all().collect();
        next_work(&all)
    };
    let Some(work) = work else {
        return false;
    };
    match work {
        Work::RemoveNamespace(ns) => {
            store.remove(NAMESPACES, "", &ns);
        }
        Work::Delete(items, policy) => {
            for (s, x) in &items {
                delete(state, &mut store, s, x, policy);
            }
        }
        Work::Orphan {
            owner: (storage, o),
            uid,
            dependents,
        } => {
            for (s, d) in &dependents {
                rewrite(state, &mut store, s, d, |v| {
                    if let Some(refs) = v["metadata"]["ownerReferences"].as_array_mut() {
                        refs.retain(|r| r["uid"] != json!(uid));
                    }
                    if v["metadata"]["ownerReferences"]
                        .as_array()
                        .is_some_and(Vec::is_empty)
                        && let Some(m) = v["metadata"].as_object_mut()
                    {
                        m.remove("ownerReferences");
                    }
                });
            }
            rewrite(state, &mut store, &storage, &o, |v| {
                drop_finalizer(v, "orphan")
            });
        }
        Work::Foreground {
            owner: (storage, o),
            delete: deps,
            release,
        } => {
            for (s, d) in &deps {
                delete(state, &mut store, s, d, "Foreground");
            }
            if release {
                rewrite(state, &mut store, &storage, &o, |v| {
                    drop_finalizer(v, "foregroundDeletion")
                });
            }
        }
    }
    true
}

fn drop_finalizer(v: &mut Value, f: &str) {
    if let Some(a) = v["metadata"]["finalizers"].as_array_mut() {
        a.retain(|x| x != f);
    }
}
