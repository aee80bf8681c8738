//! Server role: the handshake era's connection (MCP 2025-11-25, Lifecycle): `initialize`
//! negotiates the revision and records the client's capabilities; the server's
//! capabilities for a revision, which `server/discover` (2026-07-28) shows as well.

use serde_json::{json, Value};

use crate::jsonrpc::{ErrorObject, Request};
use crate::mcp::{gate, ClientCapabilities, InitializeResult, ProtocolVersion};
use crate::peer::connection::Handshake;
use crate::peer::front::Peer;
use crate::peer::terms::TASKS_EXTENSION;

impl Peer {
    pub(super) fn initialize(&mut self, req: Request) {
        let Some(asked) = req.params.get("protocolVersion").and_then(Value::as_str) else {
            let e =
                ErrorObject::invalid_params("initialize needs params.protocolVersion (a string)");
            return self.send_error(Some(&req.id), &e);
        };
        // Answer with the client's revision when supported, else the newest handshake-era one
        // (MCP 2025-11-25, Lifecycle: Version Negotiation: answer with a supported
        // version, never an error).
        let version = ProtocolVersion::parse(asked)
            .filter(|v| v.is_handshake_era())
            .unwrap_or(ProtocolVersion::NEWEST_HANDSHAKE);
        let caps = req
            .params
            .get("capabilities")
            .cloned()
            .unwrap_or(Value::Null);
        self.handshake = Some(Handshake {
            version,
            initialized: false,
            log_level: None,
            client_capabilities: ClientCapabilities::new(caps),
            subscriptions: Default::default(),
        });
        let result = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: self.capabilities(version, false),
            server_info: gate::implementation(&self.catalog.server_info, version),
            instructions: self
                .catalog
                .instructions
                .clone()
                .filter(|_| version.has_2503_features()),
        };
        self.send_result(&req.id, &result);
    }

    /// The server's capabilities for a revision (MCP 2025-11-25, Lifecycle: Capability Negotiation;
    /// 2026-07-28, Server Discovery).
    pub(in crate::peer) fn capabilities(&self, v: ProtocolVersion, stateless: bool) -> Value {
        let c = &self.catalog;
        let mut caps = json!({ "tools": { "listChanged": false }, "logging": {} });
        if !c.prompts.is_empty() {
            caps["prompts"] = json!({ "listChanged": false });
        }
        if !c.resources.is_empty() || !c.resource_templates.is_empty() {
            caps["resources"] = if stateless {
                json!({ "listChanged": false })
            } else {
                json!({ "subscribe": true, "listChanged": false })
            };
        }
        if v.has_2503_features() && self.has_completions() {
            caps["completions"] = json!({});
        }
        if stateless && c.has_background() {
            // 2026-07-28 only: the extension does not exist in earlier revisions.
            caps["extensions"] = json!({ TASKS_EXTENSION: {} });
        }
        caps
    }

    pub(super) fn has_completions(&self) -> bool {
        !self.catalog.prompts.is_empty() || !self.catalog.resource_templates.is_empty()
    }
}
