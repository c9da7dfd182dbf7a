//! Watch streams: newline-delimited `{"type","object"}` JSON over a chunked 200 response.
//!
//! Start semantics as kube-apiserver 1.36 (kube-wire `watch.md`): no RV / RV=0 / `sendInitialEvents=true`
//! replay current objects as ADDED, then (with `allowWatchBookmarks`) the `k8s.io/initial-events-end` BOOKMARK;
//! RV=N replays the history after N; an RV older than the kept history yields one `ERROR` event (410 Expired)
//! and the end of the stream; a future RV waits silently. Label/field-selector watches translate transitions
//! (leaving the selector is DELETED, entering is ADDED). Bookmarks come every `bookmark_interval` and right
//! before `timeoutSeconds` ends the stream cleanly. A watcher that falls behind the broadcast buffer gets 410.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::error::{ApiError, Cause};
use crate::handlers::read::selectors;
use crate::handlers::{Query, Render, Target};
use crate::selector::{FieldSelector, LabelSelector};
use crate::state::AppState;
use crate::store::{Change, ChangeKind};

struct Filter {
    /// kubectl `get -w` asks for Table objects in the events.
    render: Render,
    storage: String,
    ns: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn matches(&self, t: &Target, obj: &Value) -> bool {
        let v = t.rt.to_view(obj);
        self.labels.matches(&v) && self.fields.matches(&v)
    }

    /// The event a change is for this watch, if any (selector transitions included).
    fn translate(&self, t: &Target, c: &Change) -> Option<(&'static str, Value)> {
        if c.storage != self.storage || self.ns.as_ref().is_some_and(|n| *n != c.namespace) {
            return None;
        }
        let now = self.matches(t, &c.object);
        let before = c.prev.as_ref().is_some_and(|p| self.matches(t, p));
        let ty = match (c.kind, before, now) {
            (ChangeKind::Deleted, _, true) => "DELETED",
            (ChangeKind::Deleted, _, false) => return None,
            (ChangeKind::Added, _, true) => "ADDED",
            (ChangeKind::Modified, true, true) => "MODIFIED",
            (ChangeKind::Modified, false, true) => "ADDED",
            (ChangeKind::Modified, true, false) => "DELETED",
            _ => return None,
        };
        Some((ty, self.render(t, &c.object)))
    }

    fn render(&self, t: &Target, stored: &Value) -> Value {
        self.render.one(&t.rt, t.rt.to_view(stored))
    }
}

fn line(ty: &str, object: &Value) -> Bytes {
    let mut s = json!({"type": ty, "object": object}).to_string();
    s.push('\n');
    Bytes::from(s)
}

fn bookmark(t: &Target, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(
        "BOOKMARK",
        &json!({"kind": t.rt.kind, "apiVersion": t.rt.api_version(), "metadata": meta}),
    )
}

fn expired(asked: u64, oldest: u64) -> Bytes {
    let status = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("too old resource version: {asked} ({oldest})"), "reason": "Expired", "code": 410,
    });
    line("ERROR", &status)
}

fn check_options(q: &Query) -> Result<(), ApiError> {
    if q.flag("sendInitialEvents") && q.get("resourceVersionMatch") != Some("NotOlderThan") {
        let cause = Cause::forbidden(
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        );
        return Err(ApiError::invalid_options("ListOptions", vec![cause]));
    }
    Ok(())
}

pub async fn serve(state: Arc<AppState>, t: Target, q: Query, render: Render) -> Response {
    if let Err(e) = check_options(&q) {
        return e.into_response();
    }
    let (labels, fields) = match selectors(&t.rt, &q) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let filter = Filter {
        render,
        storage: t.rt.storage.clone(),
        ns: if t.rt.namespaced { t.ns.clone() } else { None },
        labels,
        fields,
    };
    let bookmarks = q.flag("allowWatchBookmarks");
    let timeout = Duration::from_secs(
        q.get("timeoutSeconds")
            .and_then(|s| s.parse().ok())
            .unwrap_or(1800),
    );
    let rv = q.get("resourceVersion");
    let initial = rv.is_none() || rv == Some("0") || q.flag("sendInitialEvents");
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let (mut first, live, start_rv) = {
        let store = state.lock();
        let live = store.subscribe();
        let mut first = Vec::new();
        let start = if initial {
            for obj in store.list(&filter.storage, filter.ns.as_deref()) {
                if filter.matches(&t, obj) {
                    first.push(line("ADDED", &filter.render(&t, obj)));
                }
            }
            if bookmarks {
                first.push(bookmark(&t, store.rv(), true));
            }
            store.rv()
        } else {
            let asked = rv.and_then(|r| r.parse::<u64>().ok()).unwrap_or(0);
            match store.since(asked) {
                Ok(changes) => {
                    first.extend(
                        changes
                            .iter()
                            .filter_map(|c| filter.translate(&t, c))
                            .map(|(ty, o)| line(ty, &o)),
                    );
                    store.rv().max(asked)
                }
                Err(oldest) => {
                    first.push(expired(asked, oldest));
                    drop(store);
                    return stream_response(rx, tx, first, None);
                }
            }
        };
        (first, live, start)
    };
    let pump = Pump {
        state,
        t,
        filter,
        bookmarks,
        timeout,
        last_rv: start_rv,
    };
    let initial_lines = std::mem::take(&mut first);
    stream_response(rx, tx, initial_lines, Some((pump, live)))
}

fn stream_response(
    rx: mpsc::Receiver<Bytes>,
    tx: mpsc::Sender<Bytes>,
    first: Vec<Bytes>,
    pump: Option<(Pump, broadcast::Receiver<Arc<Change>>)>,
) -> Response {
    tokio::spawn(async move {
        for l in first {
            if tx.send(l).await.is_err() {
                return;
            }
        }
        if let Some((p, live)) = pump {
            p.run(tx, live).await;
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
    });
    let mut r = (StatusCode::OK, Body::from_stream(stream)).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

struct Pump {
    state: Arc<AppState>,
    t: Target,
    filter: Filter,
    bookmarks: bool,
    timeout: Duration,
    /// Changes at or below this RV were already sent (or predate the watch).
    last_rv: u64,
}

impl Pump {
    async fn run(mut self, tx: mpsc::Sender<Bytes>, mut live: broadcast::Receiver<Arc<Change>>) {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut tick = tokio::time::interval(self.state.opts.bookmark_interval);
        tick.tick().await;
        let mut shutdown = self.state.shutdown.clone();
        loop {
            let out = tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {
                    if self.bookmarks {
                        let _ = tx.send(self.current_bookmark()).await;
                    }
                    return;
                }
                _ = shutdown.changed() => return,
                _ = tick.tick(), if self.bookmarks => Some(self.current_bookmark()),
                msg = live.recv() => match msg {
                    Ok(c) if c.rv > self.last_rv => {
                        self.last_rv = c.rv;
                        self.filter.translate(&self.t, &c).map(|(ty, o)| line(ty, &o))
                    }
                    Ok(_) => None,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx.send(expired(self.last_rv, self.last_rv + 1)).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = tx.closed() => return,
            };
            if let Some(b) = out
                && tx.send(b).await.is_err()
            {
                return;
            }
        }
    }

    /// Every change of the cluster passes through `live`, so `last_rv` is the cluster RV this watch has
    /// caught up with; a bookmark never claims more than that (a reconnect from it misses nothing).
    fn current_bookmark(&self) -> Bytes {
        bookmark(&self.t, self.last_rv, false)
    }
}
