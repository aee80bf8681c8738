//! Server role: a task that asks the client (Tasks extension of 2026-07-28: input requests).
//!
//! A job's request was answered, so its work cannot ask through an `input_required` result.
//! For a task (the request declared the extension) the questions wait in the job store
//! instead: the task's status is `input_required` and `tasks/get` shows them as
//! `inputRequests`; `tasks/update` hands answers over by key (unknown or answered keys are
//! ignored, a partial answer leaves the rest pending), and once every question is answered
//! the work goes on ([`Effect::Response`] to the park id, as for a parked call). A job of a
//! client without the extension cannot be asked anything: its work gets an error.

use std::time::Instant;

use serde_json::{Map, Value};

use crate::jsonrpc::{ErrorObject, RequestId, Response};
use crate::peer::effect::Effect;
use crate::peer::front::Peer;
use crate::peer::jobs::TaskInput;
use crate::peer::parking::InputRequest;
use crate::peer::parking::{auto_key, check_requests, input_responses, Asked};

impl Peer {
    pub(in crate::peer) fn ask_for_task(
        &mut self,
        now: Instant,
        call: &RequestId,
        mut requests: Vec<InputRequest>,
    ) -> Result<Asked, ErrorObject> {
        let Some(c) = self.calls.get_mut(call) else {
            return Err(ErrorObject::internal("the call is no longer running"));
        };
        if !(c.stateless && crate::peer::terms::declares_tasks(&c.caps)) {
            return Err(ErrorObject::internal(
                "a background job cannot ask the client for input (only a task of a client with the tasks extension can)",
            ));
        }
        for r in requests.iter_mut().filter(|r| r.key.is_empty()) {
            c.asked += 1;
            r.key = auto_key(&r.method, c.asked);
        }
        check_requests(&c.caps, &requests)?;
        let job_id = c.job().cloned().unwrap_or_default();
        let park = RequestId::number(self.next_id);
        self.next_id += 1;
        let wall = self.wall(now);
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Err(ErrorObject::internal("the job is gone"));
        };
        if job.input.is_some() {
            return Err(ErrorObject::internal(
                "the task already waits for the client's input",
            ));
        }
        job.input = Some(TaskInput {
            park: park.clone(),
            pending: requests,
            have: Map::new(),
        });
        job.updated_wall = wall;
        Ok(Asked::Parked(park))
    }

    /// `tasks/update`: answers by key; the work goes on once all are in.
    pub(in crate::peer) fn update_task(
        &mut self,
        now: Instant,
        task_id: &str,
        params: &Value,
    ) -> Result<(), ErrorObject> {
        let responses = input_responses(params)?;
        let wall = self.wall(now);
        let Some(job) = self.jobs.get_mut(task_id) else {
            return Ok(());
        };
        let Some(input) = &mut job.input else {
            return Ok(());
        };
        for r in &input.pending {
            if let Some(v) = responses.get(&r.key) {
                input.have.insert(r.key.clone(), v.clone());
            }
        }
        let have = &input.have;
        input.pending.retain(|r| !have.contains_key(&r.key));
        job.updated_wall = wall;
        if input.pending.is_empty() {
            let done = job.input.take();
            if let Some(done) = done {
                self.effects.push_back(Effect::Response(Response {
                    id: done.park,
                    result: Ok(Value::Object(done.have)),
                }));
            }
        }
        Ok(())
    }
}
