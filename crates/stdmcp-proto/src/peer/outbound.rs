//! Requests this side sends: the record of one awaiting its response ([`Outbound`]), and how
//! a client frames its requests into eras ([`ClientEra`]).

use serde_json::Value;

use crate::mcp::{Implementation, ProtocolVersion};

/// How a client frames its requests.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientEra {
    /// Handshake era: the caller sends `initialize` itself; requests carry no era `_meta`.
    Handshake,
    /// 2026-07-28: every request carries the version, capabilities and client info in `_meta`.
    Stateless {
        /// The revision asked for.
        version: ProtocolVersion,
        /// The client's capabilities.
        capabilities: Value,
        /// Who the client is.
        client_info: Implementation,
    },
}

/// A request this side sent, until its response: whether it was cancelled, and the progress
/// token it carries.
#[derive(Debug)]
pub(super) struct Outbound {
    pub cancelled: bool,
    pub progress_token: Option<Value>,
}
