//! Server role, 2026-07-28: asking the client through multi-round-trip results
//! (2026-07-28, Multi Round-Trip Requests).
//!
//! A server of that revision sends no requests. When the work of a `tools/call`,
//! `prompts/get` or `resources/read` needs the client (elicitation, sampling, roots), the
//! peer answers the request with `resultType: "input_required"`, the `inputRequests` and a
//! `requestState`, and *parks* the call: its work stays where it blocked. When the client
//! retries the request with `inputResponses` and that state, the peer hands the responses to
//! the parked work ([`Effect::Response`] to the park id returned by [`Peer::ask`]), and the
//! retried request is the one the work's result answers.
//!
//! * `requestState` is `v1.<park>.<round>.<nonce>`: the nonce is 128 random bits drawn when
//!   the call is parked ([`Config::fill_random`]) and kept with it, together with the method
//!   and its target (tool, prompt or URI). Parked calls live in this peer's memory, so a
//!   state is genuine exactly when it names a parked call of the same request with its nonce
//!   and current round: no signature is needed. Tampered state, state of another process, of
//!   another request or of an earlier round is refused with -32602.
//! * Requests are made only for capabilities the current request declares; responses still
//!   missing on a retry are asked again; extra ones are ignored.
//! * A parked call the client does not retry within [`Config::park_ttl`] is released (its
//!   work sees an error and its result is dropped); at most [`Config::max_parked`] calls are
//!   parked at once (each holds a worker thread).
//!
//! [`Config::park_ttl`]: crate::peer::Config::park_ttl
//! [`Config::fill_random`]: crate::peer::Config::fill_random
//! [`Config::max_parked`]: crate::peer::Config::max_parked

use crate::peer::diag::note;
use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::jsonrpc::{ErrorObject, Request, RequestId, Response};
use crate::peer::call::CallState;
use crate::peer::effect::Effect;
use crate::peer::front::Peer;
use crate::peer::parking::{
    auto_key, check_requests, input_responses, target_of, Asked, InputRequest, Parked, NONCE_LEN,
};
use crate::peer::terms::{progress_token, Terms};

impl Peer {
    /// The call a request id stands for: itself, or the call a retried request continues.
    pub(in crate::peer) fn call_id_of(&self, wire: &RequestId) -> RequestId {
        self.parking.call_id_of(wire)
    }

    /// Forgets the ids retried requests of `call` went by (the call ended).
    pub(in crate::peer) fn forget_aliases(&mut self, call: &RequestId) {
        self.parking.forget_aliases(call);
    }

    /// Number of calls parked, waiting for the client to retry.
    pub fn calls_parked(&self) -> usize {
        self.parking.len()
    }

    /// Asks the client for input on behalf of a 2026-07-28 call (server role). Answers the
    /// request already carries are returned at once; otherwise the request is answered with
    /// `input_required` and the call is parked until the client retries.
    pub fn ask(
        &mut self,
        now: Instant,
        call: &RequestId,
        requests: Vec<InputRequest>,
    ) -> Result<Asked, ErrorObject> {
        let limit = self.config.max_parked;
        let parked_now = self.parking.len();
        let Some(c) = self.calls.get_mut(call).filter(|c| !c.is_cancelled()) else {
            return Err(ErrorObject::internal("the call is no longer running"));
        };
        let Some(target) = c.target.clone().filter(|_| c.stateless) else {
            return Err(ErrorObject::internal(
                "only a 2026-07-28 tools/call, prompts/get or resources/read can ask the client for input",
            ));
        };
        if c.job().is_some() {
            // Its request was answered: a task asks through tasks/get and tasks/update.
            return self.ask_for_task(now, call, requests);
        }
        if matches!(c.state, CallState::Parked(_)) {
            // Another thread of the same work asked already: one request has one answer.
            return Err(ErrorObject::internal(
                "the call already waits for the client's input",
            ));
        }
        let mut requests = requests;
        for r in requests.iter_mut().filter(|r| r.key.is_empty()) {
            c.asked += 1;
            r.key = auto_key(&r.method, c.asked);
        }
        check_requests(&c.caps, &requests)?;
        let mut have = Map::new();
        let mut pending = Vec::new();
        for r in requests {
            match c.input.remove(&r.key) {
                Some(v) => {
                    have.insert(r.key, v);
                }
                None => pending.push(r),
            }
        }
        if pending.is_empty() {
            return Ok(Asked::Answered(have));
        }
        if parked_now >= limit {
            return Err(ErrorObject::internal(format!(
                "too many calls wait for client input (limit {limit}); try again later"
            )));
        }
        let park = self.next_id;
        self.next_id += 1;
        c.state = CallState::Parked(park);
        c.input.clear();
        let wire = c.wire_id.clone();
        let expires = now + self.config.park_ttl;
        let mut nonce = [0u8; NONCE_LEN];
        (self.config.fill_random)(&mut nonce);
        let call_id = call.clone();
        let parked = Parked {
            call: call_id,
            round: 1,
            pending,
            have,
            expires,
            target,
            nonce,
        };
        self.parking.insert(park, parked);
        self.timers.set_park(park, Some(expires));
        self.sync_call_timers(call);
        self.send_input_required(&wire, park);
        Ok(Asked::Parked(RequestId::number(park)))
    }

    fn send_input_required(&mut self, wire: &RequestId, park: i64) {
        let Some((requests, state)) = self.parking.asking(park) else {
            return;
        };
        let result = json!({ "inputRequests": requests, "requestState": state });
        self.send_stateless_typed(wire, &result, false, "input_required");
    }

    /// Releases a parked call whose work stopped waiting (cancelled, deadline). Its request was
    /// answered with `input_required` and no retry continues it: its result goes nowhere.
    pub fn release_park(&mut self, park: &RequestId) {
        self.jobs.withdraw_input(park);
        let parked = self.parking.find(park);
        if let Some((k, p)) = parked.and_then(|k| self.parking.remove(k).map(|p| (k, p))) {
            self.timers.set_park(k, None);
            if let Some(c) = self.calls.get_mut(&p.call) {
                c.state = CallState::Cancelled {
                    job: None,
                    park: None,
                };
            }
            self.sync_call_timers(&p.call);
        }
    }

    /// Cancels every parked call (the server stops taking requests, so no retry can come).
    pub(in crate::peer) fn release_all_parked(&mut self) {
        let calls = self.parking.calls();
        for call in calls {
            self.cancel_call(&call);
        }
    }

    /// The expiry of every parked call (for tests of the timer table).
    #[cfg(test)]
    pub(in crate::peer) fn park_expiries(&self) -> Vec<(i64, Instant)> {
        self.parking.expiries()
    }

    /// Releases parked call `park`, whose client did not retry in time: its work gets an
    /// error, and its result goes nowhere (the request was answered with `input_required`).
    pub(in crate::peer) fn release_expired(&mut self, park: i64) {
        let Some(p) = self.parking.remove(park) else {
            return;
        };
        note!(
            self,
            Info,
            "request {}: released, the client did not retry in time",
            p.call
        );
        let ttl = crate::human::setting(self.config.park_ttl);
        let e = ErrorObject::internal(format!(
            "the client did not retry within {ttl}: the call was released"
        ));
        self.effects.push_back(Effect::Response(Response {
            id: RequestId::number(park),
            result: Err(e),
        }));
        self.cancel_call(&p.call);
    }

    /// Handles a retried request that carries `requestState`; false when it carries none (a
    /// fresh call, which may carry `inputResponses` its work takes by key).
    pub(in crate::peer) fn resume(&mut self, now: Instant, req: &Request, terms: &Terms) -> bool {
        let responses = match input_responses(&req.params) {
            Ok(r) => r,
            Err(e) => {
                self.send_error(Some(&req.id), &e);
                return true;
            }
        };
        let state = match req.params.get("requestState") {
            None => return false,
            Some(Value::String(s)) => s.as_str(),
            Some(_) => {
                let e = ErrorObject::invalid_params("requestState must be a string");
                self.send_error(Some(&req.id), &e);
                return true;
            }
        };
        if let Err(e) = self.continue_parked(now, req, terms, state, responses) {
            self.send_error(Some(&req.id), &e);
        }
        true
    }

    /// From now on `call` answers the retried request `req`, with its capabilities, log level
    /// and progress token.
    fn follow_retry(
        &mut self,
        now: Instant,
        call: &RequestId,
        req: &Request,
        terms: &Terms,
        done: bool,
    ) {
        if let Some(c) = self.calls.get_mut(call) {
            c.wire_id = req.id.clone();
            c.caps = terms.caps.clone();
            c.log_level = terms.log_level;
            c.progress_token = progress_token(&req.params);
            c.last_report = now;
            c.last_progress = None;
            if done {
                c.state = match std::mem::replace(&mut c.state, CallState::Live) {
                    CallState::Parked(_) => CallState::Live,
                    CallState::Cancelled { job, .. } => CallState::Cancelled { job, park: None },
                    other => other,
                };
            }
        }
        self.sync_call_timers(call);
        if req.id != *call {
            self.parking.alias(req.id.clone(), call.clone());
        }
    }

    fn continue_parked(
        &mut self,
        now: Instant,
        req: &Request,
        terms: &Terms,
        state: &str,
        responses: Map<String, Value>,
    ) -> Result<(), ErrorObject> {
        let ttl = self.config.park_ttl;
        let (park, call) = match self.parking.check_retry(state, &target_of(req)) {
            Ok(found) => found,
            Err(refusal) => return Err(refusal.error(ttl)),
        };
        if req.id != call && (self.calls.contains_key(&req.id) || self.jobs.waits.contains(&req.id))
        {
            return Err(ErrorObject::invalid_request(format!(
                "Invalid request: id {} is already in use by a request in flight",
                req.id
            )));
        }
        let (done, undeclared) =
            self.parking
                .take_answers(park, &responses, &terms.caps, now + ttl);
        if !done {
            let expires = self.parking.expiry(park);
            self.timers.set_park(park, expires);
        }
        self.follow_retry(now, &call, req, terms, done);
        if !done {
            self.send_input_required(&req.id, park);
            return Ok(());
        }
        let p = self.parking.remove(park);
        self.timers.set_park(park, None);
        let result = match undeclared {
            // The retried request dropped a capability the missing answers need: the work
            // learns so (and may go on without), instead of a request the client cannot answer.
            Some(e) => Err(e),
            None => Ok(Value::Object(p.map(|p| p.have).unwrap_or_default())),
        };
        self.effects.push_back(Effect::Response(Response {
            id: RequestId::number(park),
            result,
        }));
        Ok(())
    }
}
