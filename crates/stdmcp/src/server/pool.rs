//! Worker threads for the work of requests, with no queue of their own: a work item goes to
//! an idle thread or a new one, or back to the caller with the error when no thread can be
//! started (the user's process limit, a container's pids limit). Which call starts, and
//! when, is the peer's decision alone (its admission by `max_running` slots); the pool only
//! carries the starts out. Idle threads are reused, and exit after `keep_alive`.
//!
//! Reuse matters: a fresh thread per call cost about 30 µs and a 5x loss of pipelined
//! throughput. An item never starts on a thread that will exit before the item ends, which is
//! what makes `PR_SET_PDEATHSIG` (tied to the spawning thread) safe for children it starts.
//!
//! Each idle worker waits on a hand-off slot of its own, and the pool keeps the idle ones in a
//! stack (the most recently idle on top: the one most likely still spinning, with a warm
//! cache). A worker waiting for an item spins briefly, then sleeps on its slot's condition
//! variable; it never yields the CPU while spinning. (crossbeam's channel yields
//! (`sched_yield`) before it sleeps: on a CPU shared with a busy process each yield gave that
//! process a whole time slice, and a call took 4 ms instead of 60 µs; docs/bench-analysis.md,
//! contention.)
//!
//! Wake-ups are chained: an item handed to a sleeping worker while another woken worker has
//! not taken its item yet wakes nobody; a woken worker, once it has its item, wakes the next
//! such sleeper. So the reader, which hands over the requests of one read together, pays one
//! wake-up per read instead of one per request, and still every item starts on a thread of
//! its own at once, a wake-up later than the one before it (docs/bench-analysis.md,
//! pipelined echo). A worker that is free before such a sleeper is woken (its item ended, or
//! it spins) takes the sleeper's item over and runs it at once, and the sleeper stays idle:
//! an item never waits for a wake-up while a thread is free.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::sync::{lock, wait, wait_timeout};
use std::thread;
use std::time::{Duration, Instant};

/// How often an idle worker looks at its slot before it sleeps: a few microseconds, in which
/// an item handed over at once needs no wake-up. Only where threads of this process can run
/// at the same time ([`spins_for`]).
const SPINS: u32 = 50;

/// The spin of an idle worker for `cpus` CPUs this process may run on ([`cpus`]): none on one
/// CPU, where nothing can hand an item over while the worker spins and the spin only delays
/// the thread that would (the reader, the writer). Measured with the benchmark's `seq` group,
/// which pins the driver and the server to one CPU: sequential p50 28.5 µs with the spin,
/// 26.4 µs without (docs/bench-analysis.md).
fn spins_for(cpus: Option<usize>) -> u32 {
    match cpus {
        Some(1) => 0,
        _ => SPINS,
    }
}

/// The CPUs the calling thread may run on (its affinity, which threads inherit: `taskset`,
/// cpusets), `None` when it cannot be read (over 1024 CPUs). Not std's
/// `available_parallelism`, which also parses the cgroup's CPU quota: a quota throttles the
/// process but still lets its threads run at the same time, and the parser was 12.8 KB of
/// the binary.
#[allow(unsafe_code)]
fn cpus() -> Option<usize> {
    let mut mask = [0u64; 16];
    // SAFETY: the kernel writes at most `size_of_val(&mask)` bytes into `mask`.
    let r = unsafe {
        libc::sched_getaffinity(0, std::mem::size_of_val(&mask), mask.as_mut_ptr().cast())
    };
    (r == 0).then(|| mask.iter().map(|w| w.count_ones() as usize).sum())
}

/// The hand-off slot of one worker.
struct Slot<T> {
    held: Mutex<Held<T>>,
    ready: Condvar,
    /// An item is in the slot (what a spinning worker looks at).
    full: AtomicBool,
}

struct Held<T> {
    item: Option<T>,
    /// The worker sleeps on `ready` (set and cleared under the lock).
    asleep: bool,
}

impl<T> Slot<T> {
    fn new() -> Slot<T> {
        Slot {
            held: Mutex::new(Held {
                item: None,
                asleep: false,
            }),
            ready: Condvar::new(),
            full: AtomicBool::new(false),
        }
    }
}

/// The pool's bookkeeping, under one lock.
struct Idle<T> {
    /// Idle workers' slots, the most recently idle last.
    stack: Vec<Arc<Slot<T>>>,
    /// Threads alive.
    total: usize,
    /// A woken worker has not taken its item yet: items for other sleepers wait in
    /// `to_wake` for it to wake the next.
    waking: bool,
    /// Sleepers that were handed an item and are still to be woken, by the chain. A worker
    /// that goes idle meanwhile takes such an item over instead of waiting for one
    /// ([`take_over`]), and the sleeper stays idle.
    to_wake: Vec<Arc<Slot<T>>>,
}

struct Inner<T> {
    idle: Mutex<Idle<T>>,
    /// Runs one item; what it returns runs next on the same thread (an item the caller could
    /// not hand to the pool, kept by the thread that is about to be free).
    run: fn(T) -> Option<T>,
    /// Every `Pool` handle is gone: idle workers exit (set under `idle`'s lock).
    closed: AtomicBool,
    /// Whether `to_wake` has entries (what a spinning worker looks at).
    pending: AtomicBool,
    /// Workers spinning on their slots: while one does, an item for a sleeper wakes nobody
    /// (the spinner takes it over, or starts the chain when it stops spinning).
    spinning: AtomicUsize,
    keep_alive: Duration,
    stack_size: usize,
    /// How often an idle worker looks at its slot before it sleeps ([`spins_for`]), found
    /// when a worker first goes idle ([`cpus`]), off the server's start.
    spins: OnceLock<u32>,
}

impl<T> Inner<T> {
    fn spins(&self) -> u32 {
        *self.spins.get_or_init(|| spins_for(cpus()))
    }
}

/// Held by every `Pool` handle; the last one dropped lets idle workers exit.
struct Handle<T>(Arc<Inner<T>>);

impl<T> Drop for Handle<T> {
    fn drop(&mut self) {
        let mut idle = lock(&self.0.idle);
        self.0.closed.store(true, Ordering::Release);
        for slot in &idle.stack {
            let _held = lock(&slot.held);
            slot.ready.notify_one();
        }
        idle.stack.clear();
    }
}

/// The pool. Cloning shares it.
pub(super) struct Pool<T> {
    _handle: Arc<Handle<T>>,
    inner: Arc<Inner<T>>,
}

impl<T> Clone for Pool<T> {
    fn clone(&self) -> Pool<T> {
        Pool {
            _handle: Arc::clone(&self._handle),
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: Send + 'static> Pool<T> {
    /// A pool whose threads run items with `run`; idle threads exit after `keep_alive`.
    pub(super) fn new(run: fn(T) -> Option<T>, keep_alive: Duration, stack_size: usize) -> Pool<T> {
        Pool::with_spins(run, keep_alive, stack_size, OnceLock::new())
    }

    fn with_spins(
        run: fn(T) -> Option<T>,
        keep_alive: Duration,
        stack_size: usize,
        spins: OnceLock<u32>,
    ) -> Pool<T> {
        let inner = Arc::new(Inner {
            idle: Mutex::new(Idle {
                stack: Vec::new(),
                total: 0,
                waking: false,
                to_wake: Vec::new(),
            }),
            closed: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            spinning: AtomicUsize::new(0),
            run,
            keep_alive,
            stack_size,
            spins,
        });
        Pool {
            _handle: Arc::new(Handle(Arc::clone(&inner))),
            inner,
        }
    }

    /// Runs `item` at once, on an idle thread or a new one. When neither is possible (no
    /// thread can be started: the user's process limit, a container's pid limit), the item
    /// comes back intact with the error, for the caller to decide what becomes of it.
    pub(super) fn submit(&self, item: T) -> Result<(), (T, io::Error)> {
        let mut idle = lock(&self.inner.idle);
        let Some(slot) = idle.stack.pop() else {
            idle.total += 1;
            drop(idle);
            return spawn(&self.inner, item);
        };
        let wake = {
            let mut held = lock(&slot.held);
            held.item = Some(item);
            slot.full.store(true, Ordering::Release);
            held.asleep
        };
        if !wake {
            return Ok(()); // spinning: it sees the item by itself
        }
        if idle.waking || self.inner.spinning.load(Ordering::SeqCst) > 0 {
            // The woken worker wakes it in turn, or a spinning one takes its item over.
            idle.to_wake.push(slot);
            self.inner.pending.store(true, Ordering::Release);
            return Ok(());
        }
        idle.waking = true;
        drop(idle);
        notify(&slot);
        Ok(())
    }

    /// Threads waiting for work now.
    #[cfg(test)]
    fn idle_threads(&self) -> usize {
        lock(&self.inner.idle).stack.len()
    }

    /// Threads alive now.
    #[cfg(test)]
    fn threads(&self) -> usize {
        lock(&self.inner.idle).total
    }
}

/// Wakes the sleeper of `slot`, which was seen asleep with its item put in, under the slot's
/// lock: it waits already (it sets `asleep` and waits under that lock), so the wake-up needs
/// no lock, and the woken thread does not block at once on a lock still held.
fn notify<T>(slot: &Slot<T>) {
    slot.ready.notify_one();
}

/// Starts a thread for `item` (counted in `total` already); the item comes back with the
/// error if the thread cannot be started.
fn spawn<T: Send + 'static>(inner: &Arc<Inner<T>>, item: T) -> Result<(), (T, io::Error)> {
    // The item goes to the new thread through a slot it can be taken back from.
    let handed = Arc::new(Mutex::new(Some(item)));
    let for_thread = (Arc::clone(inner), Arc::clone(&handed));
    let started = thread::Builder::new()
        .name("stdmcp-worker".into())
        .stack_size(inner.stack_size)
        .spawn(move || {
            let (inner, handed) = for_thread;
            let item = lock(&handed).take();
            worker(&inner, item);
        });
    let Err(e) = started else {
        return Ok(());
    };
    lock(&inner.idle).total -= 1;
    let back = lock(&handed).take();
    match back {
        Some(item) => Err((item, e)),
        None => Ok(()), // cannot happen: the closure never ran
    }
}

fn worker<T: Send + 'static>(inner: &Arc<Inner<T>>, mut item: Option<T>) {
    let slot = Arc::new(Slot::new());
    while let Some(i) = item.take() {
        let mut next = (inner.run)(i);
        while let Some(n) = next {
            next = (inner.run)(n);
        }
        item = wait_for_item(inner, &slot);
    }
}

/// Goes idle and waits for the next item: spins, then sleeps; `None` when the pool is gone
/// or `keep_alive` passed (the thread is then out of the pool's books).
fn wait_for_item<T>(inner: &Inner<T>, slot: &Arc<Slot<T>>) -> Option<T> {
    let spins = inner.spins();
    {
        let mut idle = lock(&inner.idle);
        if inner.closed.load(Ordering::Acquire) {
            idle.total -= 1;
            return None;
        }
        if let Some(item) = take_over(inner, &mut idle) {
            return Some(item);
        }
        idle.stack.push(Arc::clone(slot));
    }
    if spins > 0 {
        if let Some(item) = spin(inner, slot, spins) {
            return Some(item);
        }
    }
    let deadline = Instant::now() + inner.keep_alive;
    let mut held = lock(&slot.held);
    loop {
        if let Some(item) = held.item.take() {
            slot.full.store(false, Ordering::Release);
            let slept = std::mem::replace(&mut held.asleep, false);
            drop(held);
            if slept {
                pass_wake(inner, slot);
            }
            return Some(item);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || inner.closed.load(Ordering::Acquire) {
            held.asleep = false;
            drop(held);
            if leave(inner, slot) {
                return None;
            }
            // Taken off the stack by a submitter: its item is in the slot (or on its way
            // under the pool's lock, which `leave` took): wait for it without a limit.
            held = lock(&slot.held);
            held.asleep = true;
            while held.item.is_none() {
                held = wait(&slot.ready, held);
            }
            continue;
        }
        held.asleep = true;
        held = wait_timeout(&slot.ready, held, left).0;
    }
}

/// Looks at the slot, and at sleepers' items to take over, for a few microseconds.
fn spin<T>(inner: &Inner<T>, slot: &Arc<Slot<T>>, spins: u32) -> Option<T> {
    inner.spinning.fetch_add(1, Ordering::SeqCst);
    let mut found = None;
    for _ in 0..spins {
        if slot.full.load(Ordering::Acquire) {
            found = take(slot);
            if found.is_some() {
                break;
            }
        }
        if inner.pending.load(Ordering::Acquire) {
            found = take_over_spinning(inner, &mut lock(&inner.idle), slot);
            if found.is_some() {
                break;
            }
        }
        std::hint::spin_loop();
    }
    inner.spinning.fetch_sub(1, Ordering::SeqCst);
    // Items handed to sleepers while this worker spun may count on it (a submitter saw it
    // spinning, under the lock taken here): it takes one over (unless it has its own), and
    // wakes a sleeper for the others unless one is waking.
    let mut idle = lock(&inner.idle);
    if idle.to_wake.is_empty() {
        return found;
    }
    if found.is_none() {
        found = take_over_spinning(inner, &mut idle, slot);
    }
    if idle.waking {
        return found;
    }
    let next = idle.to_wake.pop();
    inner
        .pending
        .store(!idle.to_wake.is_empty(), Ordering::Release);
    if let Some(next) = next {
        idle.waking = true;
        drop(idle);
        notify(&next);
    }
    found
}

/// The item of a spinning worker, if there is one.
fn take<T>(slot: &Slot<T>) -> Option<T> {
    let item = lock(&slot.held).item.take();
    if item.is_some() {
        slot.full.store(false, Ordering::Release);
    }
    item
}

/// The item of a sleeper still to be woken (the first in `to_wake` whose item is still
/// there), for a worker that is free now: it runs at once instead of after the wake-up, and
/// the sleeper, idle again, goes back on the stack.
fn take_over<T>(inner: &Inner<T>, idle: &mut Idle<T>) -> Option<T> {
    let mut found = None;
    while let Some(sleeper) = idle.to_wake.pop() {
        let item = lock(&sleeper.held).item.take();
        if let Some(item) = item {
            sleeper.full.store(false, Ordering::Release);
            // At the bottom: asleep, it is the last an item should go to.
            idle.stack.insert(0, sleeper);
            found = Some(item);
            break;
        }
        // Woken by its time limit, it took its item itself.
    }
    inner
        .pending
        .store(!idle.to_wake.is_empty(), Ordering::Release);
    found
}

/// [`take_over`] for a spinning worker, which is on the stack: it leaves the stack first,
/// unless a submitter took it off already (its own item is then on its way).
fn take_over_spinning<T>(inner: &Inner<T>, idle: &mut Idle<T>, me: &Arc<Slot<T>>) -> Option<T> {
    if idle.to_wake.is_empty() {
        return None;
    }
    let at = idle.stack.iter().position(|s| Arc::ptr_eq(s, me))?;
    idle.stack.remove(at);
    let item = take_over(inner, idle);
    if item.is_none() {
        idle.stack.push(Arc::clone(me));
    }
    item
}

/// A woken worker has its item: it wakes the next sleeper handed one meanwhile, if any.
fn pass_wake<T>(inner: &Inner<T>, me: &Arc<Slot<T>>) {
    let mut idle = lock(&inner.idle);
    idle.to_wake.retain(|s| !Arc::ptr_eq(s, me));
    let next = idle.to_wake.pop();
    inner
        .pending
        .store(!idle.to_wake.is_empty(), Ordering::Release);
    match next {
        Some(next) => {
            drop(idle);
            notify(&next);
        }
        None => idle.waking = false,
    }
}

/// Takes an idle worker whose time is up off the stack; false if a submitter took it first.
fn leave<T>(inner: &Inner<T>, slot: &Arc<Slot<T>>) -> bool {
    let mut idle = lock(&inner.idle);
    match idle.stack.iter().position(|s| Arc::ptr_eq(s, slot)) {
        Some(i) => {
            idle.stack.remove(i);
            idle.total -= 1;
            true
        }
        None if inner.closed.load(Ordering::Acquire) => {
            idle.total -= 1;
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests;
