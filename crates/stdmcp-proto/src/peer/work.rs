//! The work a server-role request needs done outside the peer: what it is ([`Work`]), the
//! admitted call that carries it ([`Admitted`]), and how it ended ([`Reply`]).

use std::time::Instant;

use serde_json::Value;

use crate::jsonrpc::{ErrorObject, RequestId};
use crate::mcp::{CallToolResult, ClientCapabilities, ProtocolVersion};

/// The work a server-role request needs done outside the peer.
#[derive(Clone, Debug, PartialEq)]
pub enum Work {
    /// Run tool number `tool` of the catalog with these (validated) arguments.
    CallTool {
        /// Index into [`Catalog::tools`](super::Catalog::tools).
        tool: usize,
        /// The arguments object.
        arguments: Value,
    },
    /// Build the prompt `name`.
    GetPrompt {
        /// Index into [`Catalog::prompts`](super::Catalog::prompts).
        prompt: usize,
        /// Its arguments.
        arguments: serde_json::Map<String, Value>,
    },
    /// Read the resource `uri`.
    ReadResource {
        /// The URI.
        uri: String,
    },
    /// Answer `completion/complete` (the params as sent).
    Complete {
        /// The params.
        params: Value,
    },
}

/// A request whose work must be started (server role).
#[derive(Clone, Debug, PartialEq)]
pub struct Admitted {
    /// The request id; report back with [`Peer::finish`](super::Peer::finish).
    pub id: RequestId,
    /// What to do.
    pub work: Work,
    /// The revision the answer is for.
    pub version: ProtocolVersion,
    /// True when the request carries a progress token.
    pub wants_progress: bool,
    /// The client's capabilities (per request in 2026-07-28, per connection before).
    pub client_capabilities: ClientCapabilities,
    /// When the server-side deadline of the call passes, if its tool has one.
    pub deadline: Option<Instant>,
    /// Slots of the concurrency limit the call takes (one, or a portfolio's members).
    pub slots: usize,
}

/// How the work of a request ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// A tool result.
    Tool(CallToolResult),
    /// A finished result object (prompt, resource contents, completion).
    Value(Value),
    /// The resource asked for does not exist (-32002 before 2026-07-28, -32602 after).
    NotFound(String),
    /// A JSON-RPC error.
    Error(ErrorObject),
}
