//! Each reconcile runs as a task of its own.
//!
//! kube-runtime keeps in-flight reconciles in one map and, whenever any of them wakes,
//! polls every one until it finds a finished one. Run inline, a reconcile wakes that map
//! on every answer it awaits, and each wake walks thousands of deep futures: at 10,000
//! VirtualMachines in flight that walk was most of the operator's time. As tasks, only a
//! finished reconcile wakes the map, and a walk polls cheap join handles.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::task::{AbortHandle, JoinHandle};
use tracing::Instrument;

/// A reconcile spawned as a task. Dropping it aborts the task, as dropping an inline
/// reconcile cancels it: a controller that stops (the lease is lost) leaves no reconcile
/// writing behind it.
pub struct ReconcileTask<T> {
    handle: JoinHandle<T>,
    abort: AbortHandle,
}

impl<T: Send + 'static> ReconcileTask<T> {
    /// Spawns `work` in the current tracing span (kube-runtime's "reconciling object").
    pub fn spawn(work: impl Future<Output = T> + Send + 'static) -> Self {
        let handle = tokio::spawn(work.in_current_span());
        let abort = handle.abort_handle();
        ReconcileTask { handle, abort }
    }
}

impl<T> Future for ReconcileTask<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match ready!(Pin::new(&mut self.handle).poll(cx)) {
            Ok(output) => Poll::Ready(output),
            // A panicking reconcile panics its controller, as it did inline.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Cancelled: only by our own abort on drop, or by the runtime shutting down;
            // nobody awaits the answer then.
            Err(_) => Poll::Pending,
        }
    }
}

impl<T> Drop for ReconcileTask<T> {
    fn drop(&mut self) {
        self.abort.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_task_answers_what_its_work_returned() {
        assert_eq!(ReconcileTask::spawn(async { 7 }).await, 7);
    }

    #[tokio::test]
    async fn dropping_a_task_stops_its_work() {
        let finished = Arc::new(AtomicBool::new(false));
        let task = ReconcileTask::spawn({
            let finished = finished.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                finished.store(true, Ordering::SeqCst);
            }
        });
        drop(task);
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(!finished.load(Ordering::SeqCst));
    }
}
