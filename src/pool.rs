//! Pools of threads: the server's workers for the work of requests (one thread per call in
//! flight) and the runner's helpers that move a program's input and output. Idle threads are
//! reused, threads idle for a while exit, and at most `max` threads run (further jobs queue).
//!
//! Reuse matters: a fresh thread per call cost about 30 µs and a 5x loss of pipelined
//! throughput. A job never starts on a thread that will exit before the job ends, which is
//! what makes `PR_SET_PDEATHSIG` (tied to the spawning thread) safe for children the job starts.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

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

/// How often an idle worker looks for a job before it sleeps: a few microseconds, in which a
/// job handed over at once needs no wake-up.
const SPINS: u32 = 50;

/// The jobs handed to idle workers. A worker waiting for one spins briefly, then sleeps on
/// the condition variable; it never yields the CPU while spinning. (crossbeam's channel
/// yields (`sched_yield`) before it sleeps: on a CPU shared with a busy process each yield
/// gave that process a whole time slice, and a call took 4 ms instead of 60 µs; docs/bench.md,
/// contention.)
#[derive(Default)]
struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
    len: AtomicUsize,
    /// Every `Pool` handle is gone: idle workers exit.
    closed: AtomicBool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, VecDeque<Job>> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn send(&self, job: Job) {
        let mut q = self.lock();
        q.push_back(job);
        self.len.store(q.len(), Ordering::Release);
        drop(q);
        self.ready.notify_one();
    }

    fn pop(&self, q: &mut VecDeque<Job>) -> Option<Job> {
        let job = q.pop_front();
        self.len.store(q.len(), Ordering::Release);
        job
    }

    /// The next job; None when the pool is gone, or when `timeout` passed first.
    fn recv(&self, timeout: Option<Duration>) -> Option<Job> {
        for _ in 0..SPINS {
            if self.len.load(Ordering::Acquire) > 0 {
                if let Some(job) = self.pop(&mut self.lock()) {
                    return Some(job);
                }
            }
            std::hint::spin_loop();
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut q = self.lock();
        loop {
            if let Some(job) = self.pop(&mut q) {
                return Some(job);
            }
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            q = match deadline {
                None => self.ready.wait(q).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return None;
                    }
                    self.ready
                        .wait_timeout(q, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _guard = self.lock();
        self.ready.notify_all();
    }
}

/// Held by every `Pool` handle; the last one dropped closes the queue.
struct Handle(Arc<Inner>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.queue.close();
    }
}

struct Inner {
    /// The threads' name.
    name: &'static str,
    counts: Mutex<Counts>,
    queue: Queue,
    max: usize,
    keep_alive: Duration,
    stack_size: usize,
}

impl Inner {
    fn counts(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The pool. Cloning shares it.
#[derive(Clone)]
pub struct Pool {
    _handle: Arc<Handle>,
    inner: Arc<Inner>,
}

impl Pool {
    /// A pool of at most `max` threads named `name`; idle threads exit after `keep_alive`.
    pub fn new(name: &'static str, max: usize, keep_alive: Duration, stack_size: usize) -> Pool {
        let inner = Arc::new(Inner {
            name,
            counts: Mutex::new(Counts::default()),
            queue: Queue::default(),
            max: max.max(1),
            keep_alive,
            stack_size,
        });
        Pool {
            _handle: Arc::new(Handle(Arc::clone(&inner))),
            inner,
        }
    }

    /// Runs `job` on an idle thread, a new thread, or (at the limit) when a thread frees up.
    /// A thread that cannot be started (the user's process limit, a container's pid limit) is
    /// logged, and the job dropped.
    pub fn submit(&self, job: Job) {
        if let Err(e) = self.try_submit(job) {
            log::error!("cannot start a {} thread: {e}", self.inner.name);
        }
    }

    /// As [`Pool::submit`], but a thread that cannot be started is an error (the job is
    /// dropped).
    fn try_submit(&self, job: Job) -> std::io::Result<()> {
        let spawn = {
            let mut c = self.inner.counts();
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
                .name(self.inner.name.into())
                .stack_size(self.inner.stack_size)
                .spawn(move || worker(inner, Some(job)));
            if let Err(e) = started {
                let mut c = self.inner.counts();
                c.total -= 1;
                return Err(e);
            }
        } else {
            self.inner.queue.send(job);
        }
        Ok(())
    }

    /// Threads waiting for work now.
    #[cfg(test)]
    fn idle_threads(&self) -> usize {
        self.inner.counts().idle
    }

    /// Threads alive now.
    #[cfg(test)]
    fn threads(&self) -> usize {
        self.inner.counts().total
    }
}

fn worker(inner: Arc<Inner>, mut job: Option<Job>) {
    loop {
        if let Some(j) = job.take() {
            j();
        }
        // Take a job queued at the limit, or go idle.
        let take_queued = {
            let mut c = inner.counts();
            if c.queued > 0 {
                c.queued -= 1;
                true
            } else {
                c.idle += 1;
                false
            }
        };
        let next = if take_queued {
            inner.queue.recv(None)
        } else {
            match inner.queue.recv(Some(inner.keep_alive)) {
                Some(j) => Some(j),
                None if inner.queue.closed.load(Ordering::Acquire) => None,
                None => {
                    let mut c = inner.counts();
                    if c.idle > 0 {
                        // Leave; if a job was reserved for this thread, another idle one
                        // takes over the reservation.
                        c.idle -= 1;
                        c.total -= 1;
                        return;
                    }
                    // Every idle slot is reserved: a job is on its way to this thread.
                    drop(c);
                    inner.queue.recv(None)
                }
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
        let pool = Pool::new("stdmcp-test", 64, Duration::from_secs(10), 256 * 1024);
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
        let pool = Pool::new("stdmcp-test", 2, Duration::from_secs(10), 256 * 1024);
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
        let pool = Pool::new("stdmcp-test", 4, Duration::from_millis(20), 256 * 1024);
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
