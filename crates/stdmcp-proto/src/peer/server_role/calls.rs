//! Server role: the table of requests whose work is running, with cancellation, progress
//! (strictly increasing, never after the response or the cancel; MCP 2025-11-25, Utilities: Cancellation and Progress),
//! heartbeats and request-scoped log messages (§4.3).

use crate::peer::diag::note;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::human;
use crate::jsonrpc::{ErrorCode, ErrorObject, RequestId};
use crate::mcp::{self, gate, method, CallToolResult, LogLevel, ProgressParams};
use crate::peer::call::{CallState, Inflight};
use crate::peer::effect::Effect;
use crate::peer::front::Peer;
use crate::peer::timers::Kind;
use crate::peer::work::Reply;

impl Peer {
    /// Reports the end of a request's work (server role). Nothing is sent when the request
    /// was cancelled; the entry is dropped either way, and the oldest waiting request (if
    /// any) starts running at `now`.
    pub fn finish(&mut self, now: Instant, id: &RequestId, outcome: Reply) {
        if self.jobs.waits.contains(id) {
            note!(self, Debug, "finish for {id}, a job_wait, ignored");
            return;
        }
        let Some(call) = self.calls.remove(id) else {
            note!(self, Debug, "finish for unknown request {id}");
            return;
        };
        self.timers.stop_call(id);
        let max = self.config.max_running;
        let starts = self
            .calls
            .release(now, id, call.running_since().map(|_| call.slots), max);
        self.forget_aliases(id);
        self.answer(now, call, outcome);
        self.start_admitted(starts);
    }

    /// Answers a call taken out of the table: its request, its job, or nobody (cancelled).
    fn answer(&mut self, now: Instant, call: Inflight, outcome: Reply) {
        if let Some(job) = call.job() {
            // Answered already: the outcome goes into the job store.
            return self.job_finished(now, job, outcome);
        }
        if let CallState::Parked(park)
        | CallState::Cancelled {
            park: Some(park), ..
        } = call.state
        {
            // Ended while waiting for the client's retry: the request was answered already.
            self.release_park(&RequestId::number(park));
            note!(
                self,
                Debug,
                "request {} ended while parked: its result is dropped",
                call.wire_id
            );
            return;
        }
        // A call continued by a retried request answers that request.
        let id = &call.wire_id;
        if call.is_cancelled() {
            note!(
                self,
                Debug,
                "request {id} was cancelled: its result is dropped"
            );
            self.forget_in_batches(id);
            return;
        }
        match outcome {
            Reply::Tool(result) => {
                let result = gate::call_result(result, call.version);
                if call.stateless {
                    self.send_stateless_result(id, &result, false);
                } else {
                    self.send_result(id, &result);
                }
            }
            Reply::Value(v) => {
                if call.stateless {
                    self.send_stateless_result(id, &v, call.cacheable);
                } else {
                    self.send_result(id, &v);
                }
            }
            Reply::NotFound(uri) => {
                let code = if call.stateless {
                    ErrorCode::INVALID_PARAMS
                } else {
                    ErrorCode::RESOURCE_NOT_FOUND
                };
                self.send_error(Some(id), &resource_not_found(code, &uri));
            }
            Reply::Error(e) => self.send_error(Some(id), &e),
        }
    }

    /// Cancels a request's work (from `notifications/cancelled` or shutdown): marks it, emits
    /// [`Effect::Cancel`], and from now on nothing is sent for it.
    pub(in crate::peer) fn cancel_call(&mut self, id: &RequestId) -> bool {
        if self.jobs.waits.remove(id).is_some() {
            // A job_wait: only the wait ends, never its job.
            self.timers.stop_call(id);
            return true;
        }
        match self.calls.get_mut(id) {
            // Still waiting in line: it has no work to stop, and leaves now, unanswered.
            Some(call) if call.running_since().is_none() => {
                self.withdraw(id);
                true
            }
            Some(call) if !call.is_cancelled() => {
                call.state = match &call.state {
                    CallState::Parked(park) => CallState::Cancelled {
                        job: None,
                        park: Some(*park),
                    },
                    CallState::Job(job) => CallState::Cancelled {
                        job: Some(job.clone()),
                        park: None,
                    },
                    _ => CallState::Cancelled {
                        job: None,
                        park: None,
                    },
                };
                call.deadline = None; // its work is being stopped already
                self.effects.push_back(Effect::Cancel(id.clone()));
                self.sync_call_timers(id);
                true
            }
            _ => false,
        }
    }

    /// Takes call `id`, cancelled while it waited in line, out of the table: it never runs.
    fn withdraw(&mut self, id: &RequestId) {
        let Some(call) = self.calls.withdraw(id) else {
            return;
        };
        self.timers.stop_call(id);
        self.forget_aliases(id);
        self.forget_in_batches(&call.wire_id);
        note!(
            self,
            Debug,
            "request {id} was cancelled while queued: it never runs"
        );
    }

    /// Cancels every request in flight (shutdown).
    pub fn cancel_all(&mut self) {
        let ids: Vec<RequestId> = self
            .calls
            .keys()
            .chain(self.jobs.waits.ids())
            .cloned()
            .collect();
        for id in ids {
            self.cancel_call(&id);
        }
    }

    /// Reports progress of a request's work. Dropped unless the request carries a progress
    /// token, is still running and `progress` is greater than the last value sent.
    pub fn progress(
        &mut self,
        now: Instant,
        id: &RequestId,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> bool {
        if let Some(m) = &message {
            self.set_status(now, id, m.clone());
        }
        self.emit_progress(now, id, (progress, total), message)
    }

    /// Queues a progress notification of `id`: `(progress, total)` and the message.
    fn emit_progress(
        &mut self,
        now: Instant,
        id: &RequestId,
        (progress, total): (f64, Option<f64>),
        message: Option<String>,
    ) -> bool {
        let Some(call) = self.calls.get_mut(id) else {
            return false;
        };
        let Some(token) = call.live_token().cloned() else {
            return false;
        };
        if !progress.is_finite() || call.last_progress.is_some_and(|last| progress <= last) {
            note!(
                self,
                Debug,
                "progress {progress} for {id} dropped: it must increase"
            );
            return false;
        }
        call.last_progress = Some(progress);
        call.last_total = total;
        call.last_report = now;
        let version = call.version;
        let heartbeat = now.checked_add(self.config.heartbeat);
        self.timers.set_call(Kind::Heartbeat, id, heartbeat);
        let params = ProgressParams {
            progress_token: token,
            progress,
            total,
            message,
        };
        self.push_progress(id, gate::progress(params, version))
    }

    /// Queues the progress notification of request `id`.
    pub(in crate::peer) fn push_progress(
        &mut self,
        id: &RequestId,
        params: ProgressParams,
    ) -> bool {
        let mut out = Vec::with_capacity(128);
        match crate::jsonrpc::write_notification(&mut out, method::PROGRESS, &params) {
            Ok(()) => {
                let bytes = crate::framing::frame(out, self.framing);
                self.effects.push_back(Effect::Progress {
                    id: id.clone(),
                    bytes,
                });
                true
            }
            Err(e) => {
                note!(self, Error, "could not write a progress notification: {e}");
                false
            }
        }
    }

    /// Sets the message the next heartbeat of a request carries (e.g. the last output line),
    /// without sending anything now.
    pub fn set_status(&mut self, now: Instant, id: &RequestId, message: String) {
        self.note_line(now, id, &message);
        if let Some(call) = self.calls.get_mut(id) {
            call.status = Some(message);
        }
    }

    /// Sends a log message for a request's work, as its era allows: in the handshake era
    /// after `logging/setLevel` at or above that level; in 2026-07-28 only when the request
    /// carried a log level (MCP 2025-11-25, Server Utilities: Logging). Returns whether it was sent.
    pub fn log(
        &mut self,
        id: &RequestId,
        level: LogLevel,
        logger: Option<&str>,
        data: Value,
    ) -> bool {
        let Some(call) = self
            .calls
            .get(id)
            // A job's request was answered: nothing more is sent for it.
            .filter(|c| c.is_live())
        else {
            return false;
        };
        let threshold = if call.stateless {
            call.log_level
        } else {
            self.handshake.as_ref().and_then(|s| s.log_level)
        };
        if threshold.is_none_or(|t| level < t) {
            return false;
        }
        let mut params = json!({ "level": level, "data": data });
        if let Some(logger) = logger {
            params["logger"] = Value::String(logger.to_owned());
        }
        self.send_notification(method::MESSAGE, &params);
        true
    }

    /// Brings the timers of call `id` in line with its record: its deadline, its background
    /// delay (unless cancelled or parked), and its next heartbeat (while it has a live
    /// progress token). A call no longer in the table has none.
    pub(in crate::peer) fn sync_call_timers(&mut self, id: &RequestId) {
        let Some(c) = self.calls.get(id) else {
            return self.timers.stop_call(id);
        };
        let background = c.background_at.filter(|_| c.may_background());
        // A heartbeat interval too long for the clock means no heartbeat.
        let heartbeat = c
            .live_token()
            .and(c.last_report.checked_add(self.config.heartbeat));
        let deadline = c.deadline;
        self.timers.set_call(Kind::Deadline, id, deadline);
        self.timers.set_call(Kind::Background, id, background);
        self.timers.set_call(Kind::Heartbeat, id, heartbeat);
    }

    /// The deadline of call `id` passed: [`Effect::Deadline`] for a running call (once). A
    /// call still waiting for a free slot is answered at once instead, as one that never
    /// started ([`Effect::Unstarted`]): time spent queued counts towards its time limit.
    pub(in crate::peer) fn fire_deadline(&mut self, now: Instant, id: &RequestId) {
        let Some(call) = self.calls.get_mut(id) else {
            return;
        };
        let Some(deadline) = call.deadline.take() else {
            return;
        };
        if call.running_since().is_none() {
            self.end_unstarted(now, id, deadline);
        } else {
            self.effects.push_back(Effect::Deadline(id.clone()));
        }
    }

    /// Ends a call whose deadline passed while it waited for a free slot: its work is never
    /// started, and its request (or its job) is answered with a tool error that says so.
    fn end_unstarted(&mut self, now: Instant, id: &RequestId, deadline: Instant) {
        let Some(call) = self.calls.remove(id) else {
            return;
        };
        self.timers.stop_call(id);
        let max = self.config.max_running;
        let starts = self.calls.release(now, id, None, max);
        self.forget_aliases(id);
        self.effects.push_back(Effect::Unstarted(id.clone()));
        if let Some(why) = call.refused() {
            // It waited for a thread, not for a slot.
            let why = format!(
                "it was still waiting for a worker thread when its deadline passed (none \
                 could be started: {why})"
            );
            self.answer(now, call, Reply::Error(crate::peer::front::refusal(&why)));
            return self.start_admitted(starts);
        }
        let tool = call
            .tool
            .and_then(|t| self.catalog.tools.get(t))
            .map_or("The call", |t| t.name.as_str());
        let limit = deadline.saturating_duration_since(call.started);
        let running = self.calls.running();
        let calls = if running == 1 { "call" } else { "calls" };
        let text = format!(
            "{tool} never started: it waited {} for a free slot behind {running} running {calls} \
             (at most {} at once), and its time limit of {} counts time spent queued. No \
             process was started. Try again when fewer calls are running.",
            human::elapsed(now.saturating_duration_since(call.started)),
            self.config.max_running,
            human::setting(limit),
        );
        note!(
            self,
            Info,
            "request {id} ({tool}) reached its deadline before it started"
        );
        self.answer(now, call, Reply::Tool(CallToolResult::error(text)));
        self.start_admitted(starts);
    }

    /// Sends the heartbeat progress of call `id`, whose timer fired. Without a tool-given
    /// total the value is the elapsed seconds; with one, it creeps a thousandth of the
    /// remaining way towards it, so it always increases and never passes the total. The
    /// message is the call's status, how long it has run, or, for a call waiting for a free
    /// slot, how long it has waited and how many wait before it.
    pub(in crate::peer) fn heartbeat(&mut self, now: Instant, id: &RequestId) {
        let ahead = self.calls.place_in_line(id);
        let max_running = self.config.max_running;
        let Some(call) = self.calls.get_mut(id) else {
            return;
        };
        call.last_report = now;
        let elapsed = now.duration_since(call.started);
        let (value, total) = match (call.last_progress, call.last_total) {
            (Some(last), Some(total)) if total > last => {
                (last + (total - last) / 1000.0, Some(total))
            }
            (_, Some(_)) => return self.sync_call_timers(id),
            (last, None) => {
                let secs = (elapsed.as_secs_f64() * 1000.0).round() / 1000.0;
                (last.map_or(secs, |l| secs.max(l + 0.001)), None)
            }
        };
        let message = match (call.running_since(), ahead) {
            (Some(since), _) => call
                .status
                .clone()
                .unwrap_or_else(|| format!("running for {}", human::elapsed(now - since))),
            (None, ahead) => queued_message(elapsed, ahead.unwrap_or(0), max_running),
        };
        self.emit_progress(now, id, (value, total), Some(message));
        self.sync_call_timers(id);
    }

    pub(in crate::peer) fn check_log_level(
        params: &Value,
    ) -> Result<Option<LogLevel>, ErrorObject> {
        match params
            .pointer("/_meta")
            .and_then(|m| m.get(mcp::meta_key::LOG_LEVEL))
        {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => LogLevel::parse(s).map(Some).ok_or_else(|| {
                let s = crate::jsonrpc::quote(s);
                ErrorObject::invalid_params(format!("Unknown log level: {s}"))
            }),
            Some(_) => Err(ErrorObject::invalid_params(
                "The log level must be a string",
            )),
        }
    }
}

/// The error for a resource the server does not have, with its URI (quoted, bounded).
pub(super) fn resource_not_found(code: ErrorCode, uri: &str) -> ErrorObject {
    let uri = crate::jsonrpc::quote(uri);
    ErrorObject::new(code, format!("Resource not found: {uri}")).with_data(json!({ "uri": uri }))
}

fn queued_message(waited: Duration, ahead: usize, max_running: usize) -> String {
    let line = match ahead {
        0 => "next in line".to_owned(),
        1 => "1 call ahead".to_owned(),
        n => format!("{n} calls ahead"),
    };
    let calls = if max_running == 1 {
        "call runs"
    } else {
        "calls run"
    };
    format!(
        "queued for {} ({line}; at most {max_running} {calls} at once)",
        human::elapsed(waited)
    )
}
