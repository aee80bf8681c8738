//! Worker threads for the work of requests: one thread per call in flight, idle threads
//! reused, threads idle for a while exit, and at most `max` threads (further jobs queue).
//!
//! Reuse matters: a fresh thread per call cost about 30 µs and a 5x loss of pipelined
//! throughput. A job never starts on a thread that will exit before the job ends, which is
//! what makes `PR_SET_PDEATHSIG` (tied to the spawning thread) safe for children the job starts.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// A unit of work handed to a worker thread (not an MCP job: see `peer::JOB_META`).
pub type WorkItem = Box<dyn FnOnce() + Send>;

/// Where a submitted job went.
#[derive(Debug)]
pub enum Placed {
    /// To an idle thread, a new one, (at the limit) the queue the next free thread takes, or
    /// (a job of several slots) in line until all its slots are free.
    Running,
    /// No thread could be started for it (the error): it waits for a busy thread to free up.
    Waiting(io::Error),
}

#[derive(Default)]
struct Counts {
    /// Threads alive.
    total: usize,
    /// Threads waiting for a job that no queued job is reserved for.
    idle: usize,
    /// Items submitted at the limit, which the next thread to free up takes.
    queued: usize,
    /// Slots held beyond their own thread by running jobs of more than one slot.
    held: usize,
    /// Items waiting until all their slots are free at once, with their slot count, in
    /// order; while one waits, every later job waits behind it.
    parked: VecDeque<(WorkItem, usize)>,
}

impl Counts {
    /// Whether a job of `slots` slots may start now: busy threads and held slots leave room.
    fn fits(&self, slots: usize, max: usize) -> bool {
        (self.total - self.idle) + self.held + slots <= max
    }

    /// Where a job that may start goes: an idle thread (reserved for it), a new thread, or
    /// (at the limit) the queue for the next thread to free up. True: start a thread.
    fn place(&mut self, max: usize) -> bool {
        if (self.total - self.idle) + self.held >= max {
            self.queued += 1;
            false
        } else if self.idle > 0 {
            self.idle -= 1; // reserved for this job
            false
        } else {
            self.total += 1;
            true
        }
    }
}

/// How often an idle worker looks for a job before it sleeps: a few microseconds, in which a
/// job handed over at once needs no wake-up.
const SPINS: u32 = 50;

/// The jobs handed to idle workers. A worker waiting for one spins briefly, then sleeps on
/// the condition variable; it never yields the CPU while spinning. (crossbeam's channel
/// yields (`sched_yield`) before it sleeps: on a CPU shared with a busy process each yield
/// gave that process a whole time slice, and a call took 4 ms instead of 60 µs; docs/bench.md,
/// contention.)
///
/// Wake-ups are chained: a job queued while a worker spins, or while a woken worker has not
/// taken its job yet, wakes nobody; a worker that takes a job and leaves more behind wakes the
/// next sleeper. So the reader, which hands over the requests of one read together, pays one
/// wake-up per read instead of one per request, and still every job starts on a thread of
/// its own, a wake-up later than the one before it (docs/bench.md, pipelined echo).
#[derive(Default)]
struct Queue {
    jobs: Mutex<Items>,
    ready: Condvar,
    len: AtomicUsize,
    /// Workers spinning in `recv`: each looks at the queue again before it sleeps.
    spinning: AtomicUsize,
    /// Every `Pool` handle is gone: idle workers exit.
    closed: AtomicBool,
}

#[derive(Default)]
struct Items {
    queue: VecDeque<WorkItem>,
    /// Workers asleep on `ready`.
    sleeping: usize,
    /// A sleeper was notified and has not woken yet.
    waking: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Items> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn send(&self, job: WorkItem) {
        let mut q = self.lock();
        q.queue.push_back(job);
        self.len.store(q.queue.len(), Ordering::SeqCst);
        self.wake_one(q);
    }

    /// Wakes a sleeper for the jobs queued, unless a spinning or waking worker will take them.
    fn wake_one(&self, mut q: MutexGuard<'_, Items>) {
        let wake = !q.queue.is_empty()
            && !q.waking
            && q.sleeping > 0
            && self.spinning.load(Ordering::SeqCst) == 0;
        if wake {
            q.waking = true;
        }
        drop(q);
        if wake {
            self.ready.notify_one();
        }
    }

    /// Takes the next job and hands on the wake-up if more are queued.
    fn pop(&self, mut q: MutexGuard<'_, Items>) -> Option<WorkItem> {
        let job = q.queue.pop_front();
        self.len.store(q.queue.len(), Ordering::SeqCst);
        self.wake_one(q);
        job
    }

    /// The next job; None when the pool is gone, or when `timeout` passed first.
    fn recv(&self, timeout: Option<Duration>) -> Option<WorkItem> {
        self.spinning.fetch_add(1, Ordering::SeqCst);
        for _ in 0..SPINS {
            if self.len.load(Ordering::SeqCst) > 0 {
                let q = self.lock();
                if !q.queue.is_empty() {
                    self.spinning.fetch_sub(1, Ordering::SeqCst);
                    return self.pop(q);
                }
            }
            std::hint::spin_loop();
        }
        // From here on a job queued is either seen below or wakes this thread.
        self.spinning.fetch_sub(1, Ordering::SeqCst);
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut q = self.lock();
        loop {
            if !q.queue.is_empty() {
                return self.pop(q);
            }
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            q.sleeping += 1;
            q = match deadline {
                None => self.ready.wait(q).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        q.sleeping -= 1;
                        return None;
                    }
                    self.ready
                        .wait_timeout(q, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
            q.sleeping -= 1;
            // Woken by a notify, a timeout or spuriously: either way a thread is awake now
            // and looks at the queue, so the next job queued may wake another.
            q.waking = false;
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
    /// A pool of at most `max` threads; idle threads exit after `keep_alive`.
    pub fn new(max: usize, keep_alive: Duration, stack_size: usize) -> Pool {
        let inner = Arc::new(Inner {
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
    ///
    /// A thread that cannot be started (the user's process limit, a container's pid limit)
    /// loses no job: it waits for the next thread of the pool to free up, when there is one;
    /// when the pool has no thread at all, the job comes back with the error, for the caller
    /// to answer its request.
    #[cfg(test)]
    pub fn submit(&self, job: WorkItem) -> Result<Placed, (WorkItem, io::Error)> {
        self.submit_slots(job, 1)
    }

    /// Runs `job` as [`Pool::submit`] does, counting it as `slots` jobs against the limit
    /// (at most the limit): it starts only when all its slots are free at once, and holds
    /// them until it ends (a portfolio's members, README "Portfolios"). A job of one slot
    /// that comes while such a job waits waits behind it.
    pub fn submit_slots(
        &self,
        job: WorkItem,
        slots: usize,
    ) -> Result<Placed, (WorkItem, io::Error)> {
        let max = self.inner.max;
        let slots = slots.clamp(1, max);
        let job = hold(&self.inner, job, slots);
        let mut c = self.inner.counts();
        if !c.parked.is_empty() || (slots > 1 && !c.fits(slots, max)) {
            c.parked.push_back((job, slots));
            return Ok(Placed::Running);
        }
        c.held += slots - 1;
        let spawn = c.place(max);
        drop(c);
        launch(&self.inner, job, spawn)
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

/// Starts `job` where [`Counts::place`] put it. A new thread that cannot be started hands
/// the job to a busy thread of the pool (the first to free up), or, with none, back to the
/// caller with the error.
fn launch(inner: &Arc<Inner>, job: WorkItem, spawn: bool) -> Result<Placed, (WorkItem, io::Error)> {
    if !spawn {
        inner.queue.send(job);
        return Ok(Placed::Running);
    }
    // The job goes to the new thread through a slot it can be taken back from.
    let slot = Arc::new(Mutex::new(Some(job)));
    let for_thread = inner.clone();
    let handed = Arc::clone(&slot);
    let started = thread::Builder::new()
        .name("stdmcp-worker".into())
        .stack_size(inner.stack_size)
        .spawn(move || {
            let job = handed.lock().unwrap_or_else(PoisonError::into_inner).take();
            worker(for_thread, job)
        });
    let Err(e) = started else {
        return Ok(Placed::Running);
    };
    let Some(job) = slot.lock().unwrap_or_else(PoisonError::into_inner).take() else {
        return Ok(Placed::Running); // cannot happen: the closure never ran
    };
    let mut c = inner.counts();
    c.total -= 1;
    if c.idle > 0 {
        c.idle -= 1; // a thread went idle meanwhile: reserved for this job
        drop(c);
        inner.queue.send(job);
        return Ok(Placed::Running);
    } else if c.total > 0 {
        // Every thread is busy: the first to free up takes the job.
        c.queued += 1;
    } else {
        return Err((job, e));
    }
    drop(c);
    log::warn!("cannot start a worker thread ({e}): the request waits for a busy one");
    inner.queue.send(job);
    Ok(Placed::Waiting(e))
}

/// `job`, which gives back the slots it holds beyond its thread when it ends.
fn hold(inner: &Arc<Inner>, job: WorkItem, slots: usize) -> WorkItem {
    if slots <= 1 {
        return job;
    }
    struct Held(Arc<Inner>, usize);
    impl Drop for Held {
        fn drop(&mut self) {
            self.0.counts().held -= self.1;
        }
    }
    let held = Held(inner.clone(), slots - 1);
    Box::new(move || {
        let _held = held;
        job();
    })
}

/// After a job ended on a worker: the parked jobs that fit now, in order. The first runs on
/// this worker; the others come with where [`Counts::place`] put them (they fit, so none is
/// queued), to be launched once the lock is let go.
type Unparked = (Option<WorkItem>, Vec<(WorkItem, bool)>);

fn unpark(max: usize, c: &mut Counts) -> Unparked {
    let mut others = Vec::new();
    // This worker is still counted busy: the first job takes its thread.
    let first_fits = c
        .parked
        .front()
        .is_some_and(|(_, slots)| (c.total - c.idle - 1) + c.held + slots <= max);
    if !first_fits {
        return (None, others);
    }
    let first = c.parked.pop_front().map(|(job, slots)| {
        c.held += slots - 1;
        job
    });
    while c
        .parked
        .front()
        .is_some_and(|(_, slots)| c.fits(*slots, max))
    {
        let Some((job, slots)) = c.parked.pop_front() else {
            break;
        };
        c.held += slots - 1;
        let spawn = c.place(max);
        others.push((job, spawn));
    }
    (first, others)
}

fn worker(inner: Arc<Inner>, mut job: Option<WorkItem>) {
    loop {
        if let Some(j) = job.take() {
            j();
        }
        // Take a job queued at the limit, or parked ones that fit now, or go idle.
        let (take_queued, (unparked, others)) = {
            let mut c = inner.counts();
            if c.queued > 0 {
                c.queued -= 1;
                (true, (None, Vec::new()))
            } else {
                let u = unpark(inner.max, &mut c);
                if u.0.is_none() {
                    c.idle += 1;
                }
                (false, u)
            }
        };
        for (j, spawn) in others {
            // This thread is alive, so a job whose thread cannot start waits for it.
            if let Err((_, e)) = launch(&inner, j, spawn) {
                log::error!("cannot start a worker thread ({e}): a parked job was dropped");
            }
        }
        if unparked.is_some() {
            job = unparked;
            continue;
        }
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

    fn submit(pool: &Pool, job: WorkItem) {
        assert!(pool.submit(job).is_ok(), "no thread for the job");
    }

    #[test]
    fn a_job_no_thread_can_run_comes_back_with_the_error() {
        // A stack no machine can map: the thread cannot be started, and no other exists.
        let pool = Pool::new(4, Duration::from_secs(10), usize::MAX / 2);
        let (tx, rx) = crossbeam_channel::unbounded();
        let Err((job, e)) = pool.submit(Box::new(move || tx.send(()).unwrap())) else {
            panic!("a thread with that stack started");
        };
        assert!(!e.to_string().is_empty());
        assert_eq!(pool.threads(), 0);
        job(); // intact: the caller may run it, or answer its request
        rx.recv().unwrap();
    }

    #[test]
    fn runs_jobs_concurrently_and_reuses_threads() {
        let pool = Pool::new(64, Duration::from_secs(10), 256 * 1024);
        let barrier = Arc::new(Barrier::new(9));
        for _ in 0..8 {
            let b = barrier.clone();
            submit(
                &pool,
                Box::new(move || {
                    b.wait();
                }),
            );
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
            submit(&pool, Box::new(move || tx.send(i).unwrap()));
            rx.recv().unwrap();
        }
        assert_eq!(pool.threads(), 8, "sequential jobs reuse idle threads");
    }

    #[test]
    fn a_burst_for_sleeping_workers_starts_every_job_at_once() {
        let pool = Pool::new(64, Duration::from_secs(60), 256 * 1024);
        let start = |n: usize| {
            let barrier = Arc::new(Barrier::new(n + 1));
            for _ in 0..n {
                let b = barrier.clone();
                submit(
                    &pool,
                    Box::new(move || {
                        b.wait();
                    }),
                );
            }
            barrier
        };
        start(8).wait();
        // All eight asleep: the burst below wakes one, and each woken worker the next.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.inner.queue.lock().sleeping < 8 {
            assert!(std::time::Instant::now() < deadline, "workers never slept");
            thread::yield_now();
        }
        // Eight jobs that each wait for all the others: they finish only if all eight run at
        // once on the eight idle threads (a job left queued behind another would hang).
        let (done, finished) = crossbeam_channel::bounded(1);
        let barrier = start(8);
        thread::spawn(move || {
            barrier.wait();
            let _ = done.send(());
        });
        assert!(
            finished.recv_timeout(Duration::from_secs(10)).is_ok(),
            "a queued job did not start"
        );
        assert_eq!(pool.threads(), 8, "the burst reused the sleeping threads");
    }

    #[test]
    fn queues_beyond_the_limit() {
        let pool = Pool::new(2, Duration::from_secs(10), 256 * 1024);
        let (tx, rx) = crossbeam_channel::unbounded();
        for i in 0..20 {
            let tx = tx.clone();
            submit(&pool, Box::new(move || tx.send(i).unwrap()));
        }
        let mut got: Vec<i32> = (0..20).map(|_| rx.recv().unwrap()).collect();
        got.sort();
        assert_eq!(got, (0..20).collect::<Vec<_>>());
        assert!(pool.threads() <= 2);
    }

    #[test]
    fn a_job_of_several_slots_starts_when_all_are_free_and_later_jobs_wait_behind_it() {
        let pool = Pool::new(3, Duration::from_secs(10), 256 * 1024);
        let (started, order) = crossbeam_channel::unbounded();
        // Each job reports its start and runs until its gate is opened.
        let job = |name: &'static str| {
            let (open, gate) = crossbeam_channel::bounded::<()>(1);
            let started = started.clone();
            let job: WorkItem = Box::new(move || {
                started.send(name).unwrap();
                let _ = gate.recv();
            });
            (job, open)
        };
        let (a, open_a) = job("a");
        assert!(pool.submit_slots(a, 2).is_ok());
        let (b, open_b) = job("b");
        submit(&pool, b);
        // a and b start at once, on two threads: in either order.
        let mut first = [order.recv().unwrap(), order.recv().unwrap()];
        first.sort();
        assert_eq!(first, ["a", "b"]);
        // Three slots are taken: c (two slots) waits, and d (one slot) waits behind it.
        let (c, open_c) = job("c");
        assert!(pool.submit_slots(c, 2).is_ok());
        let (d, open_d) = job("d");
        submit(&pool, d);
        assert!(order.recv_timeout(Duration::from_millis(50)).is_err());
        // b ends: one slot is free, c needs two: nothing starts.
        open_b.send(()).unwrap();
        assert!(order.recv_timeout(Duration::from_millis(50)).is_err());
        // a ends: c starts with both its slots, and d with the last one (on two threads, so
        // in either order).
        open_a.send(()).unwrap();
        let mut next = [
            order.recv_timeout(Duration::from_secs(10)).unwrap(),
            order.recv_timeout(Duration::from_secs(10)).unwrap(),
        ];
        next.sort();
        assert_eq!(next, ["c", "d"]);
        open_c.send(()).unwrap();
        open_d.send(()).unwrap();
        // A job wider than the pool runs alone.
        let (e, open_e) = job("e");
        assert!(pool.submit_slots(e, 10).is_ok());
        assert_eq!(order.recv_timeout(Duration::from_secs(10)).unwrap(), "e");
        open_e.send(()).unwrap();
    }

    #[test]
    fn idle_threads_exit() {
        let pool = Pool::new(4, Duration::from_millis(20), 256 * 1024);
        let (tx, rx) = crossbeam_channel::unbounded();
        submit(&pool, Box::new(move || tx.send(()).unwrap()));
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
