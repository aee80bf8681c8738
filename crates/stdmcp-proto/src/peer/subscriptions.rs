//! Resource subscriptions of the handshake era (MCP 2025-11-25, Resources: Subscriptions):
//! the URIs a client subscribed to, and `notifications/resources/updated` for each when the
//! server says that resource changed ([`Peer::resources_updated`]). 2026-07-28 has no
//! `resources/subscribe`: a client of that era is never sent one.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::Peer;
use crate::jsonrpc::{self, ErrorObject, Request};
use crate::mcp::method;

/// Most URIs one client may be subscribed to at once; a subscription beyond it is refused.
pub const MAX_SUBSCRIPTIONS: usize = 1024;

/// The URIs a handshake-era client subscribed to.
#[derive(Debug, Default)]
pub(super) struct Subscriptions {
    uris: BTreeSet<String>,
}

impl Peer {
    /// `resources/subscribe` and `resources/unsubscribe` (handshake era): a subscription to
    /// a resource the server does not have is refused (-32002); unsubscribing from a URI not
    /// subscribed to is a no-op.
    pub(super) fn subscription_request(&mut self, req: &Request, known: bool) {
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
            subs.uris.remove(uri);
        } else if !subs.uris.contains(uri) && subs.uris.len() >= MAX_SUBSCRIPTIONS {
            let e = ErrorObject::invalid_params(format!(
                "too many subscriptions: at most {MAX_SUBSCRIPTIONS} at once; unsubscribe from one first"
            ));
            return self.send_error(Some(&req.id), &e);
        } else {
            subs.uris.insert(uri.to_owned());
        }
        self.send_result(&req.id, &json!({}))
    }

    /// A resource changed: sends `notifications/resources/updated` for every URI the client
    /// subscribed to that `changed` accepts (handshake era; none in 2026-07-28), and returns
    /// how many were sent. The server calls it when it knows: a call's kept output is final,
    /// a call of a tool with logs ended.
    pub fn resources_updated(&mut self, changed: impl Fn(&str) -> bool) -> usize {
        let Some(h) = &self.handshake else { return 0 };
        let uris: Vec<String> = h
            .subscriptions
            .uris
            .iter()
            .filter(|u| changed(u))
            .cloned()
            .collect();
        for uri in &uris {
            self.send_notification(method::RESOURCES_UPDATED, &json!({ "uri": uri }));
        }
        uris.len()
    }
}
