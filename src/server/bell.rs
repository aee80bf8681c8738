//! The timer thread's wake-up: a flag under a mutex and a condition variable.
//!
//! Not a crossbeam channel: a thread waiting on one spins and calls `sched_yield` before it
//! sleeps, and the timer is woken at every call that has a deadline or a progress token. On a
//! CPU shared with a busy process each yield handed that process the CPU for a time slice,
//! and every thread of the server waited with it: a `/bin/true` tool ran about 4 ms per call
//! under contention against rmcp's 1.3 ms (docs/bench.md, contention).

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// Rung by any thread, waited on by one.
#[derive(Default)]
pub(super) struct Bell {
    rung: Mutex<bool>,
    ring: Condvar,
}

impl Bell {
    fn lock(&self) -> MutexGuard<'_, bool> {
        self.rung.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the waiter, or the next wait if none is waiting now.
    pub(super) fn ring(&self) {
        *self.lock() = true;
        self.ring.notify_one();
    }

    /// Waits until the bell rings (true) or `deadline` passes (false), and silences it.
    pub(super) fn wait(&self, deadline: Option<Instant>) -> bool {
        let mut rung = self.lock();
        loop {
            if *rung {
                *rung = false;
                return true;
            }
            rung = match deadline {
                None => self.ring.wait(rung).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    let waited = self.ring.wait_timeout(rung, d - now);
                    waited.unwrap_or_else(PoisonError::into_inner).0
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Bell;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn a_ring_before_the_wait_is_kept_and_a_wait_without_one_times_out() {
        let bell = Bell::default();
        bell.ring();
        assert!(bell.wait(Some(Instant::now())));
        assert!(!bell.wait(Some(Instant::now() + Duration::from_millis(5))));
    }

    #[test]
    fn a_ring_wakes_a_waiter() {
        let bell = Arc::new(Bell::default());
        let waiter = {
            let bell = Arc::clone(&bell);
            std::thread::spawn(move || bell.wait(None))
        };
        bell.ring();
        assert!(waiter.join().expect("waiter"));
    }
}
