//! Requests this side sends: the client role, and a handshake-era server's requests to its client
//! (sampling, elicitation, roots; MCP 2025-11-25, Client Features). Outbound ids count up; a cancelled
//! request's late response and progress are dropped (§4.1).

use super::diag::note;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::effect::Effect;
use super::front::Peer;
use super::outbound::{ClientEra, Outbound};
use crate::jsonrpc::{self, ErrorObject, Incoming, Message, RequestId, Response};
use crate::mcp::{meta_key, method};

impl Peer {
    /// Sets how requests are framed into eras (client role).
    pub fn set_client_era(&mut self, era: ClientEra) {
        self.client_era = era;
    }

    /// The client era.
    pub fn client_era(&self) -> &ClientEra {
        &self.client_era
    }

    /// Sends a request; its response comes back as [`Effect::Response`]. With
    /// `with_progress`, the request carries a progress token (its own id) and progress
    /// notifications for it come back as [`Effect::Notification`].
    pub fn request(&mut self, method: &str, params: Value, with_progress: bool) -> RequestId {
        let n = self.next_id;
        self.next_id += 1;
        let id = RequestId::number(n);
        let mut params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let token = with_progress.then(|| json!(n));
        if token.is_some() || matches!(self.client_era, ClientEra::Stateless { .. }) {
            let meta = params.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                if let Some(t) = &token {
                    meta.insert("progressToken".into(), t.clone());
                }
                if let ClientEra::Stateless {
                    version,
                    capabilities,
                    client_info,
                } = &self.client_era
                {
                    meta.insert(meta_key::PROTOCOL_VERSION.into(), json!(version.as_str()));
                    meta.insert(meta_key::CLIENT_CAPABILITIES.into(), capabilities.clone());
                    let info = serde_json::to_value(client_info).unwrap_or(Value::Null);
                    meta.insert(meta_key::CLIENT_INFO.into(), info);
                }
            }
        }
        let mut out = Vec::with_capacity(128);
        match jsonrpc::write_request(&mut out, &id, method, &Value::Object(params)) {
            Ok(()) => self.send_json(out),
            Err(e) => note!(self, Error, "could not write a {method} request: {e}"),
        }
        self.outbound.insert(
            id.clone(),
            Outbound {
                cancelled: false,
                progress_token: token,
            },
        );
        id
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send_notification(method, &params);
    }

    /// Cancels a request this side sent: sends `notifications/cancelled` once; a response or
    /// progress that arrives later is dropped. Returns false if it was not pending.
    pub fn cancel_request(&mut self, id: &RequestId, reason: Option<&str>) -> bool {
        match self.outbound.get_mut(id) {
            Some(o) if !o.cancelled => {
                o.cancelled = true;
                let mut params = json!({ "requestId": id });
                if let Some(r) = reason {
                    params["reason"] = json!(r);
                }
                self.send_notification(method::CANCELLED, &params);
                true
            }
            _ => false,
        }
    }

    /// Number of requests this side sent that are still unanswered.
    pub fn requests_pending(&self) -> usize {
        self.outbound.values().filter(|o| !o.cancelled).count()
    }

    /// Sends a request to the client on behalf of the running call `call` (server role,
    /// handshake era only: 2026-07-28 servers must not send requests, MCP 2026-07-28, Multi Round-Trip Requests).
    pub fn request_for_call(
        &mut self,
        call: &RequestId,
        method: &str,
        params: Value,
        capability: &str,
    ) -> Result<RequestId, ErrorObject> {
        let Some(inflight) = self.calls.get(call).filter(|c| !c.is_cancelled()) else {
            return Err(ErrorObject::internal("the call is no longer running"));
        };
        if inflight.stateless {
            // 2026-07-28 servers send no requests: the work asks through `Peer::ask`
            // (2026-07-28, Multi Round-Trip Requests).
            return Err(ErrorObject::internal(format!(
                "{method}: a 2026-07-28 call asks the client through an input_required result, not a request"
            )));
        }
        let Some(handshake) = &self.handshake else {
            return Err(ErrorObject::internal("no handshake yet"));
        };
        if !handshake.client_capabilities.has(capability) {
            return Err(crate::mcp::missing_capability(capability, method));
        }
        Ok(self.request(method, params, false))
    }

    pub(super) fn handle_response(&mut self, r: Response) {
        match self.outbound.remove(&r.id) {
            Some(o) if !o.cancelled => self.effects.push_back(Effect::Response(r)),
            Some(_) => note!(
                self,
                Debug,
                "late response to cancelled request {} dropped",
                r.id
            ),
            None => note!(self, Warn, "response to unknown request {} dropped", r.id),
        }
    }

    pub(super) fn client_incoming(&mut self, _now: Instant, incoming: Incoming) {
        let items = match incoming {
            Incoming::Single(m) => vec![m],
            Incoming::Batch(items) => items,
        };
        for item in items {
            match item {
                Ok(Message::Response(r)) => self.handle_response(r),
                Ok(Message::Notification(n)) if n.method == method::PROGRESS => {
                    // A notification without a token matches no request (not every request
                    // sent without one).
                    let token = n.params.get("progressToken");
                    let live = token.is_some_and(|t| {
                        self.outbound
                            .values()
                            .any(|o| !o.cancelled && o.progress_token.as_ref() == Some(t))
                    });
                    if live {
                        self.effects.push_back(Effect::Notification(n));
                    }
                }
                Ok(Message::Notification(n)) => self.effects.push_back(Effect::Notification(n)),
                Ok(Message::Request(r)) if r.method == method::PING => {
                    self.send_result(&r.id, &json!({}));
                }
                Ok(Message::Request(r)) => self.effects.push_back(Effect::Request(r)),
                Err(invalid) => {
                    note!(
                        self,
                        Warn,
                        "invalid message from the server: {}",
                        invalid.error.message
                    );
                    if let Some(id) = &invalid.id {
                        self.send_error(Some(id), &invalid.error);
                    }
                }
            }
        }
    }

    /// The error a client reports for a frame it could not parse (never sent back).
    pub(super) fn client_parse_error(&mut self, e: &ErrorObject) {
        note!(
            self,
            Warn,
            "unparseable message from the server: {}",
            e.message
        );
    }
}
