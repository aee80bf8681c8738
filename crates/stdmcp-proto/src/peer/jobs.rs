//! The job store of the server role: jobs, the calls that outlive the client's patience
//! (README "Long runs"), with their outcomes, their latest output lines, a task's questions
//! for the client ([`TaskInput`]) and the pending `job_wait`s ([`Wait`]). A sub-machine of the
//! peer: it knows nothing of effects; the server role (`server_role::jobs`) turns a call
//! into a job, answers the job tools and `tasks/*` from here.
//!
//! A job's work goes on under the same entry of the call table, so it keeps its deadline,
//! its slot, its cancel token and its process group, and ends with the server like any call.
//! Its result is kept until the retention time after it ended.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Map, Value};

use super::parking::InputRequest;
use crate::jsonrpc::{ErrorObject, IdMap, RequestId};
use crate::mcp::{CallToolResult, ProtocolVersion};

/// `job_wait`'s default wait, well below the shortest client timeout (about 60 s).
pub const WAIT_DEFAULT: Duration = Duration::from_secs(40);
/// The longest wait `job_wait` accepts.
pub const WAIT_MAX: Duration = Duration::from_secs(50);

/// Output lines a job keeps (the latest ones).
pub(super) const JOB_LINES: usize = 5;

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
    pub(super) fn name(&self) -> &'static str {
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
    pub input: Option<TaskInput>,
}

impl Job {
    /// The task status: `input_required` while a working task waits for answers.
    pub(super) fn status(&self) -> &'static str {
        match (&self.state, &self.input) {
            (JobState::Working, Some(_)) => "input_required",
            (state, _) => state.name(),
        }
    }

    pub(super) fn elapsed(&self, now: Instant) -> Duration {
        self.ended
            .unwrap_or(now)
            .saturating_duration_since(self.started)
    }
}

/// The jobs of a server.
#[derive(Debug, Default)]
pub(super) struct Store {
    /// Oldest first.
    jobs: Vec<Job>,
    /// The pending `job_wait`s on them.
    pub waits: Waits,
    next: u64,
}

impl Store {
    /// Keeps a new job (room made: see [`Store::make_room`]).
    pub(super) fn add(&mut self, job: Job) {
        self.jobs.push(job);
    }

    /// The jobs kept, oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Job> {
        self.jobs.iter()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The work waiting for answers under `park` stopped waiting (cancelled, deadline): its
    /// task's questions are withdrawn.
    pub(super) fn withdraw_input(&mut self, park: &RequestId) {
        for job in &mut self.jobs {
            if job.input.as_ref().is_some_and(|i| i.park == *park) {
                job.input = None;
            }
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<&Job> {
        self.jobs.iter().find(|j| j.id == id)
    }

    pub(super) fn get_mut(&mut self, id: &str) -> Option<&mut Job> {
        self.jobs.iter_mut().find(|j| j.id == id)
    }

    /// Forgets a job (its retention is over).
    pub(super) fn forget(&mut self, id: &str) {
        self.jobs.retain(|j| j.id != id);
    }

    /// Makes room for one more job when `max` are kept: the oldest ended job gives way (its
    /// id is returned). `Err(())` when every job kept still works.
    pub(super) fn make_room(&mut self, max: usize) -> Result<Option<String>, ()> {
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
    pub(super) fn end(
        &mut self,
        id: &str,
        state: JobState,
        now: Instant,
        wall: SystemTime,
    ) -> bool {
        let Some(job) = self.get_mut(id).filter(|j| j.state == JobState::Working) else {
            return false;
        };
        job.state = state;
        job.ended = Some(now);
        job.updated_wall = wall;
        true
    }

    /// A fresh job id (job-N).
    pub(super) fn new_id(&mut self) -> String {
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

/// Questions a task waits on.
#[derive(Clone, Debug)]
pub(super) struct TaskInput {
    /// The id the answers go to.
    pub park: RequestId,
    pub pending: Vec<InputRequest>,
    pub have: Map<String, Value>,
}

impl TaskInput {
    /// `inputRequests` as `tasks/get` shows them (MRTR-shaped: key -> method and params).
    pub(super) fn requests(&self) -> Value {
        let m: Map<String, Value> = self
            .pending
            .iter()
            .map(|r| {
                (
                    r.key.clone(),
                    json!({ "method": r.method, "params": r.params }),
                )
            })
            .collect();
        Value::Object(m)
    }
}

/// A pending `job_wait`: a request with no work of its own, answered when its job ends or
/// its time is up, with heartbeats that carry the job's latest output line.
#[derive(Clone, Debug)]
pub(super) struct Wait {
    /// The job waited for.
    pub job: String,
    /// When the wait ends.
    pub until: Instant,
    /// The revision of the answer.
    pub version: ProtocolVersion,
    /// 2026-07-28 path.
    pub stateless: bool,
    pub progress_token: Option<Value>,
    /// When the request arrived.
    pub started: Instant,
    pub last_report: Instant,
    pub last_progress: Option<f64>,
}

impl Wait {
    /// When its next heartbeat is due, if it has a progress token.
    pub(super) fn next_heartbeat(&self, interval: Duration) -> Option<Instant> {
        self.progress_token
            .as_ref()
            .and(self.last_report.checked_add(interval))
    }
}

/// The pending `job_wait`s, by request id.
#[derive(Debug, Default)]
pub(super) struct Waits(IdMap<Wait>);

impl Waits {
    /// A new pending wait of request `id`.
    pub(super) fn add(&mut self, id: RequestId, wait: Wait) {
        self.0.insert(id, wait);
    }

    pub(super) fn get(&self, id: &RequestId) -> Option<&Wait> {
        self.0.get(id)
    }

    pub(super) fn get_mut(&mut self, id: &RequestId) -> Option<&mut Wait> {
        self.0.get_mut(id)
    }

    /// Ends wait `id` (answered, cancelled or timed out).
    pub(super) fn remove(&mut self, id: &RequestId) -> Option<Wait> {
        self.0.remove(id)
    }

    pub(super) fn contains(&self, id: &RequestId) -> bool {
        self.0.contains_key(id)
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn ids(&self) -> impl Iterator<Item = &RequestId> {
        self.0.keys()
    }

    /// The waits on job `job`.
    pub(super) fn on(&self, job: &str) -> Vec<RequestId> {
        self.0
            .iter()
            .filter(|(_, w)| w.job == job)
            .map(|(id, _)| id.clone())
            .collect()
    }

    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = (&RequestId, &Wait)> {
        self.0.iter()
    }
}
