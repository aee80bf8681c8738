//! Server role: the built-in tools over the job store, `job_wait`, `job_cancel` and `jobs`
//! (README "Long runs: Jobs"). The peer answers them itself: `job_wait` is a pending wait of
//! its own (not a call: it holds no slot and no worker), answered when its job ends or its time is up, with
//! heartbeats that carry the job's latest output line; a cancel of it ends the wait only.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::jobs::{job_facts, JobState, WAIT_DEFAULT, WAIT_MAX};
use super::terms::{progress_token, Terms};
use super::timers::Kind;
use super::{Catalog, Peer};
use crate::jsonrpc::{Request, RequestId};
use crate::mcp::{gate, CallToolResult, ClientCapabilities, ProgressParams, ProtocolVersion, Tool};

/// Names of the built-in job tools.
pub const JOB_TOOL_NAMES: [&str; 3] = ["job_wait", "job_cancel", "jobs"];

/// Indices of the job tools in the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobTools {
    /// `job_wait`.
    pub wait: usize,
    /// `job_cancel`.
    pub cancel: usize,
    /// `jobs`.
    pub list: usize,
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
    pub modern: bool,
    pub progress_token: Option<Value>,
    /// When the request arrived.
    pub started: Instant,
    pub last_report: Instant,
    pub last_progress: Option<f64>,
}

impl Wait {
    /// When its next heartbeat is due, if it has a progress token.
    pub fn next_heartbeat(&self, interval: Duration) -> Option<Instant> {
        self.progress_token
            .as_ref()
            .and(self.last_report.checked_add(interval))
    }
}

/// A tool of the catalog has the name of a built-in job tool, which is reserved when some
/// tool has a background delay ([`Catalog::add_job_tools`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservedToolName(pub String);

impl std::fmt::Display for ReservedToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tool name {} is reserved for the built-in job tools when a tool has a background delay",
            self.0
        )
    }
}

impl std::error::Error for ReservedToolName {}

impl Catalog {
    /// True when some tool may become a job.
    pub fn has_background(&self) -> bool {
        self.tool_background.iter().any(Option::is_some)
    }

    /// Adds `job_wait`, `job_cancel` and `jobs` when some tool may become a job. A tool of
    /// the catalog with one of these names is an error (the names are reserved then).
    ///
    /// A tool that may become a job is listed without its `outputSchema`: its answer may be a
    /// job status, which the schema does not describe, and clients check results against a
    /// declared schema (the Python and TypeScript SDKs refuse a result without the structured
    /// content it promises). Its results still carry their `structuredContent`.
    pub fn add_job_tools(&mut self) -> Result<(), ReservedToolName> {
        if !self.has_background() || self.job_tools.is_some() {
            return Ok(());
        }
        for (tool, background) in self.tools.iter_mut().zip(&self.tool_background) {
            if background.is_some() {
                tool.output_schema = None;
            }
        }
        if let Some(n) = JOB_TOOL_NAMES.iter().find(|n| self.tool_index(n).is_some()) {
            return Err(ReservedToolName((*n).to_owned()));
        }
        let id = json!({ "type": "string", "description": "The job's id, as the call that started it said (job-N)." });
        let defs = [
            (
                "Wait for a background job (a tool call that outlived the client's patience) to finish, and return its result as the tool itself would have. Returns after at most `seconds` with the job's state and latest output if it is still running; call it again then.",
                json!({ "type": "object", "properties": { "id": id, "seconds": {
                    "type": "integer", "minimum": 1, "maximum": WAIT_MAX.as_secs(),
                    "description": format!("How long to wait at most (default {}).", WAIT_DEFAULT.as_secs()) } },
                    "required": ["id"], "additionalProperties": false }),
            ),
            (
                "Stop a background job and the processes it started, as cancelling the call would have.",
                json!({ "type": "object", "properties": { "id": id }, "required": ["id"], "additionalProperties": false }),
            ),
            (
                "List the background jobs: id, tool, state, elapsed seconds and latest output line.",
                json!({ "type": "object", "properties": {}, "additionalProperties": false }),
            ),
        ];
        let first = self.tools.len();
        for (name, (description, schema)) in JOB_TOOL_NAMES.iter().zip(defs) {
            self.tools.push(Tool {
                name: (*name).to_owned(),
                title: None,
                description: Some(description.to_owned()),
                input_schema: schema,
                output_schema: None,
                annotations: None,
                icons: None,
                meta: None,
            });
            self.tool_requirements.push(Vec::new());
            self.tool_timeouts.push(None);
            self.tool_background.push(None);
            self.tool_slots.push(1);
        }
        self.job_tools = Some(JobTools {
            wait: first,
            cancel: first + 1,
            list: first + 2,
        });
        Ok(())
    }
}

impl Peer {
    /// Answers a call of a job tool; false if `tool` is not one.
    pub(super) fn job_tool(
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
        if terms.modern {
            self.send_modern_result(id, &r, false);
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
            modern: terms.modern,
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
        self.waits.insert(req.id.clone(), wait);
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
        if self.jobs.jobs.is_empty() {
            return CallToolResult::text("No jobs.");
        }
        let mut text = String::new();
        for j in &self.jobs.jobs {
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
        let facts: Vec<Value> = self.jobs.jobs.iter().map(|j| job_facts(j, now)).collect();
        let mut r = CallToolResult::text(text);
        r.structured_content = Some(json!({ "jobs": facts }));
        r
    }

    /// Answers the `job_wait`s of a job that ended.
    pub(super) fn answer_waits(&mut self, now: Instant, job_id: &str) {
        let waits: Vec<RequestId> = self
            .waits
            .iter()
            .filter(|(_, w)| w.job == job_id)
            .map(|(id, _)| id.clone())
            .collect();
        for id in waits {
            self.end_wait(now, &id);
        }
    }

    /// Answers `job_wait` `id` (its job ended or its time is up) with its job's state.
    pub(super) fn end_wait(&mut self, now: Instant, id: &RequestId) {
        let Some(wait) = self.waits.remove(id) else {
            return;
        };
        self.timers.stop_call(id);
        let r = self.job_result(now, &wait.job);
        let terms = Terms {
            version: wait.version,
            modern: wait.modern,
            caps: ClientCapabilities::default(),
            log_level: None,
        };
        self.answer_tool(id, &terms, r);
    }

    /// Sends the heartbeat progress of `job_wait` `id`, whose timer fired: the elapsed
    /// seconds, with its job's latest output line.
    pub(super) fn wait_heartbeat(&mut self, now: Instant, id: &RequestId) {
        let message = self.wait_line(id, now);
        let interval = self.config.heartbeat;
        let Some(wait) = self.waits.get_mut(id) else {
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
        let next = self.waits.get(id).and_then(|w| w.next_heartbeat(interval));
        self.timers.set_call(Kind::Heartbeat, id, next);
    }

    /// The heartbeat message of a `job_wait`: its job's latest output line.
    pub(super) fn wait_line(&self, id: &RequestId, now: Instant) -> Option<String> {
        let wait = self.waits.get(id)?;
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
