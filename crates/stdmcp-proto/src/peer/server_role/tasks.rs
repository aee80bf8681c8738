//! Server role: the tasks extension of MCP 2026-07-28 (`io.modelcontextprotocol/tasks`,
//! SEP-2663: "Tasks" extension specification), served from the job store. A 2026-07-28
//! `tools/call` that declares the extension in its own client capabilities and outlives its
//! tool's background delay is answered with a `CreateTaskResult` (`resultType: "task"`);
//! the client polls `tasks/get` and may `tasks/cancel`. No task is ever returned to a request
//! that did not declare the extension, and the `tasks/*` methods need it too (-32021).

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::jsonrpc::{ErrorCode, ErrorObject, Request};
use crate::mcp::gate;
use crate::mcp::timestamp::iso8601;
use crate::peer::front::Peer;
use crate::peer::jobs::JobState;
use crate::peer::terms::{declares_tasks as declared, Terms, TASKS_EXTENSION};

/// How often a client should poll `tasks/get` (`pollIntervalMs`).
pub(super) const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The `tasks/*` methods of the extension.
pub(super) const TASK_METHODS: [&str; 3] = ["tasks/get", "tasks/update", "tasks/cancel"];

impl Peer {
    /// The Task fields of a job (Tasks extension: `Task`): id, status, timestamps, TTL and
    /// poll interval, in integer milliseconds.
    pub(in crate::peer) fn task_fields(&self, now: Instant, job_id: &str) -> Value {
        let Some(job) = self.jobs.get(job_id) else {
            return json!({});
        };
        let mut t = json!({
            "taskId": job.id,
            "status": job.status(),
            "createdAt": iso8601(job.created_wall),
            "lastUpdatedAt": iso8601(job.updated_wall),
            "ttlMs": u64::try_from(self.config.job_retention.as_millis()).unwrap_or(u64::MAX).max(1),
            "pollIntervalMs": POLL_INTERVAL.as_millis() as u64,
        });
        let message = match &job.state {
            JobState::Working if job.input.is_some() => {
                Some("waiting for the client's input (tasks/update)".to_owned())
            }
            JobState::Working if self.job_queued(job) => Some(format!(
                "waiting for a free slot for {}",
                crate::human::elapsed(job.elapsed(now))
            )),
            JobState::Working => job.lines.back().cloned().or_else(|| {
                Some(format!(
                    "running for {}",
                    crate::human::elapsed(job.elapsed(now))
                ))
            }),
            JobState::Cancelled => Some("cancelled".to_owned()),
            _ => None,
        };
        if let Some(m) = message {
            t["statusMessage"] = Value::String(m);
        }
        t
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel` of a 2026-07-28 request.
    pub(in crate::peer) fn task_request(&mut self, now: Instant, req: &Request, terms: &Terms) {
        if !self.catalog.has_background() {
            return self.send_error(Some(&req.id), &ErrorObject::method_not_found(&req.method));
        }
        if !declared(&terms.caps) {
            let e = ErrorObject::new(
                ErrorCode::MISSING_CLIENT_CAPABILITY,
                format!(
                    "{} needs the client capability extensions[\"{TASKS_EXTENSION}\"], which this request does not declare",
                    req.method
                ),
            )
            .with_data(json!({ "requiredCapabilities": { "extensions": { TASKS_EXTENSION: {} } } }));
            return self.send_error(Some(&req.id), &e);
        }
        let Some(task_id) = req.params.get("taskId").and_then(Value::as_str) else {
            let e = ErrorObject::invalid_params(format!(
                "{} needs params.taskId (a string)",
                req.method
            ));
            return self.send_error(Some(&req.id), &e);
        };
        if self.jobs.get(task_id).is_none() {
            let e = ErrorObject::invalid_params(format!(
                "Unknown task: {} (never created, or expired)",
                crate::jsonrpc::quote(task_id)
            ));
            return self.send_error(Some(&req.id), &e);
        }
        match req.method.as_str() {
            "tasks/get" => {
                let detailed = self.detailed_task(now, task_id, terms);
                self.send_stateless_result(&req.id, &detailed, false);
            }
            "tasks/cancel" => {
                // Cooperative and idempotent: a task that ended keeps its status.
                self.cancel_job(now, task_id);
                self.send_stateless_result(&req.id, &json!({}), false);
            }
            _ => match self.update_task(now, task_id, &req.params) {
                Ok(()) => self.send_stateless_result(&req.id, &json!({}), false),
                Err(e) => self.send_error(Some(&req.id), &e),
            },
        }
    }

    /// `tasks/get`'s DetailedTask: the Task fields, with `result` once completed (the tool
    /// result as the call would have returned it; an `isError` result is `completed` too) or
    /// `error` once failed.
    fn detailed_task(&self, now: Instant, task_id: &str, terms: &Terms) -> Value {
        let mut t = self.task_fields(now, task_id);
        let Some(job) = self.jobs.get(task_id) else {
            return t;
        };
        match &job.state {
            JobState::Completed(r) => {
                let r = gate::call_result(r.clone(), terms.version);
                let mut v = serde_json::to_value(r).unwrap_or_else(|_| json!({}));
                if let Some(o) = v.as_object_mut() {
                    o.insert("resultType".into(), json!("complete"));
                }
                t["result"] = v;
            }
            JobState::Failed(e) => {
                let mut o = Map::new();
                o.insert("code".into(), json!(e.code));
                o.insert("message".into(), json!(e.message));
                if let Some(d) = &e.data {
                    o.insert("data".into(), d.clone());
                }
                t["error"] = Value::Object(o);
            }
            JobState::Working => {
                if let Some(input) = &job.input {
                    t["inputRequests"] = input.requests();
                }
            }
            JobState::Cancelled => {}
        }
        t
    }
}
