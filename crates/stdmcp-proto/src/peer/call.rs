//! The call table of the server role: one record per request whose work runs, waits to run,
//! or waits for the client, with its life as one [`CallState`], and admission by the slots of
//! `max_running`: the one waiting line of the server (a call's work starts only when all its
//! slots are free; the runtime has no queue of its own). A call waiting in line keeps the
//! start the runtime gets when it is admitted. A start the runtime could not carry out (no
//! thread could be started) comes back to the head of the line, and nothing more is admitted
//! until a running call ends. A sub-machine of the peer: it knows nothing of effects or of the
//! other parts.

use std::collections::VecDeque;
use std::time::Instant;

use serde_json::{Map, Value};

use super::work::Admitted;
use crate::jsonrpc::{IdMap, RequestId};
use crate::mcp::{ClientCapabilities, LogLevel, ProtocolVersion};

/// Where a call is in its life. Orthogonal to it is whether its work holds its slots
/// ([`Admission`]): a call may become a job, or be cancelled, while it waits in line.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum CallState {
    /// Its request is answered when its work ends; progress, heartbeats and logs flow.
    Live,
    /// 2026-07-28: answered with `input_required` (park id); the work waits for the retry
    /// that continues it (Multi Round-Trip Requests).
    Parked(i64),
    /// Answered with a job; the work goes on and its outcome goes into the job store.
    Job(String),
    /// Cancelled (by the client, shutdown, an expired park or `job_cancel`): nothing more is
    /// sent for it. It remembers the job it was (whose outcome still goes into the store, a
    /// cancelled job staying cancelled) and the park it waited in (released when it ends).
    Cancelled {
        /// The job it was.
        job: Option<String>,
        /// The park it was waiting in, if still parked.
        park: Option<i64>,
    },
}

/// Whether a call's work holds its slots of `max_running`, or waits in line for them.
#[derive(Debug)]
pub(super) enum Admission {
    /// Its work runs (or is being started), since then.
    Running { since: Instant },
    /// It waits in line, with the start the runtime gets when it is admitted.
    Queued {
        start: Admitted,
        /// Why the runtime could not start it the last time it was admitted (no thread could
        /// be started), if it could not.
        refused: Option<String>,
    },
}

/// One request whose work runs, waits to run, or waits for the client (server role).
#[derive(Debug)]
pub(super) struct Inflight {
    /// Where the call is in its life.
    pub state: CallState,
    /// Whether its work holds its slots.
    pub admission: Admission,
    pub version: ProtocolVersion,
    /// 2026-07-28 path: results carry `resultType` and server info.
    pub stateless: bool,
    /// The result carries caching hints in 2026-07-28 (`resources/read`, MCP 2026-07-28, Caching).
    pub cacheable: bool,
    pub progress_token: Option<Value>,
    /// Per-request log level (2026-07-28), or `None`.
    pub log_level: Option<LogLevel>,
    /// When the request arrived.
    pub started: Instant,
    pub last_report: Instant,
    pub last_progress: Option<f64>,
    pub last_total: Option<f64>,
    pub status: Option<String>,
    /// The server-side deadline, until it has fired.
    pub deadline: Option<Instant>,
    /// The id the result answers: the request's own, or that of the retry that continues it
    /// (2026-07-28, Multi Round-Trip Requests).
    pub wire_id: RequestId,
    /// 2026-07-28 `tools/call`, `prompts/get`, `resources/read`: what a `requestState` binds
    /// to (method and target); `None` where the work cannot ask the client.
    pub target: Option<String>,
    /// Client capabilities of the request (of the latest retry).
    pub caps: ClientCapabilities,
    /// `inputResponses` the request carried that the work has not taken yet.
    pub input: Map<String, Value>,
    /// Input requests asked without a key so far (for their automatic keys).
    pub asked: u32,
    /// `tools/call`: the tool's catalog index.
    pub tool: Option<usize>,
    /// When the call becomes a job if it is still running (README "Long runs").
    pub background_at: Option<Instant>,
    /// The latest output lines (statuses) of the work, for its job.
    pub recent: VecDeque<String>,
    /// Slots of `max_running` the call takes (admitted all at once).
    pub slots: usize,
}

impl Inflight {
    pub(super) fn new(
        now: Instant,
        id: RequestId,
        version: ProtocolVersion,
        stateless: bool,
    ) -> Inflight {
        Inflight {
            wire_id: id,
            target: None,
            caps: ClientCapabilities::default(),
            input: Map::new(),
            state: CallState::Live,
            asked: 0,
            tool: None,
            background_at: None,
            recent: VecDeque::new(),
            slots: 1,
            version,
            stateless,
            cacheable: false,
            progress_token: None,
            log_level: None,
            started: now,
            admission: Admission::Running { since: now },
            last_report: now,
            last_progress: None,
            last_total: None,
            status: None,
            deadline: None,
        }
    }

    /// The progress token, while progress may flow (a live call).
    pub(super) fn live_token(&self) -> Option<&Value> {
        self.progress_token.as_ref().filter(|_| self.is_live())
    }

    /// Whether the call's request is still to be answered by its work.
    pub(super) fn is_live(&self) -> bool {
        self.state == CallState::Live
    }

    pub(super) fn is_cancelled(&self) -> bool {
        matches!(self.state, CallState::Cancelled { .. })
    }

    /// The job the call is or was (if cancelled since).
    pub(super) fn job(&self) -> Option<&String> {
        match &self.state {
            CallState::Job(job) | CallState::Cancelled { job: Some(job), .. } => Some(job),
            _ => None,
        }
    }

    /// When its work started; `None` while it waits in line.
    pub(super) fn running_since(&self) -> Option<Instant> {
        match self.admission {
            Admission::Running { since } => Some(since),
            Admission::Queued { .. } => None,
        }
    }

    /// Why the runtime could not start its work when it was last admitted, if it waits in
    /// line for that reason.
    pub(super) fn refused(&self) -> Option<&str> {
        match &self.admission {
            Admission::Queued {
                refused: Some(why), ..
            } => Some(why),
            _ => None,
        }
    }

    /// Whether a background delay may still turn the call into a job.
    pub(super) fn may_background(&self) -> bool {
        matches!(self.state, CallState::Live | CallState::Job(_))
    }
}

/// The requests in flight and the line of those waiting for free slots.
#[derive(Debug, Default)]
pub(super) struct CallTable {
    calls: IdMap<Inflight>,
    /// Slots held by admitted calls.
    running: usize,
    /// Calls waiting for free slots, oldest first.
    waiting: VecDeque<RequestId>,
    /// A start came back (no thread could be started): nothing is admitted until a running
    /// call ends and frees a thread.
    blocked: bool,
}

/// What becomes of a start the runtime gave back ([`CallTable::refuse`]).
#[derive(Debug, PartialEq)]
pub(super) enum Refused {
    /// Back at the head of the line, until a running call ends.
    Waits,
    /// Nothing else runs that could free a thread: the call must be answered now, and so
    /// must these, refused before and waiting in line for the same reason.
    Answer(Vec<RequestId>),
    /// Not a call the table admitted (it ended meanwhile): nothing to do.
    Unknown,
}

impl CallTable {
    pub(super) fn get(&self, id: &RequestId) -> Option<&Inflight> {
        self.calls.get(id)
    }

    pub(super) fn get_mut(&mut self, id: &RequestId) -> Option<&mut Inflight> {
        self.calls.get_mut(id)
    }

    pub(super) fn contains_key(&self, id: &RequestId) -> bool {
        self.calls.contains_key(id)
    }

    /// Puts a record in the table (admission aside: see [`CallTable::admit`]).
    pub(super) fn insert(&mut self, id: RequestId, call: Inflight) {
        self.calls.insert(id, call);
    }

    /// Takes a record out of the table (its slots aside: see [`CallTable::release`]).
    pub(super) fn remove(&mut self, id: &RequestId) -> Option<Inflight> {
        self.calls.remove(id)
    }

    pub(super) fn len(&self) -> usize {
        self.calls.len()
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = &RequestId> {
        self.calls.keys()
    }

    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = (&RequestId, &Inflight)> {
        self.calls.iter()
    }

    /// Slots held by the calls admitted.
    pub(super) fn running(&self) -> usize {
        self.running
    }

    /// How many calls wait before call `id`, if it waits for free slots.
    pub(super) fn place_in_line(&self, id: &RequestId) -> Option<usize> {
        self.waiting.iter().position(|w| w == id)
    }

    /// Admits a new call: running if its slots are free (and nobody waits): its `start` comes
    /// back, to be carried out now; else it waits in line, keeping `start`.
    pub(super) fn admit(
        &mut self,
        call: &mut Inflight,
        start: Admitted,
        max: usize,
    ) -> Option<Admitted> {
        let slots = call.slots.clamp(1, max);
        if self.waiting.is_empty() && !self.blocked && self.running.saturating_add(slots) <= max {
            self.running += slots;
            Some(start)
        } else {
            self.waiting.push_back(start.id.clone());
            call.admission = Admission::Queued {
                start,
                refused: None,
            };
            None
        }
    }

    /// A call left: its slots (`None`: its place in line) are free. Returns the starts of
    /// the calls admitted in its place ([`CallTable::admit_waiting`]).
    pub(super) fn release(
        &mut self,
        now: Instant,
        id: &RequestId,
        slots: Option<usize>,
        max: usize,
    ) -> Vec<Admitted> {
        match slots {
            Some(slots) => {
                self.running = self.running.saturating_sub(slots.clamp(1, max));
                // A running call ended: its thread is free.
                self.blocked = false;
            }
            None => self.waiting.retain(|w| w != id),
        }
        self.admit_waiting(now, max)
    }

    /// The oldest waiting calls take the free slots, at `now`, while all the slots of each
    /// are free (none while blocked); returns their starts.
    fn admit_waiting(&mut self, now: Instant, max: usize) -> Vec<Admitted> {
        let mut starts = Vec::new();
        while let Some(next) = self.waiting.front().filter(|_| !self.blocked) {
            let need = self.calls.get(next).map_or(0, |c| c.slots.clamp(1, max));
            if self.running.saturating_add(need) > max {
                break;
            }
            if let Some(call) = self
                .waiting
                .pop_front()
                .and_then(|n| self.calls.get_mut(&n))
            {
                let running = Admission::Running { since: now };
                if let Admission::Queued { start, .. } =
                    std::mem::replace(&mut call.admission, running)
                {
                    starts.push(start);
                }
                self.running += need;
            }
        }
        starts
    }

    /// The runtime gave back the start of admitted call `id`: its slots are free again and it
    /// goes back to the head of the line, keeping `start`, and nothing more is admitted until
    /// a running call ends. When nothing else runs, no call will end to free a thread: the
    /// call must be answered now, with every other call refused before and still in line.
    pub(super) fn refuse(&mut self, start: Admitted, why: &str, max: usize) -> Refused {
        let id = start.id.clone();
        let Some(call) = self
            .calls
            .get_mut(&id)
            .filter(|c| c.running_since().is_some())
        else {
            return Refused::Unknown;
        };
        self.running = self.running.saturating_sub(call.slots.clamp(1, max));
        call.admission = Admission::Queued {
            start,
            refused: Some(why.to_owned()),
        };
        if self.running > 0 {
            self.waiting.push_front(id);
            self.blocked = true;
            return Refused::Waits;
        }
        self.blocked = false;
        let calls = &self.calls;
        let (refused, rest) = self
            .waiting
            .drain(..)
            .partition(|w| calls.get(w).is_some_and(|c| c.refused().is_some()));
        self.waiting = rest;
        let mut answer: Vec<RequestId> = refused.into();
        answer.insert(0, id);
        Refused::Answer(answer)
    }

    /// Takes call `id`, which waits in line, out of the table and the line (it was cancelled:
    /// it never runs). Those behind it are admitted when a running call ends.
    pub(super) fn withdraw(&mut self, id: &RequestId) -> Option<Inflight> {
        self.waiting.retain(|w| w != id);
        self.calls.remove(id)
    }

    /// Admits what fits after calls were answered without running (see [`CallTable::refuse`]).
    pub(super) fn admit_now(&mut self, now: Instant, max: usize) -> Vec<Admitted> {
        self.admit_waiting(now, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_of_several_slots_waits_until_all_are_free_and_later_calls_wait_behind_it() {
        let t0 = Instant::now();
        let id = RequestId::number;
        let v = ProtocolVersion::V2025_11_25;
        let mut table = CallTable::default();
        let add = |table: &mut CallTable, n: i64, slots: usize| {
            let mut call = Inflight::new(t0, id(n), v, false);
            call.slots = slots;
            let start = Admitted {
                id: id(n),
                work: super::super::Work::ReadResource { uri: "x:".into() },
                version: v,
                wants_progress: false,
                client_capabilities: ClientCapabilities::default(),
                deadline: None,
                slots,
            };
            let started = table.admit(&mut call, start, 2);
            assert_eq!(started.is_some(), n == 1, "call {n}");
            table.insert(id(n), call);
        };
        add(&mut table, 1, 1);
        add(&mut table, 2, 2);
        add(&mut table, 3, 1);
        assert_eq!(table.running(), 1);
        assert_eq!(table.place_in_line(&id(2)), Some(0));
        assert_eq!(table.place_in_line(&id(3)), Some(1), "behind the portfolio");
        let t1 = t0 + std::time::Duration::from_secs(1);
        table.remove(&id(1));
        table.release(t1, &id(1), Some(1), 2);
        assert_eq!(table.running(), 2);
        assert_eq!(
            table.get(&id(2)).and_then(Inflight::running_since),
            Some(t1)
        );
        assert_eq!(table.get(&id(3)).and_then(Inflight::running_since), None);
        assert_eq!(table.place_in_line(&id(3)), Some(0));
    }
}
