//! Which reconcile sent cloud writes, and when: a reconcile runs inside [`recording`],
//! and the transport notes each write it sends and each answer. The driver logs what one
//! reconcile wrote (target `verda_operator::cloud_writes`, at debug), so that runs of
//! several replicas can show, from their own records, that no two ever wrote for one
//! namespace at the same time.

use std::cell::RefCell;
use std::time::SystemTime;

tokio::task_local! {
    static WRITES: RefCell<Writes>;
}

/// The cloud writes of one reconcile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Writes {
    pub count: u32,
    /// When the first was sent.
    pub first_sent: Option<SystemTime>,
    /// When the last was answered, or, for one still on its way when the reconcile was
    /// stopped, when it stopped (the cloud may act on it a little later).
    pub last_done: Option<SystemTime>,
    in_flight: u32,
}

impl Writes {
    /// Milliseconds since the Unix epoch, for logs a script compares across processes.
    pub fn span_ms(&self) -> Option<(u128, u128)> {
        let ms = |t: SystemTime| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis())
        };
        Some((ms(self.first_sent?), ms(self.last_done?)))
    }
}

/// Runs `work`, noting the cloud writes sent from it (from this task, not from tasks it
/// spawns).
pub async fn recording<F: Future>(work: F) -> (F::Output, Writes) {
    WRITES
        .scope(RefCell::new(Writes::default()), async move {
            let output = work.await;
            let mut writes = WRITES.with(|w| *w.borrow());
            if writes.in_flight > 0 {
                writes.last_done = Some(SystemTime::now());
            }
            (output, writes)
        })
        .await
}

/// A write is being sent.
pub fn sent() {
    let _ = WRITES.try_with(|w| {
        let mut w = w.borrow_mut();
        w.count += 1;
        w.in_flight += 1;
        w.first_sent.get_or_insert_with(SystemTime::now);
    });
}

/// A write was answered (or failed on the wire).
pub fn done() {
    let _ = WRITES.try_with(|w| {
        let mut w = w.borrow_mut();
        w.in_flight = w.in_flight.saturating_sub(1);
        w.last_done = Some(SystemTime::now());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_inside_are_counted_and_those_outside_are_not() {
        sent();
        done();
        let ((), writes) = recording(async {
            sent();
            done();
            sent();
        })
        .await;
        assert_eq!(writes.count, 2);
        let (first, last) = writes.span_ms().expect("a span");
        assert!(first <= last);
        let ((), none) = recording(async {}).await;
        assert_eq!(none, Writes::default());
        assert_eq!(none.span_ms(), None);
    }
}
