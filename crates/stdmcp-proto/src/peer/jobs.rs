//! Server role: jobs, the calls that outlive the client's patience (README "Long runs").
//!
//! A tool with a background delay ([`super::Catalog::tool_background`]) that has not finished
//! when the delay passes becomes a job: the request is answered at once (a job status for
//! every client, a task for a 2026-07-28 client that declared the tasks extension), and the
//! work goes on under the same entry of the call table, so it keeps its deadline, its slot,
//! its cancel token and its process group, and ends with the server like any call. The
//! client's `notifications/cancelled` for the answered request no longer reaches it; only
//! `job_cancel`, `tasks/cancel` and shutdown do. The result is kept in the store until the
//! retention time after the job ended; `job_wait` ([`super::job_tools`]) and `tasks/get`
//! ([`super::tasks`]) read it from there.

use super::diag::note;
use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::call::CallState;
use super::Peer;
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::mcp::{gate, CallToolResult, Content};

/// `job_wait`'s default wait, well below the shortest client timeout (about 60 s).
pub const WAIT_DEFAULT: Duration = Duration::from_secs(40);
/// The longest wait `job_wait` accepts.
pub const WAIT_MAX: Duration = Duration::from_secs(50);

/// Output lines a job keeps (the latest ones).
pub const JOB_LINES: usize = 5;

/// The `_meta` key of a job status result.
pub const JOB_META: &str = "stdmcp/job";

/// Where a job is.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum JobState {
    Working,
    /// The tool answered (an `isError` result is still `Completed`).
    Completed(CallToolResult),
    /// The work ended with a JSON-RPC error (its handler panicked, say).
    Failed(ErrorObject),
    Cancelled,
}

impl JobState {
    pub fn name(&self) -> &'static str {
        match self {
            JobState::Working => "working",
            JobState::Completed(_) => "completed",
            JobState::Failed(_) => "failed",
            JobState::Cancelled => "cancelled",
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Job {
    pub id: String,
    /// The key of its call in the call table while it works.
    pub key: RequestId,
    pub tool: String,
    /// When the call arrived (elapsed time counts from there).
    pub started: Instant,
    pub created_wall: SystemTime,
    pub updated_wall: SystemTime,
    pub state: JobState,
    /// When it ended: the retention time counts from there.
    pub ended: Option<Instant>,
    /// Its latest output lines, oldest first.
    pub lines: VecDeque<String>,
    /// A task's questions for the client, while its work waits for the answers.
    pub input: Option<super::task_input::TaskInput>,
}

impl Job {
    /// The task status: `input_required` while a working task waits for answers.
    pub fn status(&self) -> &'static str {
        match (&self.state, &self.input) {
            (JobState::Working, Some(_)) => "input_required",
            (state, _) => state.name(),
        }
    }

    pub fn elapsed(&self, now: Instant) -> Duration {
        self.ended
            .unwrap_or(now)
            .saturating_duration_since(self.started)
    }
}

/// The jobs of a server.
#[derive(Debug, Default)]
pub(super) struct Store {
    pub jobs: Vec<Job>,
    next: u64,
}

impl Store {
    pub fn get(&self, id: &str) -> Option<&Job> {
        self.jobs.iter().find(|j| j.id == id)
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut Job> {
        self.jobs.iter_mut().find(|j| j.id == id)
    }

    /// Forgets a job (its retention is over).
    pub fn forget(&mut self, id: &str) {
        self.jobs.retain(|j| j.id != id);
    }

    /// Makes room for one more job when `max` are kept: the oldest ended job gives way (its
    /// id is returned). `Err(())` when every job kept still works.
    pub fn make_room(&mut self, max: usize) -> Result<Option<String>, ()> {
        if self.jobs.len() < max {
            return Ok(None);
        }
        match self.jobs.iter().position(|j| j.ended.is_some()) {
            Some(i) => Ok(Some(self.jobs.remove(i).id)),
            None => Err(()),
        }
    }

    /// Ends working job `id` in `state` at `now` (`wall`): true if it was working (an ended
    /// job stays as it ended).
    pub fn end(&mut self, id: &str, state: JobState, now: Instant, wall: SystemTime) -> bool {
        let Some(job) = self.get_mut(id).filter(|j| j.state == JobState::Working) else {
            return false;
        };
        job.state = state;
        job.ended = Some(now);
        job.updated_wall = wall;
        true
    }

    fn new_id(&mut self) -> String {
        self.next += 1;
        format!("job-{}", self.next)
    }
}

/// Remembers one more output line of a call (kept for its job).
pub(super) fn push_line(lines: &mut VecDeque<String>, line: &str) {
    if lines.back().is_some_and(|l| l == line) {
        return;
    }
    if lines.len() == JOB_LINES {
        lines.pop_front();
    }
    lines.push_back(line.to_owned());
}

impl Peer {
    /// The wall-clock time at `now`, from the clock reading taken with the configuration.
    pub(super) fn wall(&self, now: Instant) -> SystemTime {
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
    pub(super) fn make_job(&mut self, now: Instant, id: &RequestId) {
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
        let tasks = call.modern && super::terms::declares_tasks(&call.caps);
        let (wire_id, version, modern) = (call.wire_id.clone(), call.version, call.modern);
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
        self.jobs.jobs.push(job);
        // The answer is the call's own response: taken out of the call table meanwhile, so
        // that a 2025-03-26 batch holding the request takes it (a response for an id in the
        // table is otherwise sent alone, as that of another request reusing the id).
        let task = tasks.then(|| self.task_fields(now, &job_id));
        let result = gate::call_result(self.job_status(now, &job_id, false), version);
        let inflight = self.calls.remove(id);
        if let Some(task) = task {
            self.send_modern_typed(&wire_id, &task, false, "task");
        } else if modern {
            self.send_modern_result(&wire_id, &result, false);
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
    pub(super) fn job_finished(&mut self, now: Instant, job_id: &str, outcome: super::Reply) {
        let wall = self.wall(now);
        let working = self
            .jobs
            .get(job_id)
            .is_some_and(|j| j.state == JobState::Working);
        if working {
            let state = match outcome {
                super::Reply::Tool(r) => JobState::Completed(r),
                super::Reply::Error(e) => JobState::Failed(e),
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
    pub(super) fn cancel_job(&mut self, now: Instant, job_id: &str) -> bool {
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
    pub(super) fn note_line(&mut self, now: Instant, id: &RequestId, line: &str) {
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
    pub(super) fn job_queued(&self, job: &Job) -> bool {
        job.state == JobState::Working
            && self
                .calls
                .get(&job.key)
                .is_some_and(|c| c.running_since.is_none())
    }

    /// The answer that says a job is not done yet (or how it ended, for `jobs`): text for the
    /// model, with what to do next, and the same facts under `_meta["stdmcp/job"]`.
    pub(super) fn job_status(&self, now: Instant, job_id: &str, waited: bool) -> CallToolResult {
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

/// The facts of a job as JSON (`jobs`, `_meta`).
pub(super) fn job_facts(job: &Job, now: Instant) -> Value {
    json!({
        "id": job.id,
        "tool": job.tool,
        "state": job.status(),
        "elapsedSeconds": job.elapsed(now).as_secs(),
        "lines": job.lines,
    })
}

fn job_retention_text(d: Duration) -> String {
    let s = d.as_secs();
    if s.is_multiple_of(60) && s >= 60 && d.subsec_nanos() == 0 {
        format!("{} min", s / 60)
    } else {
        crate::human::setting(d)
    }
}
