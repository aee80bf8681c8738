//! The front of the peer: the [`Peer`] type, its inputs, effects and timers, and what both
//! roles use to answer; the roles' files (`client_role`, `server_role/`) add their methods to
//! the same type.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;

use super::arguments::ArgumentChecks;
use super::batch;
use super::call;
use super::catalog::Catalog;
use super::config::Config;
use super::connection::Handshake;
use super::diag::{self, note, Diagnostic};
use super::effect::Effect;
use super::jobs;
use super::outbound::{ClientEra, Outbound};
use super::parking;
use super::timers::{Kind, Subject, Timers};
use super::work::{Admitted, Reply};
use crate::framing::{self, Frame, FrameError, Framing};
use crate::jsonrpc::{self, ErrorObject, IdMap, RequestId};
use crate::mcp::{CallToolResult, ProtocolVersion};

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
    pub(super) role: Role,
    pub(super) config: Config,
    pub(super) catalog: Arc<Catalog>,
    pub(super) effects: VecDeque<Effect>,
    /// Framing of the last frame received; replies use it.
    pub(super) framing: Framing,
    /// Server role: the handshake-era connection, once `initialize` was answered.
    pub(super) handshake: Option<Handshake>,
    /// Server role: requests whose work is running or waiting to run.
    pub(super) calls: call::CallTable,
    /// Server role: open `subscriptions/listen` requests.
    pub(super) listens: Vec<RequestId>,
    /// Server role, 2025-03-26: batches waiting for their responses.
    pub(super) batches: batch::Batches,
    /// Requests this side sent and not yet answered.
    pub(super) outbound: IdMap<Outbound>,
    pub(super) next_id: i64,
    /// Server role, 2026-07-28: calls parked on `input_required` results.
    pub(super) parking: parking::Parking,
    /// Server role: jobs (calls answered before their work ended) and their results.
    pub(super) jobs: jobs::Store,
    /// Client role: how requests are framed into eras.
    pub(super) client_era: ClientEra,
    pub(super) closing: bool,
    /// What the peer would log, for the runtime to drain.
    pub(super) diagnostics: diag::Diagnostics,
    /// Schema verdicts on the arguments of the frame being handled ([`Peer::handle_checked`]).
    pub(super) checked: ArgumentChecks,
    /// Every timer: deadlines, park expiries, job retention, background delays, `job_wait`
    /// ends and heartbeats.
    pub(super) timers: Timers,
    /// The instant [`Config::wall_origin`] stands for: its own, or the first `now` seen.
    pub(super) origin: Option<(Instant, SystemTime)>,
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

    pub(super) fn send_json(&mut self, json: Vec<u8>) {
        let framed = framing::frame(json, self.framing);
        self.effects.push_back(Effect::Send(framed));
    }

    pub(super) fn send_error(&mut self, id: Option<&RequestId>, error: &ErrorObject) {
        let mut out = Vec::with_capacity(128);
        jsonrpc::write_error(&mut out, id, error);
        match id {
            Some(id) => self.respond_json(id, out),
            None => self.send_json(out),
        }
    }

    pub(super) fn send_result<T: Serialize + ?Sized>(&mut self, id: &RequestId, result: &T) {
        let mut out = Vec::with_capacity(256);
        match jsonrpc::write_result(&mut out, id, result) {
            Ok(()) => self.respond_json(id, out),
            Err(e) => self.send_error(Some(id), &e),
        }
    }

    pub(super) fn send_notification<T: Serialize + ?Sized>(&mut self, method: &str, params: &T) {
        let mut out = Vec::with_capacity(128);
        match jsonrpc::write_notification(&mut out, method, params) {
            Ok(()) => self.send_json(out),
            Err(e) => note!(self, Error, "could not write a {method} notification: {e}"),
        }
    }

    /// Sends a response, or holds it for the batch it belongs to: the batch being read if it
    /// holds the id, else a batch waiting for that id's work, once the work has ended (while
    /// it runs, a response with its id answers another request that reuses the id).
    pub(super) fn respond_json(&mut self, id: &RequestId, json: Vec<u8>) {
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
    pub(super) fn start_admitted(&mut self, starts: Vec<Admitted>) {
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
