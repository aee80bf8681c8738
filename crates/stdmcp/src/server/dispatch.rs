//! The dispatcher: the peer behind one lock, and the code that carries out its effects; and
//! the timer thread's loop, which the dispatcher starts when a deadline or a heartbeat first
//! needs it.
//!
//! Whichever thread has something for the peer (the reader with frames, a worker with a
//! result or progress, the timer with a heartbeat) takes the lock, hands it over, and carries
//! out the effects before letting go. Bytes for stdout go to the writer's queue in the
//! order the peer produced them, so a call's progress always precedes its response.
//!
//! What may block or run foreign code happens after the lock is released ([`Shared::release`]):
//! waking the writer and workers, and firing cancel tokens, whose hooks may report progress
//! or log and so take the lock themselves. Workers wait for room in the writer's queue after
//! that too, never under the lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use stdmcp_proto::framing::{Frame, FrameError};
use stdmcp_proto::jsonrpc::{self, ErrorObject, IdMap, RequestId};
use stdmcp_proto::peer::{self, Effect, Peer, Reply};

use super::bell::Bell;
use super::diagnostics::log_diagnostics;
use super::options::Options;
use super::outbox::{self, Outbox};
use super::pool::Pool;
use super::status::StatusSlots;
use crate::cancel::{CancelReason, CancelToken};
use crate::mailbox::Mailbox;

/// What the main thread waits for.
#[derive(Debug)]
pub(super) enum Lifecycle {
    InputClosed,
    OutputClosed,
    Signal(i32),
    /// The last call in flight ended while draining.
    Idle,
}

pub(super) struct State {
    pub peer: Peer,
    pub tokens: IdMap<CancelToken>,
    /// Server→client requests waiting for the client's answer.
    pub waiters: IdMap<Arc<Mailbox<Result<Value, ErrorObject>>>>,
    pub draining: bool,
    pub stopped: bool,
    /// Work to hand to the pool once the lock is released (waking a worker is a syscall).
    /// Each with why it must be answered with an error instead of run, if it must.
    submitted: Vec<(Admitted, Option<String>)>,
    /// The writer must be woken once the lock is released.
    ring_writer: bool,
    /// Cancel tokens to fire once the lock is released (their hooks may take the lock).
    fire: Vec<(CancelToken, CancelReason)>,
}

/// What a worker thread runs: a call the peer admitted ([`peer::Admitted`]), with its cancel
/// token and the dispatcher it reports to. The worker makes the handler's context of it
/// (`worker.rs`).
pub(super) struct Admitted {
    /// The dispatcher the call reports its end to.
    pub(super) shared: Arc<Shared>,
    /// The call's cancel token, registered in [`State::tokens`].
    pub(super) cancel: CancelToken,
    /// The call as the peer admitted it: its start, to give back if no thread can run it.
    pub(super) call: peer::Admitted,
}

/// How long the timer sleeps when nothing is due. Not until woken: a call that starts then
/// would have to wake it (`Bell::ring_by` skips the ring only for a deadline after the
/// timer's own wake-up), and under contention the timer, woken at a call's start, often runs
/// only after the call ended, finds nothing due, and sleeps until woken again: one more
/// thread woken per call (docs/bench.md, sessions under contention).
const IDLE_WAKE: Duration = Duration::from_secs(5);

pub(super) struct Shared {
    state: Mutex<State>,
    pub out: Outbox,
    pub events: Arc<Mailbox<Lifecycle>>,
    /// Wakes the timer thread ([`Shared::run_timer`]).
    pub(super) timer: Bell,
    /// Whether the timer thread runs: the first wake starts it, so that a connection without
    /// deadlines, heartbeats or parked calls never does (cold start, docs/bench.md).
    timer_started: AtomicBool,
    pub pool: Pool<Admitted>,
    /// What a worker thread does with an admitted call: runs its handler and reports its end
    /// (`worker.rs`, with the server's handlers, given by the runtime).
    work: Box<dyn Fn(Admitted) -> Option<Admitted> + Send + Sync>,
    /// The peer's catalog, for what needs it outside the lock (argument validation).
    catalog: Arc<peer::Catalog>,
    /// The latest status line of each call, for the peer
    /// ([`Ctx::set_status`](super::Ctx::set_status)).
    status: StatusSlots,
}

impl Shared {
    pub(super) fn new(
        peer: Peer,
        out: Outbox,
        events: Arc<Mailbox<Lifecycle>>,
        work: impl Fn(Admitted) -> Option<Admitted> + Send + Sync + 'static,
        options: &Options,
    ) -> Shared {
        let pool = Pool::new(run, options.worker_keep_alive, options.worker_stack);
        Shared {
            catalog: peer.catalog().clone(),
            status: Default::default(),
            state: Mutex::new(State {
                peer,
                tokens: IdMap::default(),
                waiters: IdMap::default(),
                draining: false,
                stopped: false,
                submitted: Vec::new(),
                ring_writer: false,
                fire: Vec::new(),
            }),
            out,
            events,
            timer: Bell::default(),
            timer_started: AtomicBool::new(false),
            pool,
            work: Box::new(work),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Runs `f` on the state, then carries out the peer's effects.
    pub(super) fn with_state<R>(self: &Arc<Self>, f: impl FnOnce(&mut State) -> R) -> R {
        let mut st = self.lock();
        self.status.hand_to(&mut st.peer);
        let r = f(&mut st);
        self.apply(&mut st);
        self.release(st, false);
        r
    }

    /// Keeps `line` as call `id`'s status: the message of its next heartbeat and its job's
    /// latest line. Takes only the slots' lock, not the state's.
    pub(super) fn set_status(&self, id: &RequestId, line: String) {
        self.status.set(id, line);
    }

    /// Lets go of the lock, then does what needs no lock: wakes the writer, hands new work
    /// to the pool (both may be syscalls; the bytes were queued in order under the lock) and
    /// fires cancel tokens, whose hooks thus run on this thread without the lock. A start no
    /// thread could be started for goes back to the peer, unless `keep` (a worker whose call
    /// just ended, about to be free): the first such is returned, for this thread to run.
    fn release(self: &Arc<Self>, mut st: MutexGuard<'_, State>, keep: bool) -> Option<Admitted> {
        let submitted = std::mem::take(&mut st.submitted);
        let ring = std::mem::take(&mut st.ring_writer);
        let fire = std::mem::take(&mut st.fire);
        drop(st);
        if ring {
            self.out.ring();
        }
        let mut kept = None;
        for (call, refusal) in submitted {
            if let Some(why) = refusal {
                self.refuse(&call.call.id, call.call.wants_progress, &why);
                continue;
            }
            match self.pool.submit(call) {
                Ok(()) => {}
                Err((a, _)) if keep && kept.is_none() => kept = Some(a),
                Err((a, e)) => self.start_refused(a, &e),
            }
        }
        for (token, reason) in fire {
            token.cancel(reason);
        }
        kept
    }

    /// Gives a start no thread could be started for back to the peer, which puts it back in
    /// line (until a running call ends) or answers it (when none runs).
    fn start_refused(self: &Arc<Self>, a: Admitted, e: &std::io::Error) {
        log::warn!(
            "cannot start a worker thread for request {} ({e})",
            a.call.id
        );
        let (id, wants_progress) = (a.call.id.clone(), a.call.wants_progress);
        let mut st = self.lock();
        st.tokens.remove(&id);
        st.peer
            .start_refused(Instant::now(), a.call, &e.to_string());
        self.apply(&mut st);
        if wants_progress {
            self.out.end_progress(&id);
        }
        self.release(st, false);
    }

    /// Runs `f` on the peer, then carries out its effects.
    pub(super) fn with_peer<R>(self: &Arc<Self>, f: impl FnOnce(&mut Peer) -> R) -> R {
        self.with_state(|st| f(&mut st.peer))
    }

    fn apply(self: &Arc<Self>, st: &mut State) {
        while let Some(effect) = st.peer.poll_effect() {
            match effect {
                Effect::Send(bytes) => {
                    if log::log_enabled!(log::Level::Trace) {
                        log::trace!("> {}", String::from_utf8_lossy(&bytes).trim_end());
                    }
                    st.ring_writer |= self.out.push(bytes);
                }
                Effect::Progress { id, bytes } => {
                    if log::log_enabled!(log::Level::Trace) {
                        log::trace!("> {}", String::from_utf8_lossy(&bytes).trim_end());
                    }
                    st.ring_writer |= self.out.push_progress(&id, bytes);
                }
                Effect::Start(call) => self.start(st, call),
                Effect::Cancel(id) => {
                    let reason = if st.draining {
                        CancelReason::Shutdown
                    } else {
                        CancelReason::Client
                    };
                    if let Some(token) = st.tokens.get(&id) {
                        st.fire.push((token.clone(), reason));
                    }
                }
                Effect::Deadline(id) => {
                    if let Some(token) = st.tokens.get(&id) {
                        log::info!("request {id} reached its deadline");
                        st.fire.push((token.clone(), CancelReason::Deadline));
                    }
                }
                // Answered by the peer, and never started: a call waiting in line has no work
                // and no token (its start is emitted only when it is admitted, and a start
                // given back loses its token), so there is nothing to stop.
                Effect::Unstarted(_) => {}
                Effect::Response(r) => match st.waiters.remove(&r.id) {
                    Some(answer) => {
                        answer.send(r.result);
                    }
                    None => log::debug!("response {} has no waiter", r.id),
                },
                Effect::Notification(n) => log::debug!("notification {} ignored", n.method),
                Effect::Request(r) => log::debug!("request {} ignored", r.method),
            }
        }
        log_diagnostics(&mut st.peer);
    }

    /// Wakes the timer thread so that it recomputes its next deadline; the first wake
    /// starts it.
    pub(super) fn wake_timer(self: &Arc<Self>) {
        self.wake_timer_by(None);
    }

    /// Wakes the timer thread unless it wakes by `at` anyway (`None`: wakes it). False when
    /// the timer is not running: it could not be started (out of threads), and the next
    /// wake tries again.
    fn wake_timer_by(self: &Arc<Self>, at: Option<Instant>) -> bool {
        if !self.timer_started.swap(true, Ordering::SeqCst) {
            let shared = Arc::clone(self);
            let started = std::thread::Builder::new()
                .name("stdmcp-timer".into())
                .spawn(move || shared.run_timer());
            if let Err(e) = started {
                // Without it no deadline fires and no heartbeat is sent.
                log::error!(
                    "cannot start thread stdmcp-timer ({e}); trying again at the next call"
                );
                self.timer_started.store(false, Ordering::SeqCst);
                return false;
            }
        }
        match at {
            Some(at) => self.timer.ring_by(at),
            None => self.timer.ring(),
        }
        true
    }

    /// Prepares an admitted call's work for the pool, which gets it once the lock is let go.
    fn start(self: &Arc<Self>, st: &mut State, call: peer::Admitted) {
        let token = CancelToken::new();
        st.tokens.insert(call.id.clone(), token.clone());
        let deadline = call.deadline;
        let mut refusal = None;
        // The peer's next timeout includes this call's deadline or first heartbeat.
        if (deadline.is_some() || call.wants_progress)
            && !self.wake_timer_by(st.peer.poll_timeout())
        {
            if deadline.is_some() {
                // Its deadline could not be kept: not run at all rather than run unbounded.
                refusal = Some("the timer that enforces its deadline could not be started".into());
            } else {
                log::warn!("request {}: no heartbeats (no timer thread)", call.id);
            }
        }
        // Submitted by `release` after the lock is let go; the token is registered already,
        // so a cancel that arrives first is seen when the work starts.
        st.submitted.push((
            Admitted {
                shared: self.clone(),
                cancel: token,
                call,
            },
            refusal,
        ));
    }

    /// Answers a call that could not be started with an error saying why (the server is out
    /// of threads: `ulimit -u`, a container's pid limit), so that no request goes unanswered.
    /// It runs on the thread that submitted the call, which must not wait for the writer.
    fn refuse(self: &Arc<Self>, id: &RequestId, wants_progress: bool, why: &str) {
        log::error!("request {id} not run: {why}");
        let error = peer::refusal(why);
        self.settle(id, Reply::Error(error), wants_progress, false);
    }

    /// Hands a call's outcome to the peer, which queues the response at once (a computed
    /// result is never lost to a cancel that comes while the writer is behind); then, without
    /// the lock, the worker waits while the writer's queue is full, so that it starts no new
    /// work until the client reads.
    /// Returns a call the peer admitted meanwhile that no new thread could be started for,
    /// for this worker to run next.
    pub(super) fn finish(
        self: &Arc<Self>,
        id: &RequestId,
        outcome: Reply,
        wants_progress: bool,
    ) -> Option<Admitted> {
        let next = self.settle(id, outcome, wants_progress, true);
        self.out.wait_for_room();
        next
    }

    /// Hands a call's outcome to the peer and forgets the call (`keep`: see [`Shared::release`]).
    fn settle(
        self: &Arc<Self>,
        id: &RequestId,
        outcome: Reply,
        wants_progress: bool,
        keep: bool,
    ) -> Option<Admitted> {
        let mut st = self.lock();
        st.tokens.remove(id);
        st.peer.finish(Instant::now(), id, outcome);
        self.apply(&mut st);
        if wants_progress {
            self.out.end_progress(id);
        }
        if st.draining && st.peer.calls_in_flight() == 0 {
            self.events.send(Lifecycle::Idle);
        }
        self.release(st, keep)
    }

    /// The timer thread (`stdmcp-timer`): sends heartbeats and fires deadlines that are due;
    /// sleeps until the next one (the peer's next timeout), at most [`IDLE_WAKE`], or until
    /// woken. Started by the first wake ([`Shared::wake_timer`]); ends once serving stopped.
    fn run_timer(self: Arc<Self>) {
        outbox::never_wait_on_this_thread();
        loop {
            let (next, stopped) = {
                let st = self.lock();
                (st.peer.poll_timeout(), st.stopped)
            };
            if stopped {
                return;
            }
            let next = next.unwrap_or_else(|| Instant::now() + IDLE_WAKE);
            if !self.timer.wait(next) {
                let now = Instant::now();
                self.with_peer(|peer| peer.handle_timeout(now));
            }
        }
    }

    /// Handles frames from the reader under one lock.
    pub(super) fn handle_frames(self: &Arc<Self>, frames: Vec<Result<Frame, FrameError>>) {
        // Parsing and the schema checks of tool arguments need no state: they happen before
        // the lock is taken.
        let parsed: Vec<_> = frames
            .into_iter()
            .map(|f| {
                f.map(|frame| {
                    if log::log_enabled!(log::Level::Trace) {
                        log::trace!("< {}", String::from_utf8_lossy(&frame.body));
                    }
                    let parsed = jsonrpc::parse(&frame.body);
                    let checks = match &parsed {
                        Ok(incoming) => self.catalog.check_arguments(incoming),
                        Err(_) => Default::default(),
                    };
                    (frame.framing, parsed, checks)
                })
            })
            .collect();
        let now = Instant::now();
        self.with_state(|st| {
            let before = st.peer.poll_timeout();
            for p in parsed {
                match p {
                    Ok((framing, incoming, checks)) => {
                        st.peer.handle_checked(now, framing, incoming, checks)
                    }
                    Err(e) => {
                        log::warn!("discarded a frame: {e}");
                        st.peer.handle_frame_error(&e);
                    }
                }
            }
            // A request the peer holds itself (a job_wait) may need the timer sooner.
            if let Some(after) = st.peer.poll_timeout() {
                if before.is_none_or(|b| after < b) {
                    self.wake_timer_by(Some(after));
                }
            }
        });
    }

    /// Stops accepting requests; calls in flight go on (`drain`), or are cancelled (`cancel`).
    pub(super) fn close(self: &Arc<Self>, cancel: bool) -> usize {
        self.with_state(|st| {
            st.draining = true;
            if cancel {
                st.peer.shutdown();
            } else {
                st.peer.close();
            }
            st.peer.calls_in_flight()
        })
    }

    pub(super) fn calls_in_flight(&self) -> usize {
        self.lock().peer.calls_in_flight()
    }

    pub(super) fn stop_timer(&self) {
        self.lock().stopped = true;
        // A timer that never started has nothing to stop; one that did sees `stopped`.
        self.timer.ring();
    }
}

/// What the pool's threads run: the work the runtime gave the dispatcher ([`Shared::new`]),
/// which returns the call this thread runs next, if the pool could start no thread for one
/// admitted meanwhile.
fn run(a: Admitted) -> Option<Admitted> {
    let shared = Arc::clone(&a.shared);
    (shared.work)(a)
}
