//! The one poison-tolerant mutex of the operator, for its caches (the cloud view, the
//! followed credentials Secrets, the cloud clients' shared maps): a panic elsewhere while holding it leaves every
//! entry whole, so the next user goes on.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// A mutex whose poisoning (a panic elsewhere while holding it) does not matter.
#[derive(Default)]
pub struct Lock<T>(Mutex<T>);

impl<T> Lock<T> {
    pub fn new(value: T) -> Self {
        Self(Mutex::new(value))
    }

    pub fn lock(&self) -> MutexGuard<'_, T> {
        guard(&self.0)
    }
}

/// The guard of a plain `mutex`, whatever a panic elsewhere while holding it left.
pub fn guard<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
