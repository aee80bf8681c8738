//! Server role: resource subscriptions of the handshake era (MCP 2025-11-25, Resources:
//! Subscriptions): `resources/subscribe` and `resources/unsubscribe` against the connection's
//! subscriptions (`peer::subscriptions`), and `notifications/resources/updated` for each URI
//! subscribed to when the server says that resource changed ([`Peer::resources_updated`]). 2026-07-28 has no
//! `resources/subscribe`: a client of that era is never sent one.

use serde_json::{json, Value};

use crate::jsonrpc::{self, ErrorObject, Request};
use crate::mcp::method;
use crate::peer::front::Peer;
use crate::peer::subscriptions::MAX_SUBSCRIPTIONS;

impl Peer {
    /// `resources/subscribe` and `resources/unsubscribe` (handshake era): a subscription to
    /// a resource the server does not have is refused (-32002); unsubscribing from a URI not
    /// subscribed to is a no-op.
    pub(in crate::peer) fn subscription_request(&mut self, req: &Request, known: bool) {
        let Some(uri) = req.params.get("uri").and_then(Value::as_str) else {
            let e = ErrorObject::invalid_params("params.uri (a string) is required");
            return self.send_error(Some(&req.id), &e);
        };
        let subscribe = req.method == method::RESOURCES_SUBSCRIBE;
        if subscribe && !known {
            // MCP 2025-11-25, Resources: Error Handling (-32002, resource not found).
            let code = jsonrpc::ErrorCode::RESOURCE_NOT_FOUND;
            let e = super::calls::resource_not_found(code, uri);
            return self.send_error(Some(&req.id), &e);
        }
        let Some(subs) = self.handshake.as_mut().map(|h| &mut h.subscriptions) else {
            return self.send_result(&req.id, &json!({}));
        };
        if !subscribe {
            subs.unsubscribe(uri);
        } else if !subs.subscribe(uri) {
            let e = ErrorObject::invalid_params(format!(
                "too many subscriptions: at most {MAX_SUBSCRIPTIONS} at once; unsubscribe from one first"
            ));
            return self.send_error(Some(&req.id), &e);
        }
        self.send_result(&req.id, &json!({}))
    }

    /// A resource changed: sends `notifications/resources/updated` for every URI the client
    /// subscribed to that `changed` accepts (handshake era; none in 2026-07-28), and returns
    /// how many were sent. The server calls it when it knows: a call's kept output is final,
    /// a call of a tool with logs ended.
    pub fn resources_updated(&mut self, changed: impl Fn(&str) -> bool) -> usize {
        let Some(h) = &self.handshake else { return 0 };
        let uris = h.subscriptions.matching(changed);
        for uri in &uris {
            self.send_notification(method::RESOURCES_UPDATED, &json!({ "uri": uri }));
        }
        uris.len()
    }
}
