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
        for _ in 0..32 {
            if !sweep(&state) {
                break;
            }
        }
        // A pass reads every object under the store's lock; under a stream of writes,
        // sweeping after each one would serialise the server behind it. The real
        // collector is asynchronous too: writes meanwhile are swept together.
        tokio::select! {
            _ = tokio::time::sleep(SWEEP_INTERVAL) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// The shortest time between two sweeps.
const SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

fn meta_str<'a>(o: &'a Value, k: &str) -> &'a str {
    o["metadata"][k].as_str().unwrap_or_default()
}

fn has_finalizer(o: &Value, f: &str) -> bool {
    o["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == f))
}

fn owner_uids(o: &Value) -> Vec<String> {
    o["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str().map(String::from))
        .collect()
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

/// One pass; returns whether anything changed.
fn sweep(state: &AppState) -> bool {
    let mut store = state.lock();
    let all = store.all_metadata();
    let uids: HashSet<&str> = all.iter().map(|(_, o)| meta_str(o, "uid")).collect();
    let deleting = |o: &Value| !o["metadata"]["deletionTimestamp"].is_null();
    let dependents_of = |uid: String| -> Vec<&(String, Value)> {
        all.iter()
            .filter(|(_, o)| owner_uids(o).contains(&uid))
            .collect()
    };
    for (storage, o) in &all {
        let uid = meta_str(o, "uid");
        if storage == NAMESPACES && deleting(o) {
            let ns = meta_str(o, "name");
            let content: Vec<_> = all
                .iter()
                .filter(|(s, x)| s != NAMESPACES && meta_str(x, "namespace") == ns)
                .collect();
            if content.is_empty() {
                store.remove(NAMESPACES, "", ns);
                return true;
            }
            let mut changed = false;
            for (s, x) in content.into_iter().filter(|(_, x)| !deleting(x)) {
                delete(state, &mut store, s, x, "Background");
                changed = true;
            }
            if changed {
                return true;
            }
        } else if deleting(o) && has_finalizer(o, "orphan") {
            for (s, d) in dependents_of(uid.to_string()) {
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
            rewrite(state, &mut store, storage, o, |v| {
                drop_finalizer(v, "orphan")
            });
            return true;
        } else if deleting(o) && has_finalizer(o, "foregroundDeletion") {
            let deps = dependents_of(uid.to_string());
            let mut changed = false;
            for (s, d) in deps.iter().filter(|(_, d)| !deleting(d)) {
                delete(state, &mut store, s, d, "Foreground");
                changed = true;
            }
            let blocking = deps.iter().any(|(_, d)| {
                d["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| r["uid"] == json!(uid) && r["blockOwnerDeletion"] == json!(true))
            });
            if !blocking {
                rewrite(state, &mut store, storage, o, |v| {
                    drop_finalizer(v, "foregroundDeletion")
                });
                return true;
            }
            if changed {
                return true;
            }
        } else if !deleting(o) {
            let owners = owner_uids(o);
            if !owners.is_empty() && owners.iter().all(|u| !uids.contains(u.as_str())) {
                delete(state, &mut store, storage, o, "Background");
                return true;
            }
        }
    }
    false
}

fn drop_finalizer(v: &mut Value, f: &str) {
    if let Some(a) = v["metadata"]["finalizers"].as_array_mut() {
        a.retain(|x| x != f);
    }
}
