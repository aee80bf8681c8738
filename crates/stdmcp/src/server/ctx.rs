//! What a handler sees of its call: progress, cancellation, deadline, logging, and requests
//! to the client.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use stdmcp_proto::jsonrpc::{ErrorObject, RequestId};
use stdmcp_proto::mcp::{method, ClientCapabilities, LogLevel, ProtocolVersion};
use stdmcp_proto::peer::{auto_key, capability_of, Asked, InputRequest};

use super::dispatch::Shared;
use crate::cancel::{CancelReason, CancelToken};
use crate::mailbox::Mailbox;

/// The context of one call, handed to its handler on the worker thread.
pub struct Ctx {
    pub(super) shared: Arc<Shared>,
    pub(super) id: RequestId,
    pub(super) cancel: CancelToken,
    pub(super) deadline: Option<Instant>,
    pub(super) version: ProtocolVersion,
    pub(super) wants_progress: bool,
    pub(super) client_capabilities: ClientCapabilities,
}

/// A handle that reports progress for one call from any thread (for example a thread that
/// reads a child's output). Cheap to clone.
#[derive(Clone)]
pub struct Reporter {
    shared: Arc<Shared>,
    id: RequestId,
    wants_progress: bool,
}

impl Reporter {
    /// As [`Ctx::progress`].
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        self.wants_progress
            && self.shared.with_peer(|peer| {
                peer.progress(
                    Instant::now(),
                    &self.id,
                    progress,
                    total,
                    message.map(str::to_owned),
                )
            })
    }

    /// As [`Ctx::set_status`].
    pub fn set_status(&self, message: impl Into<String>) {
        if self.wants_progress {
            self.shared.set_status(&self.id, message.into());
        }
    }

    /// True when the request carries a progress token.
    pub fn wants_progress(&self) -> bool {
        self.wants_progress
    }
}

impl Ctx {
    /// A progress handle usable from other threads.
    pub fn reporter(&self) -> Reporter {
        Reporter {
            shared: self.shared.clone(),
            id: self.id.clone(),
            wants_progress: self.wants_progress,
        }
    }

    /// The id of the request being served.
    pub fn request_id(&self) -> &RequestId {
        &self.id
    }

    /// The protocol revision the answer is for.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
    }

    /// The client's declared capabilities.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.client_capabilities
    }

    /// True when the request carries a progress token (progress is sent at all).
    pub fn wants_progress(&self) -> bool {
        self.wants_progress
    }

    /// Reports progress. Sent only when the request has a progress token, the call is still
    /// running and `progress` is greater than the last value sent; returns whether it was sent.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        self.reporter().progress(progress, total, message)
    }

    /// Sets the message the next heartbeat carries (for example the last line of output),
    /// without sending anything now.
    pub fn set_status(&self, message: impl Into<String>) {
        self.reporter().set_status(message);
    }

    /// True once the call was cancelled by the client, its deadline passed, or the server is
    /// shutting down.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Why the call was cancelled, if it was.
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        self.cancel.reason()
    }

    /// The call's cancel token (for the process runner, or to register a hook).
    ///
    /// A hook runs once, on the thread that cancels: the reader thread for the client's
    /// `notifications/cancelled`, the timer thread for the call's deadline, the main thread at
    /// shutdown (or this thread, if registered after the cancel). It runs without any of the
    /// server's locks held, so it may report progress or log; it should be quick, since the
    /// reader reads no further frames until it returns.
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// Blocks until the call is cancelled or `until`; true if cancelled.
    pub fn wait_cancelled(&self, until: Instant) -> bool {
        self.cancel.wait_until(until)
    }

    /// Sleeps for `d` unless cancelled first; true if the whole sleep completed.
    pub fn sleep(&self, d: Duration) -> bool {
        !self.cancel.wait_until(Instant::now() + d)
    }

    /// The server-side deadline of this call, if its tool has one.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Says that resources changed: the client gets `notifications/resources/updated` for
    /// each URI it subscribed to that `changed` accepts (handshake era only); how many.
    pub fn resources_updated(&self, changed: impl Fn(&str) -> bool) -> usize {
        self.shared
            .with_peer(|peer| peer.resources_updated(changed))
    }

    /// Sends a log message (`notifications/message`) as the era allows; returns whether sent.
    pub fn log(&self, level: LogLevel, data: impl Into<Value>) -> bool {
        let data = data.into();
        let sent = self
            .shared
            .with_peer(|peer| peer.log(&self.id, level, None, data));
        if sent {
            self.shared.out.wait_for_room_unless(&self.cancel);
        }
        sent
    }

    /// Asks the client and blocks until it answers, the call is cancelled, or the call's
    /// deadline passes; `capability` is the client capability the request needs
    /// (`"sampling"`, `"elicitation"`, `"roots"`).
    ///
    /// In the handshake era this is a request to the client. In 2026-07-28 (which has no
    /// server requests) it works for `elicitation/create`, `sampling/createMessage` and
    /// `roots/list`: the call's request is answered with `input_required`, and the handler
    /// goes on when the client retries with the answer (see [`Ctx::ask`]).
    pub fn request(
        &self,
        method: &str,
        params: Value,
        capability: &str,
    ) -> Result<Value, ErrorObject> {
        if self.version.is_handshake_era() {
            return self.handshake_request(method, params, capability);
        }
        let request = InputRequest {
            key: String::new(),
            method: method.to_owned(),
            params,
        };
        let answers = self.ask(vec![request])?;
        answers
            .into_iter()
            .next()
            .map(|(_, v)| v)
            .ok_or_else(|| ErrorObject::internal(format!("no answer to {method}")))
    }

    /// Asks the client several things at once and blocks until every answer is in; the
    /// answers come back by key. In 2026-07-28 all of them go out in one `input_required`
    /// result (2026-07-28, Multi Round-Trip Requests) and answers the request carried already
    /// are taken without asking; in the handshake era they are requests, one after the other.
    /// Only `elicitation/create`, `sampling/createMessage` and `roots/list` can be asked, each
    /// only of a client that declared its capability.
    pub fn ask(&self, requests: Vec<InputRequest>) -> Result<Map<String, Value>, ErrorObject> {
        if self.version.is_handshake_era() {
            let mut answers = Map::new();
            for (n, r) in requests.into_iter().enumerate() {
                let Some(capability) = capability_of(&r.method) else {
                    let e = format!("{} cannot be asked of the client", r.method);
                    return Err(ErrorObject::internal(e));
                };
                let key = match r.key.is_empty() {
                    true => auto_key(&r.method, n as u32 + 1),
                    false => r.key,
                };
                answers.insert(
                    key,
                    self.handshake_request(&r.method, r.params, capability)?,
                );
            }
            return Ok(answers);
        }
        let mailbox = Arc::new(Mailbox::default());
        let asked = self.shared.with_state(|st| {
            let asked = st.peer.ask(Instant::now(), &self.id, requests)?;
            if let Asked::Parked(park) = &asked {
                st.waiters.insert(park.clone(), Arc::clone(&mailbox));
            }
            Ok::<_, ErrorObject>(asked)
        })?;
        let park = match asked {
            Asked::Answered(answers) => return Ok(answers),
            Asked::Parked(park) => park,
        };
        // The timer releases the park if the client never retries: it must see the new expiry.
        self.shared.wake_timer();
        let answer = self.wait(&mailbox);
        if answer.is_err() {
            self.shared.with_state(|st| {
                if st.waiters.remove(&park).is_some() {
                    st.peer.release_park(&park);
                }
            });
        }
        match answer? {
            Value::Object(answers) => Ok(answers),
            _ => Err(ErrorObject::internal("the answers are not an object")),
        }
    }

    /// Waits for an answer in `answer`, or for the cancel or the deadline of the call.
    fn wait(
        &self,
        answer: &Arc<Mailbox<Result<Value, ErrorObject>>>,
    ) -> Result<Value, ErrorObject> {
        let cancelled = Arc::clone(answer);
        let _guard = self.cancel.on_cancel(move || {
            cancelled.send(Err(ErrorObject::internal("the call was cancelled")));
        });
        answer
            .recv_until(self.deadline)
            .unwrap_or_else(|_| Err(ErrorObject::internal("the call's deadline passed")))
    }

    /// A server -> client request of the handshake era.
    fn handshake_request(
        &self,
        method: &str,
        params: Value,
        capability: &str,
    ) -> Result<Value, ErrorObject> {
        let mailbox = Arc::new(Mailbox::default());
        let out_id = self.shared.with_state(|st| {
            let id = st
                .peer
                .request_for_call(&self.id, method, params, capability)?;
            st.waiters.insert(id.clone(), Arc::clone(&mailbox));
            Ok::<_, ErrorObject>(id)
        })?;
        self.shared.out.wait_for_room_unless(&self.cancel);
        let answer = self.wait(&mailbox);
        if answer.is_err() {
            self.shared.with_state(|st| {
                if st.waiters.remove(&out_id).is_some() {
                    st.peer.cancel_request(&out_id, Some("the tool call ended"));
                }
            });
        }
        answer
    }

    /// `sampling/createMessage` (both eras).
    pub fn create_message(&self, params: Value) -> Result<Value, ErrorObject> {
        self.request(method::SAMPLING_CREATE_MESSAGE, params, "sampling")
    }

    /// `elicitation/create` (2025-06-18+, both eras).
    pub fn elicit(&self, params: Value) -> Result<Value, ErrorObject> {
        self.request(method::ELICITATION_CREATE, params, "elicitation")
    }

    /// `roots/list` (both eras).
    pub fn list_roots(&self) -> Result<Value, ErrorObject> {
        self.request(method::ROOTS_LIST, json!({}), "roots")
    }
}
