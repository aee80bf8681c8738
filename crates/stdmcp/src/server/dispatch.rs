//! The dispatcher: the peer behind one lock, and the code that carries out its effects.
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

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use super::bell::Bell;

use super::outbox::Outbox;
use super::pool::Placed;
use super::{Ctx, Handlers, Options, Pool};
use crate::cancel::{CancelReason, CancelToken};
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::mcp::template::match_template;
use crate::mcp::{gate, CallToolResult, GetPromptResult, PromptMessage};
use crate::peer::{CallStart, Effect, Peer, Reply, Work};

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
    pub tokens: HashMap<RequestId, CancelToken>,
    /// Server→client requests waiting for the client's answer.
    pub waiters: HashMap<RequestId, Sender<Result<Value, ErrorObject>>>,
    pub draining: bool,
    pub stopped: bool,
    /// Work to hand to the pool once the lock is released (waking a worker is a syscall).
    submitted: Vec<Submitted>,
    /// The writer must be woken once the lock is released.
    ring_writer: bool,
    /// Cancel tokens to fire once the lock is released (their hooks may take the lock).
    fire: Vec<(CancelToken, CancelReason)>,
}

/// A call's work for the pool, with what answering it without running it takes.
struct Submitted {
    id: RequestId,
    wants_progress: bool,
    /// Why it must be answered with an error instead of run.
    refusal: Option<String>,
    /// Slots of the concurrency limit it takes (a portfolio: one per member).
    slots: usize,
    token: CancelToken,
    /// Taken by the work item when it starts, or by the answer given without it.
    claim: Arc<Claim>,
    item: super::pool::WorkItem,
}

/// Who answers a call: the work item that runs it, or (for one left waiting for a busy worker,
/// when no thread could be started) a cancel hook that answers it at its deadline, its
/// cancellation or the shutdown, whichever comes first. Only the first to take it does.
#[derive(Default)]
struct Claim {
    taken: AtomicBool,
    /// The hook of a waiting job; unregistered when the job starts.
    hook: Mutex<Option<crate::cancel::HookGuard>>,
}

impl Claim {
    /// True for the first caller only.
    fn take(&self) -> bool {
        !self.taken.swap(true, Ordering::SeqCst)
    }
}

pub(crate) struct Shared {
    state: Mutex<State>,
    pub out: Outbox,
    pub events: Sender<Lifecycle>,
    /// Wakes the timer thread ([`super::runtime::timer`]).
    pub(super) timer: Bell,
    /// Whether the timer thread runs: the first wake starts it, so that a session without
    /// deadlines, heartbeats or parked calls never does (cold start, docs/bench.md).
    timer_started: AtomicBool,
    pub pool: Pool,
    pub handlers: Handlers,
    /// The peer's catalog, for what needs it outside the lock (argument validation).
    catalog: Arc<crate::peer::Catalog>,
    /// The latest status line of each call, for the peer ([`Ctx::set_status`]).
    status: super::status::StatusSlots,
}

impl Shared {
    pub fn new(
        peer: Peer,
        out: Outbox,
        events: Sender<Lifecycle>,
        handlers: Handlers,
        options: Options,
    ) -> Shared {
        let pool = Pool::new(
            options.max_concurrent_calls,
            options.worker_keep_alive,
            options.worker_stack,
        );
        Shared {
            catalog: peer.catalog().clone(),
            status: Default::default(),
            state: Mutex::new(State {
                peer,
                tokens: HashMap::new(),
                waiters: HashMap::new(),
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
            handlers,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the state, then carries out the peer's effects.
    pub fn with_state<R>(self: &Arc<Self>, f: impl FnOnce(&mut State) -> R) -> R {
        let mut st = self.lock();
        self.status.hand_to(&mut st.peer);
        let r = f(&mut st);
        self.apply(&mut st);
        self.release(st);
        r
    }

    /// Keeps `line` as call `id`'s status: the message of its next heartbeat and its job's
    /// latest line. Takes only the slots' lock, not the state's.
    pub fn set_status(&self, id: &RequestId, line: String) {
        self.status.set(id, line);
    }

    /// Lets go of the lock, then does what needs no lock: wakes the writer, hands new work
    /// to the pool (both may be syscalls; the bytes were queued in order under the lock) and
    /// fires cancel tokens, whose hooks thus run on this thread without the lock.
    fn release(self: &Arc<Self>, mut st: MutexGuard<'_, State>) {
        let submitted = std::mem::take(&mut st.submitted);
        let ring = std::mem::take(&mut st.ring_writer);
        let fire = std::mem::take(&mut st.fire);
        drop(st);
        if ring {
            self.out.ring();
        }
        for s in submitted {
            let refusal = match s.refusal {
                Some(why) => Some(why),
                None => match self.pool.submit_slots(s.item, s.slots) {
                    Ok(Placed::Running) => None,
                    Ok(Placed::Waiting(e)) => {
                        self.answer_if_waiting_at_cancel(
                            s.id.clone(),
                            s.wants_progress,
                            &s.token,
                            s.claim,
                            e,
                        );
                        None
                    }
                    Err((_, e)) => Some(format!("no thread could be started to run it ({e})")),
                },
            };
            if let Some(why) = refusal {
                self.refuse(&s.id, s.wants_progress, &why);
            }
        }
        for (token, reason) in fire {
            token.cancel(reason);
        }
    }

    /// Runs `f` on the peer, then carries out its effects.
    pub fn with_peer<R>(self: &Arc<Self>, f: impl FnOnce(&mut Peer) -> R) -> R {
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
                Effect::Unstarted(id) => {
                    // Answered already: its job, still queued in the pool, returns at once.
                    if let Some(token) = st.tokens.remove(&id) {
                        st.fire.push((token, CancelReason::Unstarted));
                    }
                }
                Effect::Response(r) => match st.waiters.remove(&r.id) {
                    Some(tx) => {
                        let _ = tx.try_send(r.result);
                    }
                    None => log::debug!("response {} has no waiter", r.id),
                },
                Effect::Notification(n) => log::debug!("notification {} ignored", n.method),
                Effect::Request(r) => log::debug!("request {} ignored", r.method),
            }
        }
        super::diagnostics::log_diagnostics(&mut st.peer);
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
                .spawn(move || super::runtime::timer(shared));
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

    fn start(self: &Arc<Self>, st: &mut State, call: CallStart) {
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
        let ctx = Ctx {
            shared: self.clone(),
            id: call.id,
            cancel: token,
            deadline,
            version: call.version,
            wants_progress: call.wants_progress,
            client_capabilities: call.client_capabilities,
        };
        let (work, slots) = (call.work, call.slots);
        // Submitted by `with_state` after the lock is released; the token is registered
        // already, so a cancel that arrives first is seen when the job starts.
        let (id, wants_progress) = (ctx.id.clone(), ctx.wants_progress);
        let claim = Arc::new(Claim::default());
        let claimed = Arc::clone(&claim);
        st.submitted.push(Submitted {
            id,
            wants_progress,
            refusal,
            slots,
            token: ctx.cancel.clone(),
            claim,
            item: Box::new(move || {
                if !claimed.take() {
                    return; // answered while it waited for a thread
                }
                drop(
                    claimed
                        .hook
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take(),
                );
                match ctx
                    .cancel
                    .is_cancelled()
                    .then(|| ctx.cancel.reason())
                    .flatten()
                {
                    // The peer answered it while it waited for this worker, and forgot it.
                    Some(CancelReason::Unstarted) => return,
                    // Cancelled while it waited: never answered, so nothing is run for it.
                    Some(CancelReason::Client | CancelReason::Shutdown) => {
                        let never = ErrorObject::internal("cancelled before it started");
                        return ctx
                            .shared
                            .finish(&ctx.id, Reply::Error(never), ctx.wants_progress);
                    }
                    // A deadline that passed between the peer's start and this worker's: the
                    // handler answers it (it timed out).
                    _ => {}
                }
                let outcome = run(&ctx, work);
                ctx.shared.finish(&ctx.id, outcome, ctx.wants_progress);
            }),
        });
    }

    /// A job waits for a busy worker (no thread could be started for it): if its deadline
    /// passes, or it is cancelled, before a worker takes it, it is answered then, without
    /// running (a cancelled request is still never answered: the peer sees to that).
    fn answer_if_waiting_at_cancel(
        self: &Arc<Self>,
        id: RequestId,
        wants_progress: bool,
        token: &CancelToken,
        claim: Arc<Claim>,
        why: std::io::Error,
    ) {
        let shared = Arc::downgrade(self);
        let claimed = Arc::clone(&claim);
        let hook = token.on_cancel(move || {
            if let Some(shared) = shared.upgrade().filter(|_| claimed.take()) {
                shared.refuse(
                    &id,
                    wants_progress,
                    &format!(
                        "it was still waiting for a worker thread when it was cancelled or its \
                         deadline passed (none could be started: {why})"
                    ),
                );
            }
        });
        // Kept until the job starts; a job that started already has dropped its slot's
        // content, and the hook must not stay registered (it would hold the claim forever).
        let mut slot = claim.hook.lock().unwrap_or_else(PoisonError::into_inner);
        if claim.taken.load(Ordering::SeqCst) {
            drop(slot);
            drop(hook);
        } else {
            *slot = Some(hook);
        }
    }

    /// Answers a call that could not be started with an error saying why (the server is out
    /// of threads: `ulimit -u`, a container's pid limit), so that no request goes unanswered.
    /// It runs on the thread that submitted the call, which must not wait for the writer.
    fn refuse(self: &Arc<Self>, id: &RequestId, wants_progress: bool, why: &str) {
        log::error!("request {id} not run: {why}");
        let error = ErrorObject::internal(format!(
            "Internal error: the server could not run this request: {why}. The machine or \
             the server's user is at its limit of processes and threads (ulimit -u, a \
             container's pids limit); retry when other work has ended."
        ));
        self.settle(id, Reply::Error(error), wants_progress);
    }

    /// Hands a call's outcome to the peer, which queues the response at once (a computed
    /// result is never lost to a cancel that comes while the writer is behind); then, without
    /// the lock, the worker waits while the writer's queue is full, so that it starts no new
    /// work until the client reads.
    fn finish(self: &Arc<Self>, id: &RequestId, outcome: Reply, wants_progress: bool) {
        self.settle(id, outcome, wants_progress);
        self.out.wait_for_room();
    }

    /// Hands a call's outcome to the peer and forgets the call.
    fn settle(self: &Arc<Self>, id: &RequestId, outcome: Reply, wants_progress: bool) {
        let mut st = self.lock();
        st.tokens.remove(id);
        st.peer.finish(Instant::now(), id, outcome);
        self.apply(&mut st);
        if wants_progress {
            self.out.end_progress(id);
        }
        if st.draining && st.peer.calls_in_flight() == 0 {
            let _ = self.events.send(Lifecycle::Idle);
        }
        self.release(st);
    }

    /// The next time the timer must act (the peer's next heartbeat or deadline), and
    /// whether the timer must stop.
    pub fn next_wake(&self) -> (Option<Instant>, bool) {
        let st = self.lock();
        (st.peer.poll_timeout(), st.stopped)
    }

    /// Heartbeats and deadlines that are due.
    pub fn on_timer(self: &Arc<Self>) {
        let now = Instant::now();
        self.with_peer(|peer| peer.handle_timeout(now));
    }

    /// Handles frames from the reader under one lock.
    pub fn handle_frames(
        self: &Arc<Self>,
        frames: Vec<Result<crate::framing::Frame, crate::framing::FrameError>>,
    ) {
        // Parsing and the schema checks of tool arguments need no state: they happen before
        // the lock is taken.
        let parsed: Vec<_> = frames
            .into_iter()
            .map(|f| {
                f.map(|frame| {
                    if log::log_enabled!(log::Level::Trace) {
                        log::trace!("< {}", String::from_utf8_lossy(&frame.body));
                    }
                    let parsed = crate::jsonrpc::parse(&frame.body);
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
    pub fn close(self: &Arc<Self>, cancel: bool) -> usize {
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

    pub fn calls_in_flight(&self) -> usize {
        self.lock().peer.calls_in_flight()
    }

    pub fn stop_timer(&self) {
        self.lock().stopped = true;
        // A timer that never started has nothing to stop; one that did sees `stopped`.
        self.timer.ring();
    }
}

/// Runs one piece of work on the worker thread; a panic becomes an error for this call only.
fn run(ctx: &Ctx, work: Work) -> Reply {
    let handlers = &ctx.shared.handlers;
    let result = catch_unwind(AssertUnwindSafe(|| match work {
        Work::CallTool { tool, arguments } => match handlers.tools.get(tool) {
            Some(handler) => {
                Reply::Tool(handler(ctx, arguments).unwrap_or_else(|e| CallToolResult::error(e.0)))
            }
            None => Reply::Error(ErrorObject::internal("no handler for this tool")),
        },
        Work::GetPrompt { prompt, arguments } => match handlers.prompts.get(prompt) {
            Some(handler) => match handler(ctx, &arguments) {
                Ok(r) => prompt_value(r, ctx),
                Err(e) => Reply::Error(e),
            },
            None => Reply::Error(ErrorObject::internal("no handler for this prompt")),
        },
        Work::ReadResource { uri } => read_resource(ctx, &uri),
        Work::Complete { params } => {
            let values = match &handlers.complete {
                Some(c) => c(ctx, &params),
                None => Ok(Vec::new()),
            };
            match values {
                Ok(mut v) => {
                    let total = v.len();
                    v.truncate(100);
                    Reply::Value(
                        json!({"completion": {"values": v, "total": total, "hasMore": total > 100}}),
                    )
                }
                Err(e) => Reply::Error(e),
            }
        }
    }));
    result.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        log::error!("handler for request {} panicked: {what}", ctx.id);
        Reply::Error(ErrorObject::internal(format!(
            "Internal error: the handler panicked: {what}"
        )))
    })
}

fn prompt_value(r: GetPromptResult, ctx: &Ctx) -> Reply {
    let messages: Vec<PromptMessage> = r
        .messages
        .into_iter()
        .map(|m| PromptMessage {
            role: m.role,
            content: gate::content(m.content, ctx.version),
        })
        .collect();
    let r = GetPromptResult {
        description: r.description,
        messages,
    };
    match serde_json::to_value(r) {
        Ok(v) => Reply::Value(v),
        Err(e) => Reply::Error(ErrorObject::internal(e.to_string())),
    }
}

fn read_resource(ctx: &Ctx, uri: &str) -> Reply {
    let handlers = &ctx.shared.handlers;
    let found = match handlers.resources.get(uri) {
        Some(entry) => Some((entry.read.clone(), HashMap::new())),
        None => handlers
            .templates
            .iter()
            .find_map(|t| match_template(&t.template, uri).map(|vars| (t.read.clone(), vars))),
    };
    let Some((read, vars)) = found else {
        return Reply::NotFound(uri.to_owned());
    };
    match read(ctx, uri, &vars) {
        Ok(contents) if contents.is_empty() => Reply::NotFound(uri.to_owned()),
        Ok(contents) => Reply::Value(json!({ "contents": contents })),
        Err(e) => Reply::Error(e),
    }
}
