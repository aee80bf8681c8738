//! The resource subscriptions of a handshake-era connection (MCP 2025-11-25, Resources:
//! Subscriptions): the URIs its client subscribed to, at most [`MAX_SUBSCRIPTIONS`]. A
//! sub-machine of the peer: the server role (`server_role::subscriptions`) answers
//! `resources/subscribe` and sends `notifications/resources/updated` from it.

use std::collections::BTreeSet;

/// Most URIs one client may be subscribed to at once; a subscription beyond it is refused.
pub const MAX_SUBSCRIPTIONS: usize = 1024;

/// The URIs a handshake-era client subscribed to.
#[derive(Debug, Default)]
pub(super) struct Subscriptions {
    uris: BTreeSet<String>,
}

impl Subscriptions {
    /// Subscribes to `uri` (again: a no-op); false when [`MAX_SUBSCRIPTIONS`] other URIs are
    /// subscribed to already.
    pub(super) fn subscribe(&mut self, uri: &str) -> bool {
        if !self.uris.contains(uri) && self.uris.len() >= MAX_SUBSCRIPTIONS {
            return false;
        }
        self.uris.insert(uri.to_owned());
        true
    }

    /// Unsubscribes from `uri` (not subscribed to: a no-op).
    pub(super) fn unsubscribe(&mut self, uri: &str) {
        self.uris.remove(uri);
    }

    /// The URIs subscribed to that `changed` accepts, in order.
    pub(super) fn matching(&self, changed: impl Fn(&str) -> bool) -> Vec<String> {
        self.uris.iter().filter(|u| changed(u)).cloned().collect()
    }
}
