//! A mutex whose poisoning does not matter, for the operator's caches (the cloud view,
//! the followed credentials Secrets): a panic elsewhere while holding it leaves every
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
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
