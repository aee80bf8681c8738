//! The pool's tests: hand-offs, idle workers reused and retired, refusals.
#![allow(clippy::unwrap_used)]

use super::*;
use std::sync::Barrier;

type Job = Box<dyn FnOnce() + Send>;

fn call(job: Job) -> Option<Job> {
    job();
    None
}

fn pool(keep_alive: Duration, stack_size: usize) -> Pool<Job> {
    Pool::new(call, keep_alive, stack_size)
}

/// Both ways an idle worker waits: spinning first (several CPUs), or not (one CPU).
fn pools(keep_alive: Duration) -> [Pool<Job>; 2] {
    [SPINS, 0].map(|spins| Pool::with_spins(call, keep_alive, 256 * 1024, spins.into()))
}

#[test]
fn idle_workers_spin_only_where_threads_run_at_once() {
    assert_eq!(spins_for(Some(1)), 0);
    assert_eq!(spins_for(Some(2)), SPINS);
    assert_eq!(spins_for(None), SPINS);
    // This process may run on at least one CPU, as many as std says.
    let std_says = thread::available_parallelism().ok().map(usize::from);
    assert!(
        cpus() >= Some(1) && cpus() >= std_says,
        "{:?} {std_says:?}",
        cpus()
    );
}

fn submit(pool: &Pool<Job>, job: Job) {
    assert!(pool.submit(job).is_ok(), "no thread for the job");
}

/// Workers asleep on their slots now.
fn sleeping(pool: &Pool<Job>) -> usize {
    let idle = lock(&pool.inner.idle);
    idle.stack.iter().filter(|s| lock(&s.held).asleep).count()
}

/// Submits `n` jobs that each wait at a barrier of `n + 1`, returned for the test to
/// join: it opens only when all `n` run at once.
fn start_all(pool: &Pool<Job>, n: usize) -> Arc<Barrier> {
    let barrier = Arc::new(Barrier::new(n + 1));
    for _ in 0..n {
        let b = barrier.clone();
        submit(
            pool,
            Box::new(move || {
                b.wait();
            }),
        );
    }
    barrier
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        thread::yield_now();
    }
}

#[test]
fn a_job_no_thread_can_run_comes_back_with_the_error() {
    // A stack no machine can map: the thread cannot be started, and no other exists.
    let pool = pool(Duration::from_secs(10), usize::MAX / 2);
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
    let pool = pool(Duration::from_secs(10), 256 * 1024);
    start_all(&pool, 8).wait(); // all eight ran at once
    assert_eq!(pool.threads(), 8);
    // Wait for the eight to go idle; a job submitted before that may start a ninth.
    wait_until("workers never went idle", || pool.idle_threads() == 8);
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
    for pool in pools(Duration::from_secs(60)) {
        a_burst_for_sleeping_workers_starts_every_job_at_once_in(&pool);
    }
}

fn a_burst_for_sleeping_workers_starts_every_job_at_once_in(pool: &Pool<Job>) {
    let start = |n: usize| start_all(pool, n);
    start(8).wait();
    // All eight asleep: the burst below wakes one, and each woken worker the next.
    wait_until("workers never slept", || sleeping(pool) == 8);
    // Eight jobs that each wait for all the others: they finish only if all eight run at
    // once on the eight idle threads (a job left waiting behind another would hang).
    let (done, finished) = crossbeam_channel::bounded(1);
    let barrier = start(8);
    thread::spawn(move || {
        barrier.wait();
        let _ = done.send(());
    });
    assert!(
        finished.recv_timeout(Duration::from_secs(10)).is_ok(),
        "a job handed to a sleeper did not start"
    );
    assert_eq!(pool.threads(), 8, "the burst reused the sleeping threads");
    // And the chain is whole again: the next burst starts every job too.
    wait_until("workers never slept again", || sleeping(pool) == 8);
    start(8).wait();
}

#[test]
fn no_queue_every_job_starts_at_once_however_many_are_busy() {
    // The pool has no limit of its own (admission is the peer's): with every thread
    // busy, a job starts on a new thread rather than waiting for one.
    let pool = pool(Duration::from_secs(10), 256 * 1024);
    let n = 20;
    start_all(&pool, n).wait();
    assert_eq!(pool.threads(), n);
}

#[test]
fn a_job_may_hand_its_thread_the_next_one() {
    fn chain(n: u32) -> Option<u32> {
        n.checked_sub(1)
    }
    let pool: Pool<u32> = Pool::new(chain, Duration::from_secs(10), 256 * 1024);
    assert!(pool.submit(100).is_ok());
    wait_until("the chain never ended", || pool.idle_threads() == 1);
    assert_eq!(pool.threads(), 1, "the follow-ups ran on the same thread");
}

#[test]
fn bursts_from_several_threads_never_leave_a_job_waiting() {
    // Short jobs handed over in bursts while workers finish, spin and fall asleep: every
    // job runs (one left with a sleeper nobody wakes would hang the receive below).
    for pool in pools(Duration::from_secs(10)) {
        bursts_never_leave_a_job_waiting_in(&pool);
    }
}

fn bursts_never_leave_a_job_waiting_in(pool: &Pool<Job>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let submitters: Vec<_> = (0..4)
        .map(|_| {
            let (pool, tx) = (pool.clone(), tx.clone());
            thread::spawn(move || {
                for burst in 0..200 {
                    for _ in 0..(burst % 7 + 1) {
                        let tx = tx.clone();
                        submit(&pool, Box::new(move || tx.send(()).unwrap()));
                    }
                    if burst % 50 == 0 {
                        thread::sleep(Duration::from_millis(2)); // let workers sleep
                    }
                }
            })
        })
        .collect();
    for s in submitters {
        s.join().unwrap();
    }
    let jobs: usize = 4 * (0..200).map(|b| b % 7 + 1).sum::<usize>();
    for n in 0..jobs {
        assert!(
            rx.recv_timeout(Duration::from_secs(10)).is_ok(),
            "job {n} of {jobs} never ran"
        );
    }
}

#[test]
fn idle_threads_exit() {
    let pool = pool(Duration::from_millis(20), 256 * 1024);
    let (tx, rx) = crossbeam_channel::unbounded();
    submit(&pool, Box::new(move || tx.send(()).unwrap()));
    rx.recv().unwrap();
    wait_until("idle thread never exited", || pool.threads() == 0);
}
