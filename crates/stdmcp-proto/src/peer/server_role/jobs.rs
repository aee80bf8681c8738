//! Server role: jobs (README "Long runs"): a call whose background delay passed is answered
//! with a job status (or a task) while its work goes on, and its outcome goes into the job
//! store (`peer::jobs`); the built-in tools over the store, `job_wait`, `job_cancel`
//! and `jobs`, are answered here. `job_wait` is a pending wait of its own (not a call: it
//! holds no slot and no worker), answered when its job ends or its time is up, with
//! heartbeats that carry the job's latest output line; a cancel of it ends the wait only.

use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use crate::jsonrpc::{ErrorObject, Request, RequestId};
use crate::mcp::{gate, CallToolResult, ClientCapabilities, Content, ProgressParams};
use crate::peer::call::CallState;
use crate::peer::diag::note;
use crate::peer::front::Peer;
use crate::peer::jobs::{
    job_facts, push_line, Job, JobState, Wait, JOB_META, WAIT_DEFAULT, WAIT_MAX,
};
use crate::peer::terms::{declares_tasks, progress_token, Terms};
use crate::peer::timers::Kind;
use crate::peer::work::Reply;

impl Peer {
    /// The wall-clock time at `now`, from the clock reading taken with the configuration.
    pub(in crate::peer) fn wall(&self, now: Instant) -> SystemTime {
        let (instant, wall) = self.origin.unwrap_or((now, SystemTime::UNIX_EPOCH));
        wall + now.saturating_duration_since(instant)
    }

    /// Room for one more job: the oldest ended job gives way when the store is full.
    fn job_room(&mut self) -> bool {
        match self.jobs.make_room(self.config.max_jobs) {
            Ok(None) => true,
            Ok(Some(gone)) => {
                self.timers.set_job(&gone, None);
                note!(
                    self,
                    Info,
                    "job {gone} forgotten early: the job store is full"
                );
                true
            }
            Err(()) => false,
        }
    }

    /// Turns call `id`, whose background delay passed, into a job: its request is answered
    /// with the job's status (or a task), its work goes on.
    pub(in crate::peer) fn make_job(&mut self, now: Instant, id: &RequestId) {
        if !self.job_room() {
            if let Some(call) = self.calls.get_mut(id) {
                call.background_at = None;
            }
            self.sync_call_timers(id);
            note!(
                self,
                Warn,
                "request {id} stays a plain call: {} jobs are running already (STDMCP_MAX_JOBS)",
                self.config.max_jobs
            );
            return;
        }
        let job_id = self.jobs.new_id();
        let wall = self.wall(now);
        let Some(call) = self.calls.get_mut(id) else {
            return;
        };
        call.background_at = None;
        call.state = CallState::Job(job_id.clone());
        let tool = call
            .tool
            .and_then(|t| self.catalog.tools.get(t))
            .map(|t| t.name.clone())
            .unwrap_or_default();
        // The capabilities of the latest retry, for a call resumed after asking the client.
        let tasks = call.stateless && declares_tasks(&call.caps);
        let (wire_id, version, stateless) = (call.wire_id.clone(), call.version, call.stateless);
        let job = Job {
            id: job_id.clone(),
            key: id.clone(),
            tool,
            started: call.started,
            created_wall: wall,
            updated_wall: wall,
            state: JobState::Working,
            ended: None,
            lines: call.recent.clone(),
            input: None,
        };
        note!(self, Info, "request {id} ({}) became {job_id}", job.tool);
        self.jobs.add(job);
        // The answer is the call's own response: taken out of the call table meanwhile, so
        // that a 2025-03-26 batch holding the request takes it (a response for an id in the
        // table is otherwise sent alone, as that of another request reusing the id).
        let task = tasks.then(|| self.task_fields(now, &job_id));
        let result = gate::call_result(self.job_status(now, &job_id, false), version);
        let inflight = self.calls.remove(id);
        if let Some(task) = task {
            self.send_stateless_typed(&wire_id, &task, false, "task");
        } else if stateless {
            self.send_stateless_result(&wire_id, &result, false);
        } else {
            self.send_result(&wire_id, &result);
        }
        if let Some(inflight) = inflight {
            self.calls.insert(id.clone(), inflight);
        }
        self.sync_call_timers(id);
    }

    /// A job's call ended: its outcome goes into the store (a cancelled job stays cancelled),
    /// and `job_wait`s on it are answered.
    pub(in crate::peer) fn job_finished(&mut self, now: Instant, job_id: &str, outcome: Reply) {
        let wall = self.wall(now);
        let working = self
            .jobs
            .get(job_id)
            .is_some_and(|j| j.state == JobState::Working);
        if working {
            let state = match outcome {
                Reply::Tool(r) => JobState::Completed(r),
                Reply::Error(e) => JobState::Failed(e),
                other => JobState::Failed(ErrorObject::internal(format!(
                    "unexpected outcome of a tool call: {other:?}"
                ))),
            };
            let name = state.name();
            self.jobs.end(job_id, state, now, wall);
            note!(self, Info, "{job_id} ended: {name}");
            let expiry = now.checked_add(self.config.job_retention);
            self.timers.set_job(job_id, expiry);
        }
        self.answer_waits(now, job_id);
    }

    /// Stops a job as a cancel would (`job_cancel`, `tasks/cancel`): its work is cancelled,
    /// its process group killed, and it is `cancelled` from now on. False if it has ended.
    pub(in crate::peer) fn cancel_job(&mut self, now: Instant, job_id: &str) -> bool {
        let wall = self.wall(now);
        if !self.jobs.end(job_id, JobState::Cancelled, now, wall) {
            return false;
        }
        let expiry = now.checked_add(self.config.job_retention);
        self.timers.set_job(job_id, expiry);
        let key = self.jobs.get(job_id).map(|j| j.key.clone());
        if let Some(key) = key {
            self.cancel_call(&key);
        }
        self.answer_waits(now, job_id);
        true
    }

    /// The latest output line of a call's job or of the call itself.
    pub(in crate::peer) fn note_line(&mut self, now: Instant, id: &RequestId, line: &str) {
        let Some(call) = self.calls.get_mut(id) else {
            return;
        };
        push_line(&mut call.recent, line);
        if let Some(job_id) = call.job().cloned() {
            let wall = self.wall(now);
            if let Some(job) = self.jobs.get_mut(&job_id) {
                push_line(&mut job.lines, line);
                job.updated_wall = wall;
            }
        }
    }

    /// True while a working job's call still waits for a free slot (its work has not started).
    pub(in crate::peer) fn job_queued(&self, job: &Job) -> bool {
        job.state == JobState::Working
            && self
                .calls
                .get(&job.key)
                .is_some_and(|c| c.running_since().is_none())
    }

    /// The answer that says a job is not done yet (or how it ended, for `jobs`): text for the
    /// model, with what to do next, and the same facts under `_meta["stdmcp/job"]`.
    pub(in crate::peer) fn job_status(
        &self,
        now: Instant,
        job_id: &str,
        waited: bool,
    ) -> CallToolResult {
        let Some(job) = self.jobs.get(job_id) else {
            return CallToolResult::error(format!("No job {job_id}"));
        };
        let elapsed = job.elapsed(now);
        // Tenths below 10 s, so that a short delay does not read "after 0 s".
        let secs = match elapsed < Duration::from_secs(10) {
            true => format!("{:.1}", elapsed.as_secs_f64()),
            false => elapsed.as_secs().to_string(),
        };
        let doing = if self.job_queued(job) {
            let n = self.config.max_running;
            let calls = if n == 1 { "call runs" } else { "calls run" };
            format!("waiting for a free slot after {secs} s (at most {n} {calls} at once)")
        } else {
            format!("still running after {secs} s")
        };
        let mut text = if waited {
            format!("Job {job_id} (tool {}) is {doing}.", job.tool)
        } else {
            format!(
                "Tool {} is {doing}, so it goes on in the background as job {job_id}.",
                job.tool
            )
        };
        if !job.lines.is_empty() {
            text.push_str("\nLatest output:\n");
            for l in &job.lines {
                text.push_str("  ");
                text.push_str(l);
                text.push('\n');
            }
        } else {
            text.push('\n');
        }
        let retention = job_retention_text(self.config.job_retention);
        text.push_str(&format!(
            "Call job_wait {{\"id\": \"{job_id}\"}} to wait for its result (it returns after at most {} s; call it again while the job runs), or job_cancel {{\"id\": \"{job_id}\"}} to stop it. Jobs end when this server stops; a finished job's result is kept for {retention}.",
            WAIT_DEFAULT.as_secs()
        ));
        let mut r = CallToolResult::new(vec![Content::text(text)]);
        let mut meta = serde_json::Map::new();
        meta.insert(JOB_META.into(), job_facts(job, now));
        r.meta = Some(meta);
        r
    }
}

impl Peer {
    /// Answers a call of a job tool; false if `tool` is not one.
    pub(in crate::peer) fn job_tool(
        &mut self,
        now: Instant,
        req: &Request,
        terms: &Terms,
        tool: usize,
        args: &Value,
    ) -> bool {
        let Some(t) = self.catalog.job_tools else {
            return false;
        };
        let id = args.get("id").and_then(Value::as_str).unwrap_or_default();
        if tool == t.wait {
            let secs = args.get("seconds").and_then(Value::as_u64);
            let wait = secs.map_or(WAIT_DEFAULT, Duration::from_secs).min(WAIT_MAX);
            self.job_wait(now, req, terms, id, wait);
        } else if tool == t.cancel {
            let r = self.job_cancel(now, id);
            self.answer_tool(&req.id, terms, r);
        } else if tool == t.list {
            let r = self.job_list(now);
            self.answer_tool(&req.id, terms, r);
        } else {
            return false;
        }
        true
    }

    fn answer_tool(&mut self, id: &RequestId, terms: &Terms, r: CallToolResult) {
        let r = gate::call_result(r, terms.version);
        if terms.stateless {
            self.send_stateless_result(id, &r, false);
        } else {
            self.send_result(id, &r);
        }
    }

    fn unknown_job(&self, id: &str) -> CallToolResult {
        CallToolResult::error(format!(
            "No job {}: the id is wrong, or the job ended more than {} ago and its result is gone, or the server was restarted. `jobs` lists the jobs there are.",
            crate::jsonrpc::quote(id),
            crate::human::setting(self.config.job_retention)
        ))
    }

    fn job_wait(&mut self, now: Instant, req: &Request, terms: &Terms, id: &str, wait: Duration) {
        let Some(job) = self.jobs.get(id) else {
            let r = self.unknown_job(id);
            return self.answer_tool(&req.id, terms, r);
        };
        if job.state != JobState::Working {
            let r = self.job_result(now, id);
            return self.answer_tool(&req.id, terms, r);
        }
        let progress_token = progress_token(&req.params);
        let wait = Wait {
            job: id.to_owned(),
            until: now + wait,
            version: terms.version,
            stateless: terms.stateless,
            progress_token,
            started: now,
            last_report: now,
            last_progress: None,
        };
        // Holds no slot and no worker: it is only a pending answer.
        self.timers
            .set_call(Kind::WaitEnd, &req.id, Some(wait.until));
        let heartbeat = wait.next_heartbeat(self.config.heartbeat);
        self.timers.set_call(Kind::Heartbeat, &req.id, heartbeat);
        self.jobs.waits.add(req.id.clone(), wait);
    }

    /// What `job_wait` returns for a job: its result in the tool's own shape once it ended,
    /// else its status.
    fn job_result(&self, now: Instant, id: &str) -> CallToolResult {
        let Some(job) = self.jobs.get(id) else {
            return self.unknown_job(id);
        };
        match &job.state {
            JobState::Working => self.job_status(now, id, true),
            JobState::Completed(r) => r.clone(),
            JobState::Failed(e) => CallToolResult::error(format!(
                "Job {id} (tool {}) failed: {}",
                job.tool, e.message
            )),
            JobState::Cancelled => CallToolResult::error(format!(
                "Job {id} (tool {}) was cancelled; its processes were stopped.",
                job.tool
            )),
        }
    }

    fn job_cancel(&mut self, now: Instant, id: &str) -> CallToolResult {
        let Some(job) = self.jobs.get(id) else {
            return self.unknown_job(id);
        };
        let (tool, state) = (job.tool.clone(), job.state.name());
        if self.cancel_job(now, id) {
            CallToolResult::text(format!(
                "Job {id} (tool {tool}) is cancelled: its work and the processes it started are being stopped."
            ))
        } else {
            CallToolResult::text(format!(
                "Job {id} (tool {tool}) had ended already ({state}); nothing to stop. job_wait returns its result."
            ))
        }
    }

    fn job_list(&self, now: Instant) -> CallToolResult {
        if self.jobs.is_empty() {
            return CallToolResult::text("No jobs.");
        }
        let mut text = String::new();
        for j in self.jobs.iter() {
            text.push_str(&format!(
                "{}  {}  {}  {}",
                j.id,
                j.tool,
                j.status(),
                crate::human::elapsed(j.elapsed(now))
            ));
            if self.job_queued(j) {
                text.push_str("  waiting for a free slot");
            } else if let Some(l) = j.lines.back() {
                text.push_str("  ");
                text.push_str(l);
            }
            text.push('\n');
        }
        let facts: Vec<Value> = self.jobs.iter().map(|j| job_facts(j, now)).collect();
        let mut r = CallToolResult::text(text);
        r.structured_content = Some(json!({ "jobs": facts }));
        r
    }

    /// Answers the `job_wait`s of a job that ended.
    pub(in crate::peer) fn answer_waits(&mut self, now: Instant, job_id: &str) {
        for id in self.jobs.waits.on(job_id) {
            self.end_wait(now, &id);
        }
    }

    /// Answers `job_wait` `id` (its job ended or its time is up) with its job's state.
    pub(in crate::peer) fn end_wait(&mut self, now: Instant, id: &RequestId) {
        let Some(wait) = self.jobs.waits.remove(id) else {
            return;
        };
        self.timers.stop_call(id);
        let r = self.job_result(now, &wait.job);
        let terms = Terms {
            version: wait.version,
            stateless: wait.stateless,
            caps: ClientCapabilities::default(),
            log_level: None,
        };
        self.answer_tool(id, &terms, r);
    }

    /// Sends the heartbeat progress of `job_wait` `id`, whose timer fired: the elapsed
    /// seconds, with its job's latest output line.
    pub(in crate::peer) fn wait_heartbeat(&mut self, now: Instant, id: &RequestId) {
        let message = self.wait_line(id, now);
        let interval = self.config.heartbeat;
        let Some(wait) = self.jobs.waits.get_mut(id) else {
            return;
        };
        let message = message.unwrap_or_else(|| {
            let elapsed = now.saturating_duration_since(wait.started);
            format!("running for {}", crate::human::elapsed(elapsed))
        });
        wait.last_report = now;
        let secs = now.duration_since(wait.started).as_secs_f64();
        let secs = (secs * 1000.0).round() / 1000.0;
        let value = wait.last_progress.map_or(secs, |l| secs.max(l + 0.001));
        let token = wait.progress_token.clone();
        if let Some(token) = token.filter(|_| wait.last_progress.is_none_or(|l| value > l)) {
            wait.last_progress = Some(value);
            let params = ProgressParams {
                progress_token: token,
                progress: value,
                total: None,
                message: Some(message),
            };
            let params = gate::progress(params, wait.version);
            self.push_progress(id, params);
        }
        let next = self
            .jobs
            .waits
            .get(id)
            .and_then(|w| w.next_heartbeat(interval));
        self.timers.set_call(Kind::Heartbeat, id, next);
    }

    /// The heartbeat message of a `job_wait`: its job's latest output line.
    pub(in crate::peer) fn wait_line(&self, id: &RequestId, now: Instant) -> Option<String> {
        let wait = self.jobs.waits.get(id)?;
        let job = self.jobs.get(&wait.job)?;
        let elapsed = crate::human::elapsed(job.elapsed(now));
        Some(match job.lines.back() {
            _ if self.job_queued(job) => {
                format!("{} waiting for a free slot for {elapsed}", job.id)
            }
            Some(l) => l.clone(),
            None => format!("{} running for {elapsed}", job.id),
        })
    }
}

fn job_retention_text(d: Duration) -> String {
    let s = d.as_secs();
    if s.is_multiple_of(60) && s >= 60 && d.subsec_nanos() == 0 {
        format!("{} min", s / 60)
    } else {
        crate::human::setting(d)
    }
}
