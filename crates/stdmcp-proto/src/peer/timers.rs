//! The peer's one timer table, in the style of quinn-proto's `TimerTable`: every timer is an
//! entry keyed by its kind and what it is about, ordered by when it is due, so that the next
//! timeout is the table's first entry (no scan over calls).

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use crate::jsonrpc::{IdMap, RequestId};

/// What a timer does when it fires. [`super::Peer::handle_timeout`] fires the due timers one
/// kind after another, in this order.
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

/// The table: at most one timer per kind and subject. Call timers are found by the call's id
/// and jobs' by the job id without building a key (no allocation but a new timer's own).
#[derive(Debug, Default)]
pub(super) struct Timers {
    /// Every timer, in the order it is due.
    order: BTreeMap<Place, (Kind, Subject)>,
    /// The timers of each call that has one, by kind.
    calls: IdMap<[Option<Place>; CALL_KINDS]>,
    parks: HashMap<i64, Place>,
    jobs: HashMap<String, Place>,
    seq: u64,
}

/// The kinds a call has timers of (those before `ParkExpiry`'s index are not all call kinds,
/// so the slots are indexed by [`call_slot`]).
const CALL_KINDS: usize = 4;

fn call_slot(kind: Kind) -> usize {
    match kind {
        Kind::Deadline => 0,
        Kind::Background => 1,
        Kind::WaitEnd => 2,
        Kind::Heartbeat => 3,
        Kind::ParkExpiry | Kind::JobRetention => {
            debug_assert!(false, "{kind:?} is not a call timer");
            0
        }
    }
}

impl Timers {
    /// Sets, moves or (for `None`) stops one timer in `slot`, keeping the order in line.
    fn reset(
        order: &mut BTreeMap<Place, (Kind, Subject)>,
        seq: &mut u64,
        slot: &mut Option<Place>,
        key: impl FnOnce() -> (Kind, Subject),
        when: Option<Instant>,
    ) {
        if slot.map(|p| p.0) == when {
            return;
        }
        let old = slot.take().and_then(|p| order.remove(&p));
        if let Some(when) = when {
            *seq += 1;
            let place = (when, *seq);
            order.insert(place, old.unwrap_or_else(key));
            *slot = Some(place);
        }
    }

    /// Sets the timer of `kind` of call `id` to `when` (`None`: stops it).
    pub(super) fn set_call(&mut self, kind: Kind, id: &RequestId, when: Option<Instant>) {
        let i = call_slot(kind);
        let slots = match self.calls.get_mut(id) {
            Some(slots) => slots,
            None if when.is_none() => return,
            None => self.calls.entry(id.clone()).or_default(),
        };
        let key = || (kind, Subject::Call(id.clone()));
        Timers::reset(&mut self.order, &mut self.seq, &mut slots[i], key, when);
        if slots.iter().all(Option::is_none) {
            self.calls.remove(id);
        }
    }

    /// Stops every timer of call `id` (it left the call table).
    pub(super) fn stop_call(&mut self, id: &RequestId) {
        for place in self.calls.remove(id).into_iter().flatten().flatten() {
            self.order.remove(&place);
        }
    }

    /// Sets the expiry of parked call `park` (`None`: stops it).
    pub(super) fn set_park(&mut self, park: i64, when: Option<Instant>) {
        let mut slot = self.parks.remove(&park);
        let key = || (Kind::ParkExpiry, Subject::Park(park));
        Timers::reset(&mut self.order, &mut self.seq, &mut slot, key, when);
        if let Some(place) = slot {
            self.parks.insert(park, place);
        }
    }

    /// Sets the end of job `job`'s retention (`None`: stops it).
    pub(super) fn set_job(&mut self, job: &str, when: Option<Instant>) {
        let mut slot = self.jobs.get(job).copied();
        let key = || (Kind::JobRetention, Subject::Job(job.to_owned()));
        Timers::reset(&mut self.order, &mut self.seq, &mut slot, key, when);
        match slot {
            Some(place) => {
                self.jobs.insert(job.to_owned(), place);
            }
            None => {
                self.jobs.remove(job);
            }
        }
    }

    /// When the next timer is due: the table's first entry.
    pub(super) fn next(&self) -> Option<Instant> {
        self.order.keys().next().map(|(when, _)| *when)
    }

    /// Takes the timers of `kind` due at `now` out of the table, earliest first.
    pub(super) fn take_due(&mut self, kind: Kind, now: Instant) -> Vec<Subject> {
        let due: Vec<Place> = self
            .order
            .range(..=(now, u64::MAX))
            .filter(|(_, key)| key.0 == kind)
            .map(|(place, _)| *place)
            .collect();
        let mut subjects = Vec::with_capacity(due.len());
        for place in due {
            let Some((kind, subject)) = self.order.remove(&place) else {
                continue;
            };
            match &subject {
                Subject::Call(id) => {
                    if let Some(slots) = self.calls.get_mut(id) {
                        slots[call_slot(kind)] = None;
                        if slots.iter().all(Option::is_none) {
                            self.calls.remove(id);
                        }
                    }
                }
                Subject::Park(park) => {
                    self.parks.remove(park);
                }
                Subject::Job(job) => {
                    self.jobs.remove(job);
                }
            }
            subjects.push(subject);
        }
        subjects
    }

    /// Every timer set, for tests that check the table against the records it indexes.
    #[cfg(test)]
    pub(super) fn entries(&self) -> HashMap<(Kind, Subject), Instant> {
        self.order.iter().map(|(p, k)| (k.clone(), p.0)).collect()
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
        assert!(t.calls.is_empty() && t.parks.is_empty() && t.jobs.is_empty());
    }
}
