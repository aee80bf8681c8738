//! The timer thread's wake-up: a flag under a mutex and a condition variable.
//!
//! Not a crossbeam channel: a thread waiting on one spins and calls `sched_yield` before it
//! sleeps, and the timer is woken at every call that has a deadline or a progress token. On a
//! CPU shared with a busy process each yield handed that process the CPU for a time slice,
//! and every thread of the server waited with it: a `/bin/true` tool ran about 4 ms per call
//! under contention against rmcp's 1.3 ms (docs/bench.md, contention).

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// Rung by any thread, waited on by one.
#[derive(Default)]
pub(super) struct Bell {
    state: Mutex<State>,
    ring: Condvar,
}

#[derive(Default)]
struct State {
    rung: bool,
    /// While the waiter sleeps: until when.
    asleep: Option<Instant>,
}

impl Bell {
    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Wakes the waiter, or the next wait if none is waiting now.
    pub(super) fn ring(&self) {
        self.lock().rung = true;
        self.ring.notify_one();
    }

    /// Rings unless the waiter sleeps until `at` or earlier: it then wakes in time anyway.
    /// Under contention every thread woken can cost a time slice (docs/bench.md, command
    /// tools), and every call with a deadline of minutes would otherwise wake the timer.
    pub(super) fn ring_by(&self, at: Instant) {
        let mut st = self.lock();
        if st.asleep.is_some_and(|t| t <= at) {
            return;
        }
        st.rung = true;
        drop(st);
        self.ring.notify_one();
    }

    /// Waits until the bell rings (true) or `deadline` passes (false), and silences it.
    pub(super) fn wait(&self, deadline: Instant) -> bool {
        let mut st = self.lock();
        let rung = loop {
            if st.rung {
                st.rung = false;
                break true;
            }
            let now = Instant::now();
            if now >= deadline {
                break false;
            }
            st.asleep = Some(deadline);
            st = crate::sync::wait_timeout(&self.ring, st, deadline - now).0;
        };
        st.asleep = None;
        rung
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
        assert!(bell.wait(Instant::now()));
        assert!(!bell.wait(Instant::now() + Duration::from_millis(5)));
    }

    #[test]
    fn a_ring_wakes_a_waiter() {
        let bell = Arc::new(Bell::default());
        let waiter = {
            let bell = Arc::clone(&bell);
            std::thread::spawn(move || bell.wait(Instant::now() + Duration::from_secs(3600)))
        };
        bell.ring();
        assert!(waiter.join().expect("waiter"));
    }

    #[test]
    fn a_ring_by_a_later_time_than_the_waiter_wakes_at_is_skipped() {
        let bell = Arc::new(Bell::default());
        // Not asleep: the ring is kept, whatever the time.
        bell.ring_by(Instant::now() + Duration::from_secs(3600));
        assert!(bell.wait(Instant::now()));
        let asleep = |bell: &Bell| bell.lock().asleep.is_some();
        let wake_at = Instant::now() + Duration::from_millis(300);
        let waiter = {
            let bell = Arc::clone(&bell);
            std::thread::spawn(move || bell.wait(wake_at))
        };
        while !asleep(&bell) {
            std::thread::yield_now();
        }
        bell.ring_by(wake_at + Duration::from_secs(1));
        assert!(
            !waiter.join().expect("waiter"),
            "woken although it wakes in time"
        );
        let waiter = {
            let bell = Arc::clone(&bell);
            std::thread::spawn(move || bell.wait(Instant::now() + Duration::from_secs(3600)))
        };
        while !asleep(&bell) {
            std::thread::yield_now();
        }
        bell.ring_by(Instant::now());
        assert!(waiter.join().expect("waiter"), "an earlier time wakes it");
    }
}
