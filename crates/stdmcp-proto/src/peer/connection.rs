//! The record of a handshake-era connection ([`Handshake`]): what `initialize` negotiated
//! and what the client subscribed to.

use super::subscriptions::Subscriptions;
use crate::mcp::{ClientCapabilities, LogLevel, ProtocolVersion};

/// A handshake-era connection (MCP 2025-11-25, Lifecycle).
#[derive(Debug)]
pub(super) struct Handshake {
    pub version: ProtocolVersion,
    pub initialized: bool,
    pub log_level: Option<LogLevel>,
    pub client_capabilities: ClientCapabilities,
    /// What the client subscribed to (`resources/subscribe`).
    pub subscriptions: Subscriptions,
}
