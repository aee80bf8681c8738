//! The peer's one timer table, in the style of quinn-proto's `TimerTable`: every timer is an
//! entry keyed by its kind and what it is about, found by when it is due, so that the next
//! timeout is the earliest entry (no scan over calls).
//!
//! The order is a min-heap per kind, not one ordered map: the due timers fire a kind at a time
//! anyway, and a heap is a fraction of a B-tree's code (the heaps made the `everything`
//! binary 10 KB smaller than a B-tree of the entries did; one index for the three kinds of
//! subject, not three, 7 KB). A timer moved or stopped is not looked for in its heap: its
//! entry goes stale (the index no longer points at it) and is dropped when it reaches the
//! top, or when stale entries outnumber live ones.

use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

use crate::jsonrpc::{IdHashing, RequestId};

/// What a timer does when it fires. [`super::Peer::handle_timeout`] fires the due timers one
/// kind after another, in this order (which is also the kinds' index in the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Kind {
    /// A call's server-side deadline.
    Deadline,
    /// A parked 2026-07-28 call's wait for the client's retry.
    ParkExpiry,
    /// An ended job's retention.
    JobRetention,
    /// A call's background delay, after which it becomes a job.
    Background,
    /// The end of a `job_wait`.
    WaitEnd,
    /// A call's next heartbeat progress.
    Heartbeat,
}

impl Kind {
    /// Every kind, in firing order.
    pub(super) const ALL: [Kind; 6] = [
        Kind::Deadline,
        Kind::ParkExpiry,
        Kind::JobRetention,
        Kind::Background,
        Kind::WaitEnd,
        Kind::Heartbeat,
    ];
}

/// What a timer is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Subject {
    /// A call, by its own request id.
    Call(RequestId),
    /// A parked call, by its park id.
    Park(i64),
    /// A job, by its id.
    Job(String),
}

/// Where a timer stands in the order: its due time, and a sequence number that keeps timers
/// due at the same instant in the order they were set.
type Place = (Instant, u64);

/// An entry of a kind's heap; live while the index still points at its place.
#[derive(Debug)]
struct Entry {
    place: Place,
    subject: Subject,
}

// Ordered by place alone, reversed: std's heap is a max-heap, its top the earliest.
impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> Ordering {
        other.place.cmp(&self.place)
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.place == other.place
    }
}

impl Eq for Entry {}

/// The timers of one kind, earliest on top, and how many of its entries are live.
#[derive(Debug, Default)]
struct Queue {
    heap: BinaryHeap<Entry>,
    live: usize,
}

/// The table: at most one timer per kind and subject.
#[derive(Debug, Default)]
pub(super) struct Timers {
    /// Each kind's timers, by [`Kind`] (firing order). The top of each heap is live.
    queues: [Queue; Kind::ALL.len()],
    /// Where each subject's timers stand, by [`slot`]: a call has up to four, a parked call
    /// and a job one. (One map for the three subjects: each map type is its own copy of the
    /// hash table's code.)
    index: HashMap<Subject, [Option<Place>; SLOTS], IdHashing>,
    seq: u64,
}

/// Timers a subject can have at once (a call's four kinds).
const SLOTS: usize = 4;

/// A call's kinds, by slot.
const CALL_KINDS: [Kind; SLOTS] = [
    Kind::Deadline,
    Kind::Background,
    Kind::WaitEnd,
    Kind::Heartbeat,
];

/// Where a timer of `kind` stands among its subject's: a call's four kinds each have their
/// own slot; a parked call's expiry and a job's retention are their subject's only timer.
fn slot(kind: Kind) -> usize {
    match kind {
        Kind::Deadline | Kind::ParkExpiry | Kind::JobRetention => 0,
        Kind::Background => 1,
        Kind::WaitEnd => 2,
        Kind::Heartbeat => 3,
    }
}

/// Whether `entry` of `kind` is still its subject's timer.
fn is_live(
    index: &HashMap<Subject, [Option<Place>; SLOTS], IdHashing>,
    kind: Kind,
    entry: &Entry,
) -> bool {
    index
        .get(&entry.subject)
        .is_some_and(|slots| slots[slot(kind)] == Some(entry.place))
}

impl Timers {
    /// Sets, moves or (for `None`) stops the timer of `kind` about `subject`.
    fn set(&mut self, kind: Kind, subject: Subject, when: Option<Instant>) {
        let slots = match self.index.get_mut(&subject) {
            Some(slots) => slots,
            None if when.is_none() => return,
            None => self.index.entry(subject.clone()).or_default(),
        };
        let slot = &mut slots[slot(kind)];
        if slot.map(|p| p.0) == when {
            return;
        }
        let queue = &mut self.queues[kind as usize];
        if slot.take().is_some() {
            queue.live -= 1;
        }
        match when {
            Some(when) => {
                self.seq += 1;
                let place = (when, self.seq);
                *slot = Some(place);
                queue.heap.push(Entry { place, subject });
                queue.live += 1;
            }
            None if slots.iter().all(Option::is_none) => {
                self.index.remove(&subject);
            }
            None => {}
        }
        self.tidy(kind);
    }

    /// Drops the stale entries on top of `kind`'s heap, and every stale one when they
    /// outnumber the live ones (so the heap stays within twice the live timers).
    fn tidy(&mut self, kind: Kind) {
        let index = &self.index;
        let queue = &mut self.queues[kind as usize];
        if queue.heap.len() > 2 * queue.live + 32 {
            queue.heap.retain(|e| is_live(index, kind, e));
        }
        while queue.heap.peek().is_some_and(|e| !is_live(index, kind, e)) {
            queue.heap.pop();
        }
    }

    /// Sets the timer of `kind` of call `id` to `when` (`None`: stops it).
    pub(super) fn set_call(&mut self, kind: Kind, id: &RequestId, when: Option<Instant>) {
        debug_assert!(CALL_KINDS.contains(&kind), "{kind:?} is not a call's timer");
        self.set(kind, Subject::Call(id.clone()), when);
    }

    /// Stops every timer of call `id` (it left the call table).
    pub(super) fn stop_call(&mut self, id: &RequestId) {
        let Some(slots) = self.index.remove(&Subject::Call(id.clone())) else {
            return;
        };
        for (kind, place) in CALL_KINDS.into_iter().zip(slots) {
            if place.is_some() {
                self.queues[kind as usize].live -= 1;
                self.tidy(kind);
            }
        }
    }

    /// Sets the expiry of parked call `park` (`None`: stops it).
    pub(super) fn set_park(&mut self, park: i64, when: Option<Instant>) {
        self.set(Kind::ParkExpiry, Subject::Park(park), when);
    }

    /// Sets the end of job `job`'s retention (`None`: stops it).
    pub(super) fn set_job(&mut self, job: &str, when: Option<Instant>) {
        self.set(Kind::JobRetention, Subject::Job(job.to_owned()), when);
    }

    /// When the next timer is due: the earliest top of the kinds' heaps (each top is live).
    pub(super) fn next(&self) -> Option<Instant> {
        self.queues
            .iter()
            .filter_map(|q| q.heap.peek().map(|e| e.place.0))
            .min()
    }

    /// Takes the timers of `kind` due at `now` out of the table, earliest first.
    pub(super) fn take_due(&mut self, kind: Kind, now: Instant) -> Vec<Subject> {
        let mut subjects = Vec::new();
        loop {
            let queue = &mut self.queues[kind as usize];
            let top = queue.heap.peek_mut().filter(|e| e.place.0 <= now);
            let Some(entry) = top.map(PeekMut::pop) else {
                break;
            };
            let Some(slots) = self.index.get_mut(&entry.subject) else {
                continue;
            };
            if slots[slot(kind)] != Some(entry.place) {
                continue;
            }
            slots[slot(kind)] = None;
            queue.live -= 1;
            if slots.iter().all(Option::is_none) {
                self.index.remove(&entry.subject);
            }
            subjects.push(entry.subject);
        }
        self.tidy(kind);
        subjects
    }

    /// Every timer set, for tests that check the table against the records it indexes.
    #[cfg(test)]
    pub(super) fn entries(&self) -> HashMap<(Kind, Subject), Instant> {
        let mut all = HashMap::new();
        for kind in Kind::ALL {
            for e in self.queues[kind as usize].heap.iter() {
                if is_live(&self.index, kind, e) {
                    all.insert((kind, e.subject.clone()), e.place.0);
                }
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_first_entry_is_the_next_timeout_and_due_timers_come_out_by_kind() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let id = RequestId::number;
        let call = |n| Subject::Call(RequestId::number(n));
        let mut t = Timers::default();
        assert_eq!(t.next(), None);
        t.set_call(Kind::Heartbeat, &id(1), Some(t0 + s(5)));
        t.set_call(Kind::Deadline, &id(1), Some(t0 + s(9)));
        t.set_call(Kind::Heartbeat, &id(2), Some(t0 + s(3)));
        t.set_park(7, Some(t0 + s(4)));
        t.set_job("job-1", Some(t0 + s(11)));
        assert_eq!(t.next(), Some(t0 + s(3)));
        // Moving a timer moves it in the order; setting the same time is a no-op.
        t.set_call(Kind::Heartbeat, &id(2), Some(t0 + s(7)));
        t.set_call(Kind::Heartbeat, &id(2), Some(t0 + s(7)));
        assert_eq!(t.next(), Some(t0 + s(4)));
        assert_eq!(t.take_due(Kind::Deadline, t0 + s(8)), vec![]);
        assert_eq!(
            t.take_due(Kind::ParkExpiry, t0 + s(8)),
            vec![Subject::Park(7)]
        );
        assert_eq!(
            t.take_due(Kind::Heartbeat, t0 + s(8)),
            vec![call(1), call(2)]
        );
        assert_eq!(t.next(), Some(t0 + s(9)));
        t.stop_call(&id(1));
        assert_eq!(t.next(), Some(t0 + s(11)));
        t.set_job("job-1", None);
        assert_eq!(t.next(), None);
        assert!(t.entries().is_empty());
        assert!(t.index.is_empty());
    }

    #[test]
    fn moved_and_stopped_timers_never_fire_and_their_entries_do_not_pile_up() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let id = RequestId::number;
        let call = |n| Subject::Call(RequestId::number(n));
        let mut t = Timers::default();
        // Call 0's deadline and heartbeat stay the earliest of their kinds; 10,000 short
        // calls set a later deadline and end, and the heartbeat of a long call, -1, is pushed
        // back each time: their old entries go stale under call 0's.
        t.set_call(Kind::Deadline, &id(0), Some(t0 + ms(1)));
        t.set_call(Kind::Heartbeat, &id(0), Some(t0 + ms(2)));
        for n in 1..=10_000 {
            t.set_call(Kind::Deadline, &id(n), Some(t0 + ms(1_000 + n as u64)));
            t.stop_call(&id(n));
            t.set_call(Kind::Heartbeat, &id(-1), Some(t0 + ms(5_000 + n as u64)));
        }
        for q in &t.queues {
            let (len, live) = (q.heap.len(), q.live);
            assert!(len <= 2 * live + 33, "{len} entries, {live} live");
        }
        // Only live timers fire, each once.
        assert_eq!(t.next(), Some(t0 + ms(1)));
        let late = t0 + ms(30_000);
        assert_eq!(t.take_due(Kind::Deadline, late), vec![call(0)]);
        assert_eq!(t.next(), Some(t0 + ms(2)));
        // Call -1's old places are due before its last one, and must not fire it early.
        let before = t0 + ms(14_999);
        assert_eq!(t.take_due(Kind::Heartbeat, before), vec![call(0)]);
        assert_eq!(t.next(), Some(t0 + ms(15_000)));
        assert_eq!(t.take_due(Kind::Heartbeat, late), vec![call(-1)]);
        assert_eq!(t.next(), None);
        assert!(t.index.is_empty());
    }
}
