//! Worker threads for the work of requests: one thread per call in flight, idle threads
//! reused, threads idle for a while exit, and at most `max` threads (further jobs queue).
//!
//! Reuse matters: a fresh thread per call cost about 30 µs and a 5x loss of pipelined
//! throughput. A job never starts on a thread that will exit before the job ends, which is
//! what makes `PR_SET_PDEATHSIG` (tied to the spawning thread) safe for children the job starts.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

/// A unit of work.
pub type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Counts {
    /// Threads alive.
    total: usize,
    /// Threads waiting for a job that no queued job is reserved for.
    idle: usize,
    /// Jobs submitted at the limit, which the next thread to free up takes.
    queued: usize,
}

struct Inner {
    counts: Mutex<Counts>,
    rx: Receiver<Job>,
    max: usize,
    keep_alive: Duration,
    stack_size: usize,
}

/// The pool. Cloning shares it.
#[derive(Clone)]
pub struct Pool {
    tx: Sender<Job>,
    inner: Arc<Inner>,
}

impl Pool {
    /// A pool of at most `max` threads; idle threads exit after `keep_alive`.
    pub fn new(max: usize, keep_alive: Duration, stack_size: usize) -> Pool {
        let (tx, rx) = crossbeam_channel::unbounded();
        Pool {
            tx,
            inner: Arc::new(Inner {
                counts: Mutex::new(Counts::default()),
                rx,
                max: max.max(1),
                keep_alive,
                stack_size,
            }),
        }
    }

    /// Runs `job` on an idle thread, a new thread, or (at the limit) when a thread frees up.
    pub fn submit(&self, job: Job) {
        let spawn = {
            let mut c = self
                .inner
                .counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if c.idle > 0 {
                c.idle -= 1; // reserved for this job
                false
            } else if c.total < self.inner.max {
                c.total += 1;
                true
            } else {
                c.queued += 1;
                false
            }
        };
        if spawn {
            let inner = self.inner.clone();
            let started = thread::Builder::new()
                .name("stdmcp-worker".into())
                .stack_size(self.inner.stack_size)
                .spawn(move || worker(inner, Some(job)));
            if let Err(e) = started {
                log::error!("cannot start a worker thread: {e}");
                let mut c = self
                    .inner
                    .counts
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                c.total -= 1;
            }
        } else if self.tx.send(job).is_err() {
            log::error!("worker queue closed");
        }
    }

    /// Threads waiting for work now.
    #[cfg(test)]
    fn idle_threads(&self) -> usize {
        self.inner
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .idle
    }

    /// Threads alive now.
    #[cfg(test)]
    fn threads(&self) -> usize {
        self.inner
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

fn worker(inner: Arc<Inner>, mut job: Option<Job>) {
    let lock = || inner.counts.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if let Some(j) = job.take() {
            j();
        }
        // Take a job queued at the limit, or go idle.
        let take_queued = {
            let mut c = lock();
            if c.queued > 0 {
                c.queued -= 1;
                true
            } else {
                c.idle += 1;
                false
            }
        };
        let next = if take_queued {
            inner.rx.recv().ok()
        } else {
            match inner.rx.recv_timeout(inner.keep_alive) {
                Ok(j) => Some(j),
                Err(RecvTimeoutError::Timeout) => {
                    let mut c = lock();
                    if c.idle > 0 {
                        // Leave; if a job was reserved for this thread, another idle one
                        // takes over the reservation.
                        c.idle -= 1;
                        c.total -= 1;
                        return;
                    }
                    // Every idle slot is reserved: a job is on its way to this thread.
                    drop(c);
                    inner.rx.recv().ok()
                }
                Err(RecvTimeoutError::Disconnected) => None,
            }
        };
        match next {
            Some(j) => job = Some(j),
            None => return,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    #[test]
    fn runs_jobs_concurrently_and_reuses_threads() {
        let pool = Pool::new(64, Duration::from_secs(10), 256 * 1024);
        let barrier = Arc::new(Barrier::new(9));
        for _ in 0..8 {
            let b = barrier.clone();
            pool.submit(Box::new(move || {
                b.wait();
            }));
        }
        barrier.wait(); // all eight ran at once
        assert_eq!(pool.threads(), 8);
        // Wait for the eight to go idle; a job submitted before that may start a ninth.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.idle_threads() < 8 {
            assert!(
                std::time::Instant::now() < deadline,
                "workers never went idle"
            );
            thread::yield_now();
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        for i in 0..100 {
            let tx = tx.clone();
            pool.submit(Box::new(move || tx.send(i).unwrap()));
            rx.recv().unwrap();
        }
        assert_eq!(pool.threads(), 8, "sequential jobs reuse idle threads");
    }

    #[test]
    fn queues_beyond_the_limit() {
        let pool = Pool::new(2, Duration::from_secs(10), 256 * 1024);
        let (tx, rx) = crossbeam_channel::unbounded();
        for i in 0..20 {
            let tx = tx.clone();
            pool.submit(Box::new(move || tx.send(i).unwrap()));
        }
        let mut got: Vec<i32> = (0..20).map(|_| rx.recv().unwrap()).collect();
        got.sort();
        assert_eq!(got, (0..20).collect::<Vec<_>>());
        assert!(pool.threads() <= 2);
    }

    #[test]
    fn idle_threads_exit() {
        let pool = Pool::new(4, Duration::from_millis(20), 256 * 1024);
        let (tx, rx) = crossbeam_channel::unbounded();
        pool.submit(Box::new(move || tx.send(()).unwrap()));
        rx.recv().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.threads() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "idle thread never exited"
            );
            thread::yield_now();
        }
    }
}
