//! The writer's queue: frames for stdout in the order they must be written, bounded in bytes.
//!
//! * Pushing never blocks (it happens under the dispatcher lock). Instead, threads that produce
//!   results and log messages call [`Outbox::wait_for_room`] after letting go of the lock: a
//!   worker waits while the queue holds `limit` bytes or more, so the queue exceeds its bound
//!   by at most one frame per worker, and the frames a worker holds are bounded by the output
//!   caps of its tool.
//! * Progress is coalesced: a progress frame for a call whose previous progress is still
//!   queued replaces that one in place, so when the writer is behind, only the latest progress
//!   per call is kept (values only increase, so the client still sees them increase).
//! * The writer sleeps on `park` while the queue is empty, and a sender unparks it only when it
//!   sleeps. (A blocking channel receive spins and yields before it sleeps; on a busy or single
//!   CPU the writer's yields were a third of the server's time per sequential call.)
//! * [`Outbox::close`] tells the writer to write what is queued and stop.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{self, Thread};

use stdmcp_proto::jsonrpc::{IdMap, RequestId};

use crate::cancel::CancelToken;

struct Item {
    bytes: Vec<u8>,
    /// The call this progress frame reports on, while it may still be replaced.
    progress_of: Option<RequestId>,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    /// Sequence number of `items[0]`.
    head: u64,
    bytes: usize,
    /// Calls with a progress frame in the queue, and its sequence number.
    progress: IdMap<u64>,
    closed: bool,
    /// stdout is gone: frames are dropped and nobody waits.
    broken: bool,
    writer_asleep: bool,
    /// Threads in `wait_for_room`.
    waiting: usize,
}

struct Inner {
    queue: Mutex<Queue>,
    room: Condvar,
    limit: usize,
    writer: OnceLock<Thread>,
    /// Bytes the writer has handed to stdout so far.
    written: AtomicU64,
    /// `Queue::bytes` as of the last change, read without the lock by the waits' fast path.
    queued: AtomicUsize,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        crate::sync::lock(&self.queue)
    }

    fn ring(&self) {
        if let Some(t) = self.writer.get() {
            t.unpark();
        }
    }
}

thread_local! {
    /// Set on threads that must never wait for room (reader, timer, main thread): a cancel
    /// hook they run may log, and must not stop them.
    static NEVER_WAIT: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as one that must never wait in [`Outbox::wait_for_room`].
pub(crate) fn never_wait_on_this_thread() {
    NEVER_WAIT.with(|c| c.set(true));
}

/// The sending side. Cloning shares the queue.
#[derive(Clone)]
pub(crate) struct Outbox(Arc<Inner>);

/// The writer's side.
pub(crate) struct Inbox(Arc<Inner>);

/// A connected pair; senders wait once `limit` bytes are queued.
pub(crate) fn outbox(limit: usize) -> (Outbox, Inbox) {
    let inner = Arc::new(Inner {
        queue: Mutex::new(Queue::default()),
        room: Condvar::new(),
        limit: limit.max(1),
        writer: OnceLock::new(),
        written: AtomicU64::new(0),
        queued: AtomicUsize::new(0),
    });
    (Outbox(inner.clone()), Inbox(inner))
}

impl Outbox {
    /// Queues a frame without waking the writer; true if it must be woken with
    /// [`Outbox::ring`] (which may happen later, outside a lock). Never blocks.
    pub(super) fn push(&self, bytes: Vec<u8>) -> bool {
        let mut q = self.0.lock();
        let ring = q.append(bytes, None);
        self.0.queued.store(q.bytes, Ordering::Relaxed);
        ring
    }

    /// Queues a progress frame of call `id`, replacing the call's progress frame that is
    /// still queued if there is one. Never blocks; returns as [`Outbox::push`].
    pub(super) fn push_progress(&self, id: &RequestId, bytes: Vec<u8>) -> bool {
        let mut q = self.0.lock();
        if let Some(&seq) = q.progress.get(id) {
            let i = usize::try_from(seq - q.head).unwrap_or(usize::MAX);
            if let Some(item) = q.items.get_mut(i) {
                let old = std::mem::replace(&mut item.bytes, bytes);
                let new_len = item.bytes.len();
                q.bytes = q.bytes - old.len() + new_len;
                self.0.queued.store(q.bytes, Ordering::Relaxed);
                return false;
            }
        }
        let ring = q.append(bytes, Some(id.clone()));
        self.0.queued.store(q.bytes, Ordering::Relaxed);
        ring
    }

    /// The call has ended: a later progress frame with its id (a new call reusing the id)
    /// must not replace one queued before the response.
    pub(super) fn end_progress(&self, id: &RequestId) {
        let mut q = self.0.lock();
        if !q.progress.is_empty() {
            if let Some(seq) = q.progress.remove(id) {
                if let Some(item) = usize::try_from(seq - q.head)
                    .ok()
                    .and_then(|i| q.items.get_mut(i))
                {
                    item.progress_of = None;
                }
            }
        }
    }

    /// Wakes the writer.
    pub(super) fn ring(&self) {
        self.0.ring();
    }

    /// Backpressure for the frame just pushed: blocks while the limit or more is queued (and
    /// stdout still works). Returns at once on threads marked with
    /// [`never_wait_on_this_thread`].
    pub(super) fn wait_for_room(&self) {
        if !NEVER_WAIT.with(Cell::get) {
            self.wait_for_room_always(1);
        }
    }

    /// As [`Outbox::wait_for_room`], but returns as soon as `token` is cancelled too (a
    /// cancelled call sends nothing more, and should end soon).
    pub(super) fn wait_for_room_unless(&self, token: &CancelToken) {
        if NEVER_WAIT.with(Cell::get) {
            return;
        }
        let limit = self.0.limit;
        if self.0.queued.load(Ordering::Relaxed) < limit {
            return;
        }
        let inner = self.0.clone();
        let _wake = token.on_cancel(move || {
            // Under the queue lock, so that a waiter between its check and its wait is
            // not missed.
            let _q = inner.lock();
            inner.room.notify_all();
        });
        let mut q = self.0.lock();
        q.waiting += 1;
        while q.bytes >= limit && !q.broken && !token.is_cancelled() {
            q = crate::sync::wait(&self.0.room, q);
        }
        q.waiting -= 1;
    }

    /// Blocks while `factor` times the limit or more is queued, on any thread.
    pub(super) fn wait_for_room_always(&self, factor: usize) {
        let limit = self.0.limit.saturating_mul(factor);
        if self.0.queued.load(Ordering::Relaxed) < limit {
            return; // the common case, without the lock
        }
        let mut q = self.0.lock();
        if q.bytes < limit || q.broken {
            return;
        }
        q.waiting += 1;
        while q.bytes >= limit && !q.broken {
            q = crate::sync::wait(&self.0.room, q);
        }
        q.waiting -= 1;
    }

    /// Tells the writer to write what is queued, then stop. Frames pushed later are dropped.
    pub(super) fn close(&self) {
        self.0.lock().closed = true;
        self.0.ring();
    }

    /// Bytes written to stdout so far (grows while the client reads).
    pub(super) fn written(&self) -> u64 {
        self.0.written.load(Ordering::Relaxed)
    }

    /// Bytes queued now.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.0.lock().bytes
    }
}

impl Queue {
    fn append(&mut self, bytes: Vec<u8>, progress_of: Option<RequestId>) -> bool {
        if self.broken || self.closed {
            return false;
        }
        if let Some(id) = &progress_of {
            let seq = self.head + self.items.len() as u64;
            self.progress.insert(id.clone(), seq);
        }
        self.bytes += bytes.len();
        self.items.push_back(Item { bytes, progress_of });
        std::mem::take(&mut self.writer_asleep)
    }
}

impl Inbox {
    /// Moves queued frames into `batch` until it holds about `max` bytes, sleeping while
    /// there are none; false once the queue is closed and empty. Writer thread only.
    pub(super) fn recv(&self, batch: &mut Vec<Vec<u8>>, max: usize) -> bool {
        let _ = self.0.writer.set(thread::current());
        let mut q = self.0.lock();
        while q.items.is_empty() {
            if q.closed {
                return false;
            }
            q.writer_asleep = true;
            drop(q);
            thread::park();
            q = self.0.lock();
        }
        q.writer_asleep = false;
        let mut taken = 0;
        while taken < max {
            let Some(item) = q.items.pop_front() else {
                break;
            };
            if let Some(id) = &item.progress_of {
                if q.progress.get(id) == Some(&q.head) {
                    q.progress.remove(id);
                }
            }
            q.head += 1;
            q.bytes -= item.bytes.len();
            taken += item.bytes.len();
            batch.push(item.bytes);
        }
        self.0.queued.store(q.bytes, Ordering::Relaxed);
        let wake = q.waiting > 0;
        drop(q);
        if wake {
            self.0.room.notify_all();
        }
        true
    }

    /// Counts bytes accepted by stdout.
    pub(super) fn wrote(&self, n: usize) {
        self.0.written.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// stdout is gone: drop what is queued and what comes later, and release every waiter.
    pub(super) fn broken(&self) {
        let mut q = self.0.lock();
        q.broken = true;
        q.items.clear();
        q.progress.clear();
        q.bytes = 0;
        self.0.queued.store(0, Ordering::Relaxed);
        drop(q);
        self.0.room.notify_all();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn drain(inbox: &Inbox) -> Vec<String> {
        let mut batch = Vec::new();
        inbox.recv(&mut batch, usize::MAX);
        batch
            .into_iter()
            .map(|b| String::from_utf8(b).unwrap())
            .collect()
    }

    #[test]
    fn no_message_is_lost_between_threads() {
        let (out, inbox) = outbox(1 << 20);
        let senders: Vec<_> = (0..4)
            .map(|t| {
                let out = out.clone();
                thread::spawn(move || {
                    for i in 0..10_000u32 {
                        if out.push(format!("{t}:{i}").into_bytes()) {
                            out.ring();
                        }
                        if i % 97 == 0 {
                            thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let closer = {
            let out = out.clone();
            thread::spawn(move || {
                senders.into_iter().for_each(|s| s.join().unwrap());
                out.close();
            })
        };
        // The reader runs on its own thread so that a lost message or a lost ring (the
        // reader asleep on a non-empty queue) fails at the deadline instead of hanging.
        let (done, finished) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let mut seen = [0u32; 4];
            let mut batch = Vec::new();
            while inbox.recv(&mut batch, 4096) {
                for m in batch.drain(..) {
                    let s = String::from_utf8(m).unwrap();
                    let (t, i) = s.split_once(':').unwrap();
                    let t: usize = t.parse().unwrap();
                    assert_eq!(i.parse::<u32>().unwrap(), seen[t], "order within a sender");
                    seen[t] += 1;
                }
            }
            let _ = done.send(seen);
        });
        let seen = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the reader saw every message and the close within 60 s");
        closer.join().unwrap();
        assert_eq!(seen, [10_000; 4]);
    }

    #[test]
    fn progress_is_coalesced_in_place_until_taken() {
        let (out, inbox) = outbox(1 << 20);
        let a = RequestId::number(1);
        let b = RequestId::number(2);
        out.push_progress(&a, b"a1".to_vec());
        out.push(b"log".to_vec());
        out.push_progress(&b, b"b1".to_vec());
        out.push_progress(&a, b"a2".to_vec());
        out.push_progress(&a, b"a333".to_vec());
        assert_eq!(out.queued(), 4 + 3 + 2);
        assert_eq!(drain(&inbox), ["a333", "log", "b1"]);
        // Taken by the writer: the next one is queued anew.
        out.push_progress(&a, b"a4".to_vec());
        out.end_progress(&a);
        out.push(b"result a".to_vec());
        out.push_progress(&a, b"reused id".to_vec());
        assert_eq!(drain(&inbox), ["a4", "result a", "reused id"]);
        assert_eq!(out.queued(), 0);
    }

    #[test]
    fn senders_wait_for_room_and_the_writer_releases_them() {
        let (out, inbox) = outbox(10);
        out.push(vec![b'x'; 8]);
        out.wait_for_room(); // below the limit: returns at once
        out.push(vec![b'y'; 8]);
        let waiter = {
            let out = out.clone();
            thread::spawn(move || {
                out.wait_for_room();
                out.push(b"after".to_vec());
            })
        };
        let mut batch = Vec::new();
        assert!(inbox.recv(&mut batch, 1));
        assert_eq!(batch.len(), 1, "one frame exceeds max 1 byte: taken alone");
        batch.clear();
        waiter.join().unwrap();
        let rest = drain(&inbox);
        assert_eq!(rest, ["yyyyyyyy", "after"]);
        out.close();
        assert!(!inbox.recv(&mut batch, 1));
    }

    #[test]
    fn a_cancel_releases_a_waiting_sender() {
        let (out, _inbox) = outbox(4);
        out.push(vec![0; 8]);
        let token = CancelToken::new();
        let waiter = {
            let (out, token) = (out.clone(), token.clone());
            thread::spawn(move || out.wait_for_room_unless(&token))
        };
        token.cancel(crate::cancel::CancelReason::Client);
        waiter.join().unwrap();
        out.wait_for_room_unless(&token); // already cancelled: returns at once
    }

    #[test]
    fn a_broken_stdout_releases_waiters_and_drops_frames() {
        let (out, inbox) = outbox(4);
        out.push(vec![0; 8]);
        let waiter = {
            let out = out.clone();
            thread::spawn(move || out.wait_for_room())
        };
        inbox.broken();
        waiter.join().unwrap();
        out.push(vec![0; 8]);
        assert_eq!(out.queued(), 0);
    }
}
