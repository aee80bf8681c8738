//! The sans-IO protocol state machine of one end of an MCP connection.
//!
//! A [`Peer`] never reads or writes a stream, starts a thread or reads the clock. Its methods
//! fall into four groups (the shape of quinn-proto's `Connection`):
//!
//! * inputs: [`Peer::handle_frame`] for every frame from the other side (or
//!   [`Peer::handle_checked`], with the frame parsed and its tool arguments checked against
//!   their schemas by the caller, outside whatever lock guards the peer), and, in the server
//!   role, [`Peer::finish`], [`Peer::progress`], [`Peer::log`] and [`Peer::set_status`] for
//!   what the work started by a request reports;
//! * commands: [`Peer::request`], [`Peer::notify`] and [`Peer::cancel_request`] to talk to the
//!   other side, and [`Peer::shutdown`];
//! * time: every timer (call deadlines, expiries of parked calls, the retention of ended
//!   jobs, the background delay after which a call becomes a job, the end of a `job_wait`,
//!   progress heartbeats) is an entry of one table, keyed by kind and subject and found by
//!   when it is due (a min-heap per kind), in the style of quinn-proto:
//!   [`Peer::poll_timeout`] is its earliest entry, and [`Peer::handle_timeout`] fires what
//!   is due, kind by kind in that order; every time-dependent call takes `now`;
//! * outputs: [`Peer::poll_effect`] pops what the caller must do: write bytes, start or stop
//!   work, deliver a response or a notification; [`Peer::poll_diagnostic`] pops what the
//!   peer would log (it has no logger).
//!
//! Call `poll_effect` until it returns `None` after every input or command, then drain
//! `poll_diagnostic`. The peer uses only std and the wire modules (`framing`, `jsonrpc`,
//! `mcp`, `schema`, `human`): no thread, no clock (the wall-clock origin of task timestamps
//! and the source of `requestState` nonces come through [`Config`]).
//!
//! Inside, the peer is a front over sub-machines. The front is this file (the [`Peer`] type,
//! its inputs, effects and timers), `client_role`, and the server role, a directory of
//! files by concern (`server_role/`: era selection and method tables, the handshake, the
//! 2026-07-28 path, calls, jobs and the job tools, tasks, asking the client, subscriptions,
//! batches); only the front implements `Peer`, and it turns what the sub-machines say into
//! effects. The sub-machines are types with their own methods that know nothing of effects
//! and import nothing of the front: the call table (`call`: each call's record, its life a
//! `CallState` and its place an `Admission`, running or queued with its start; admission by
//! slots), the parking of multi-round-trip calls (`parking`), the
//! job store (`jobs`: jobs, a task's questions, pending `job_wait`s), batches (`batch`), a
//! connection's subscriptions (`subscriptions`) and the timer table (`timers`); beneath them
//! are leaves: the catalog (`catalog`), each request's terms (`terms`), the argument checks
//! (`arguments`), diagnostics (`diag`) and timeouts (`timeout`). No sub-machine imports
//! the front or another role, and the server role's files take no items from each other in
//! a loop (their methods call each other freely: they are one type's).

mod arguments;
mod batch;
mod call;
mod catalog;
mod client_role;
mod diag;
mod jobs;
mod parking;
mod server_role;
mod subscriptions;
mod terms;
mod timeout;
mod timers;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use diag::note;
use timers::{Kind, Subject, Timers};

use serde::Serialize;
use serde_json::Value;

use crate::framing::{self, Frame, FrameError, Framing};
use crate::jsonrpc::{self, ErrorObject, IdMap, Notification, Request, RequestId};
use crate::mcp::{CallToolResult, ClientCapabilities, ProtocolVersion};

pub use arguments::ArgumentChecks;
pub use catalog::{Catalog, JobTools, ReservedToolName, JOB_TOOL_NAMES};
pub use client_role::ClientEra;
pub use diag::{Diagnostic, Level};
pub use jobs::JOB_META;
pub use jobs::{WAIT_DEFAULT, WAIT_MAX};
pub use parking::{auto_key, capability_of, hash_random, Asked, InputRequest};
pub use server_role::Reply;
pub use subscriptions::MAX_SUBSCRIPTIONS;
pub use terms::{declares_tasks, TASKS_EXTENSION};
pub use timeout::Timeout;

/// Default interval of heartbeat progress (the 5 s of established prover servers).
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(5);

/// Default number of jobs kept at once (working or ended and not yet expired).
pub const DEFAULT_MAX_JOBS: usize = 16;

/// Default time an ended job's result is kept.
pub const DEFAULT_JOB_RETENTION: Duration = Duration::from_secs(600);

/// Default time a parked 2026-07-28 call waits for the client's retry.
pub const DEFAULT_PARK_TTL: Duration = Duration::from_secs(300);

/// Settings of a peer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// Interval after which a call that has a progress token and has not reported gets a
    /// heartbeat notification.
    pub heartbeat: Duration,
    /// Items per page of list results.
    pub page_size: usize,
    /// `ttlMs` on list results of the 2026-07-28 era (MCP 2026-07-28, Caching).
    pub list_ttl_ms: u64,
    /// Requests whose work runs at once; later ones wait in arrival order for one to finish,
    /// and [`Effect::Start`] comes when one is admitted. Heartbeats of waiting requests say so.
    pub max_running: usize,
    /// How long a 2026-07-28 call parked on an `input_required` result waits for the client's
    /// retry before it is released (default 5 min).
    pub park_ttl: Duration,
    /// Calls parked at once, each holding a worker thread (default 64); a call that would
    /// exceed it gets an error instead of `input_required`.
    pub max_parked: usize,
    /// Fills a buffer with unpredictable bytes: the nonce of each parked call's
    /// `requestState` (default: [`hash_random`]; stdmcp's runtime passes the kernel's random
    /// pool). The peer reads no clock and does no I/O of its own; tests may pass a
    /// deterministic source.
    pub fill_random: fn(&mut [u8]),
    /// Serve only the handshake era: `server/discover` is answered with -32601 so that
    /// clients fall back to `initialize` (default false).
    pub handshake_only: bool,
    /// Jobs kept at once, working or ended (default [`DEFAULT_MAX_JOBS`]): when full, the
    /// oldest ended job is forgotten; if none has ended, a call stays a plain call.
    pub max_jobs: usize,
    /// How long an ended job's result is kept (default [`DEFAULT_JOB_RETENTION`]).
    pub job_retention: Duration,
    /// One reading of both clocks, taken by the runtime: task timestamps (`createdAt`,
    /// `lastUpdatedAt`) are derived from the `now` each call gets, so the peer itself never
    /// reads a clock. Without it (the default), the first `now` the peer is given stands for
    /// the Unix epoch.
    pub wall_origin: Option<(Instant, SystemTime)>,
    /// The most verbose [`Diagnostic`]s kept for [`Peer::poll_diagnostic`] (default
    /// [`Level::Warn`]; `None`: none).
    pub diagnostics: Option<Level>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            heartbeat: DEFAULT_HEARTBEAT,
            page_size: 100,
            list_ttl_ms: 300_000,
            max_running: usize::MAX,
            park_ttl: DEFAULT_PARK_TTL,
            max_parked: 64,
            fill_random: hash_random,
            handshake_only: false,
            max_jobs: DEFAULT_MAX_JOBS,
            job_retention: DEFAULT_JOB_RETENTION,
            wall_origin: None,
            diagnostics: Some(Level::Warn),
        }
    }
}

/// The work a server-role request needs done outside the peer.
#[derive(Clone, Debug, PartialEq)]
pub enum Work {
    /// Run tool number `tool` of the catalog with these (validated) arguments.
    CallTool {
        /// Index into [`Catalog::tools`].
        tool: usize,
        /// The arguments object.
        arguments: Value,
    },
    /// Build the prompt `name`.
    GetPrompt {
        /// Index into [`Catalog::prompts`].
        prompt: usize,
        /// Its arguments.
        arguments: serde_json::Map<String, Value>,
    },
    /// Read the resource `uri`.
    ReadResource {
        /// The URI.
        uri: String,
    },
    /// Answer `completion/complete` (the params as sent).
    Complete {
        /// The params.
        params: Value,
    },
}

/// A request whose work must be started (server role).
#[derive(Clone, Debug, PartialEq)]
pub struct Admitted {
    /// The request id; report back with [`Peer::finish`].
    pub id: RequestId,
    /// What to do.
    pub work: Work,
    /// The revision the answer is for.
    pub version: ProtocolVersion,
    /// True when the request carries a progress token.
    pub wants_progress: bool,
    /// The client's capabilities (per request in 2026-07-28, per connection before).
    pub client_capabilities: ClientCapabilities,
    /// When the server-side deadline of the call passes, if its tool has one.
    pub deadline: Option<Instant>,
    /// Slots of the concurrency limit the call takes (one, or a portfolio's members).
    pub slots: usize,
}

/// What the caller must do next.
#[derive(Debug, PartialEq)]
pub enum Effect {
    /// Write these bytes (one or more whole frames) to the other side.
    Send(Vec<u8>),
    /// Write this progress frame of request `id` (server role). Until it is written, a later
    /// `Progress` of the same request may replace it: values only increase, so a client that
    /// reads slowly sees the latest progress instead of a backlog.
    Progress {
        /// The request the progress is about.
        id: RequestId,
        /// One whole frame.
        bytes: Vec<u8>,
    },
    /// Start this work now; report its end with [`Peer::finish`]. Emitted only when the
    /// call is admitted (at once if its slots of [`Config::max_running`] are free, else when
    /// they free up, in arrival order), so the caller needs no queue of its own; a start it
    /// cannot carry out goes back with [`Peer::start_refused`].
    Start(Admitted),
    /// Stop the work of this request: it was cancelled, or the peer is shutting down.
    Cancel(RequestId),
    /// The server-side deadline of this request passed: stop its work. Unlike a cancel, the
    /// request is still answered (its tool says how it ended).
    Deadline(RequestId),
    /// The server-side deadline of this request passed while it waited for a free slot
    /// (behind [`Config::max_running`]): the peer answered it as never started and forgot
    /// it. Its work must not start; a later [`Peer::finish`] for it is ignored.
    Unstarted(RequestId),
    /// A response to a request this side sent with [`Peer::request`].
    Response(jsonrpc::Response),
    /// A notification from the other side that the peer does not handle itself
    /// (client role: progress, log messages, list changes…).
    Notification(Notification),
    /// A request from the other side that the peer cannot answer itself (client role:
    /// sampling, elicitation, roots). Answer with [`Peer::respond`].
    Request(Request),
}

/// Which end of the connection this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Serves a catalog.
    Server,
    /// Talks to a server.
    Client,
}

/// The protocol state machine. See the module docs.
#[derive(Debug)]
pub struct Peer {
    role: Role,
    config: Config,
    catalog: Arc<Catalog>,
    effects: VecDeque<Effect>,
    /// Framing of the last frame received; replies use it.
    framing: Framing,
    /// Server role: the handshake-era connection, once `initialize` was answered.
    handshake: Option<server_role::Handshake>,
    /// Server role: requests whose work is running or waiting to run.
    calls: call::CallTable,
    /// Server role: open `subscriptions/listen` requests.
    listens: Vec<RequestId>,
    /// Server role, 2025-03-26: batches waiting for their responses.
    batches: batch::Batches,
    /// Requests this side sent and not yet answered.
    outbound: IdMap<client_role::Outbound>,
    next_id: i64,
    /// Server role, 2026-07-28: calls parked on `input_required` results.
    parking: parking::Parking,
    /// Server role: jobs (calls answered before their work ended) and their results.
    jobs: jobs::Store,
    /// Client role: how requests are framed into eras.
    client_era: ClientEra,
    closing: bool,
    /// What the peer would log, for the runtime to drain.
    diagnostics: diag::Diagnostics,
    /// Schema verdicts on the arguments of the frame being handled ([`Peer::handle_checked`]).
    checked: ArgumentChecks,
    /// Every timer: deadlines, park expiries, job retention, background delays, `job_wait`
    /// ends and heartbeats.
    timers: Timers,
    /// The instant [`Config::wall_origin`] stands for: its own, or the first `now` seen.
    origin: Option<(Instant, SystemTime)>,
}

impl Peer {
    /// A server serving `catalog`.
    pub fn server(catalog: Arc<Catalog>, config: Config) -> Peer {
        Peer::new(Role::Server, catalog, config)
    }

    /// A client.
    pub fn client(config: Config) -> Peer {
        Peer::new(Role::Client, Arc::new(Catalog::default()), config)
    }

    fn new(role: Role, catalog: Arc<Catalog>, config: Config) -> Peer {
        Peer {
            role,
            diagnostics: diag::Diagnostics::new(config.diagnostics),
            origin: config.wall_origin,
            timers: Timers::default(),
            checked: ArgumentChecks::default(),
            config,
            catalog,
            effects: VecDeque::new(),
            framing: Framing::Newline,
            handshake: None,
            calls: call::CallTable::default(),
            listens: Vec::new(),
            batches: batch::Batches::default(),
            outbound: IdMap::default(),
            next_id: 1,
            parking: parking::Parking::default(),
            jobs: jobs::Store::default(),
            client_era: ClientEra::Handshake,
            closing: false,
        }
    }

    /// The role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The catalog served.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// The revision negotiated by `initialize`, if a handshake took place.
    pub fn negotiated_version(&self) -> Option<ProtocolVersion> {
        self.handshake.as_ref().map(|s| s.version)
    }

    /// The framing replies use.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Sets the framing of what this side sends (a client picks it; a server mirrors).
    pub fn set_framing(&mut self, framing: Framing) {
        self.framing = framing;
    }

    /// Number of requests in flight: those whose work is running or waits to run (cancelled
    /// ones included until they end) and pending `job_wait`s.
    pub fn calls_in_flight(&self) -> usize {
        self.calls.len() + self.jobs.waits.len()
    }

    /// The next effect, if any.
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// The next diagnostic (what the peer would log), if any: drain after the effects.
    pub fn poll_diagnostic(&mut self) -> Option<Diagnostic> {
        self.diagnostics.pop()
    }

    /// Handles one frame from the other side.
    pub fn handle_frame(&mut self, now: Instant, frame: Frame) {
        let parsed = jsonrpc::parse(&frame.body);
        self.handle_parsed(now, frame.framing, parsed);
    }

    /// Handles a frame already parsed with [`jsonrpc::parse`] (so that a caller can parse
    /// outside whatever lock guards the peer).
    pub fn handle_parsed(
        &mut self,
        now: Instant,
        framing: Framing,
        parsed: Result<jsonrpc::Incoming, ErrorObject>,
    ) {
        self.framing = framing;
        if self.origin.is_none() {
            self.origin = Some((now, SystemTime::UNIX_EPOCH));
        }
        match parsed {
            Err(parse_error) if self.role == Role::Client => self.client_parse_error(&parse_error),
            Err(parse_error) => self.send_error(None, &parse_error),
            Ok(incoming) => match self.role {
                Role::Server => self.server_incoming(now, incoming),
                Role::Client => self.client_incoming(now, incoming),
            },
        }
    }

    /// Handles a frame already parsed, whose `tools/call` arguments were checked with
    /// [`Catalog::check_arguments`] (both outside whatever lock guards the peer): the same
    /// answers as [`Peer::handle_parsed`], without validating under the lock.
    pub fn handle_checked(
        &mut self,
        now: Instant,
        framing: Framing,
        parsed: Result<jsonrpc::Incoming, ErrorObject>,
        checks: ArgumentChecks,
    ) {
        self.checked = checks;
        self.handle_parsed(now, framing, parsed);
        self.checked = ArgumentChecks::default();
    }

    /// Handles a frame the decoder had to discard: answered like a parse error.
    pub fn handle_frame_error(&mut self, error: &FrameError) {
        let e = ErrorObject::new(
            jsonrpc::ErrorCode::PARSE_ERROR,
            format!("Parse error: {error}"),
        );
        match self.role {
            Role::Client => self.client_parse_error(&e),
            Role::Server => self.send_error(None, &e),
        }
    }

    /// When [`Peer::handle_timeout`] must next be called: the next heartbeat, deadline,
    /// expiry of a parked call, background delay, end of a `job_wait` or job expiry.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// Fires every timer due at `now`, one kind after another: deadlines ([`Effect::Deadline`],
    /// or [`Effect::Unstarted`] for a call still waiting for a slot), expired parked calls,
    /// ended jobs whose retention is over, calls whose background delay passed (they become
    /// jobs), `job_wait`s whose time is up, then heartbeat progress.
    pub fn handle_timeout(&mut self, now: Instant) {
        for kind in Kind::ALL {
            for subject in self.timers.take_due(kind, now) {
                match subject {
                    Subject::Call(id) => match kind {
                        Kind::Deadline => self.fire_deadline(now, &id),
                        Kind::Background => self.make_job(now, &id),
                        Kind::WaitEnd => self.end_wait(now, &id),
                        Kind::Heartbeat if self.jobs.waits.contains(&id) => {
                            self.wait_heartbeat(now, &id)
                        }
                        Kind::Heartbeat => self.heartbeat(now, &id),
                        Kind::ParkExpiry | Kind::JobRetention => {}
                    },
                    Subject::Park(park) => self.release_expired(park),
                    Subject::Job(job) => self.jobs.forget(&job),
                }
            }
        }
    }

    fn send_json(&mut self, json: Vec<u8>) {
        let framed = framing::frame(json, self.framing);
        self.effects.push_back(Effect::Send(framed));
    }

    fn send_error(&mut self, id: Option<&RequestId>, error: &ErrorObject) {
        let mut out = Vec::with_capacity(128);
        jsonrpc::write_error(&mut out, id, error);
        match id {
            Some(id) => self.respond_json(id, out),
            None => self.send_json(out),
        }
    }

    fn send_result<T: Serialize + ?Sized>(&mut self, id: &RequestId, result: &T) {
        let mut out = Vec::with_capacity(256);
        match jsonrpc::write_result(&mut out, id, result) {
            Ok(()) => self.respond_json(id, out),
            Err(e) => self.send_error(Some(id), &e),
        }
    }

    fn send_notification<T: Serialize + ?Sized>(&mut self, method: &str, params: &T) {
        let mut out = Vec::with_capacity(128);
        match jsonrpc::write_notification(&mut out, method, params) {
            Ok(()) => self.send_json(out),
            Err(e) => note!(self, Error, "could not write a {method} notification: {e}"),
        }
    }

    /// Sends a response, or holds it for the batch it belongs to: the batch being read if it
    /// holds the id, else a batch waiting for that id's work, once the work has ended (while
    /// it runs, a response with its id answers another request that reuses the id).
    fn respond_json(&mut self, id: &RequestId, json: Vec<u8>) {
        let running = self.calls.contains_key(id) || self.jobs.waits.contains(id);
        match self.batches.file(id, json, running) {
            batch::Filed::Alone(json) | batch::Filed::Completed(json) => self.send_json(json),
            batch::Filed::Held => {}
        }
    }

    /// Answers a request the other side sent that surfaced as [`Effect::Request`].
    pub fn respond(&mut self, id: &RequestId, result: Result<Value, ErrorObject>) {
        match result {
            Ok(v) => self.send_result(id, &v),
            Err(e) => self.send_error(Some(id), &e),
        }
    }

    /// The runtime could not start the work of `start`, which the peer admitted (no thread
    /// could be started: the user's process limit, a container's pids limit; `why` says
    /// so). The call goes back to the head of the waiting line, and nothing more is admitted
    /// until a running call ends and frees a thread; when nothing else runs, it is answered
    /// at once with an error (and so is every call refused before that still waits), so that
    /// every request is answered. A call cancelled since its start just ends.
    pub fn start_refused(&mut self, now: Instant, start: Admitted, why: &str) {
        let id = start.id.clone();
        if self
            .calls
            .get(&id)
            .is_some_and(call::Inflight::is_cancelled)
        {
            return self.finish(now, &id, Reply::Error(refusal(why)));
        }
        let max = self.config.max_running;
        match self.calls.refuse(start, why, max) {
            call::Refused::Waits => note!(
                self,
                Warn,
                "request {id}: no thread could be started ({why}); it waits for a running call to end"
            ),
            call::Refused::Unknown => note!(self, Debug, "start of {id} given back: not running"),
            call::Refused::Answer(ids) => {
                for id in ids {
                    let call = self.calls.get(&id);
                    let why = call.and_then(call::Inflight::refused).unwrap_or(why);
                    let e = refusal(&format!("no thread could be started to run it ({why})"));
                    self.finish(now, &id, Reply::Error(e));
                }
                let starts = self.calls.admit_now(now, max);
                self.start_admitted(starts);
            }
        }
    }

    /// Emits the starts of calls the call table admitted.
    fn start_admitted(&mut self, starts: Vec<Admitted>) {
        self.effects.extend(starts.into_iter().map(Effect::Start));
    }

    /// Reports the end of a call's work as a tool result (server role).
    pub fn finish_tool(&mut self, now: Instant, id: &RequestId, result: CallToolResult) {
        self.finish(now, id, Reply::Tool(result));
    }
}

/// The error (-32603) of a request the server could not run for want of a thread (`why`:
/// what happened); the runtime answers with it too when a thread it needs is missing.
pub fn refusal(why: &str) -> ErrorObject {
    ErrorObject::internal(format!(
        "Internal error: the server could not run this request: {why}. The machine or \
         the server's user is at its limit of processes and threads (ulimit -u, a \
         container's pids limit); retry when other work has ended."
    ))
}

#[cfg(test)]
mod tests;
