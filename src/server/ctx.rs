//! What a handler sees of its call: progress, cancellation, deadline, logging, and requests
//! to the client.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::dispatch::Shared;
use crate::cancel::{CancelReason, CancelToken};
use crate::jsonrpc::{ErrorObject, RequestId};
use crate::mcp::{method, ClientCapabilities, LogLevel, ProtocolVersion};

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
            let message = message.into();
            self.shared
                .with_peer(|peer| peer.set_status(&self.id, message));
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

    /// Sends a request to the client and blocks until it answers, the call is cancelled, or
    /// the call's deadline passes. Handshake era only; `capability` is the client capability
    /// the request needs (`"sampling"`, `"elicitation"`, `"roots"`).
    pub fn request(
        &self,
        method: &str,
        params: Value,
        capability: &str,
    ) -> Result<Value, ErrorObject> {
        let (tx, rx) = crossbeam_channel::bounded(2);
        let out_id = self.shared.with_state(|st| {
            let id = st
                .peer
                .request_for_call(&self.id, method, params, capability)?;
            st.waiters.insert(id.clone(), tx.clone());
            Ok::<_, ErrorObject>(id)
        })?;
        self.shared.out.wait_for_room_unless(&self.cancel);
        let cancelled = tx;
        let _guard = self.cancel.on_cancel(move || {
            let _ = cancelled.try_send(Err(ErrorObject::internal("the call was cancelled")));
        });
        let answer = match self.deadline {
            Some(d) => rx.recv_deadline(d).ok(),
            None => rx.recv().ok(),
        };
        let answer =
            answer.unwrap_or_else(|| Err(ErrorObject::internal("the call's deadline passed")));
        if answer.is_err() {
            self.shared.with_state(|st| {
                if st.waiters.remove(&out_id).is_some() {
                    st.peer.cancel_request(&out_id, Some("the tool call ended"));
                }
            });
        }
        answer
    }

    /// `sampling/createMessage` (mcp-spec.md §7.1).
    pub fn create_message(&self, params: Value) -> Result<Value, ErrorObject> {
        self.request(method::SAMPLING_CREATE_MESSAGE, params, "sampling")
    }

    /// `elicitation/create` (2025-06-18+).
    pub fn elicit(&self, params: Value) -> Result<Value, ErrorObject> {
        self.request(method::ELICITATION_CREATE, params, "elicitation")
    }

    /// `roots/list`.
    pub fn list_roots(&self) -> Result<Value, ErrorObject> {
        self.request(method::ROOTS_LIST, json!({}), "roots")
    }
}
