//! The terms of one request, which every part of the server role answers by: its revision,
//! its era's result shape, its client capabilities (and the extensions they declare). A leaf
//! of the peer: it knows no other part.

use serde_json::{Map, Value};

use crate::mcp::{ClientCapabilities, LogLevel, ProtocolVersion};

/// The tasks extension's identifier (MCP 2026-07-28, SEP-2663).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How one request is to be answered: which revision, which era's result shape.
#[derive(Clone, Debug)]
pub(super) struct Terms {
    pub version: ProtocolVersion,
    pub stateless: bool,
    pub caps: ClientCapabilities,
    pub log_level: Option<LogLevel>,
}

/// A request's `_meta` object, if it has one.
pub(super) fn meta(params: &Value) -> Option<&Map<String, Value>> {
    params.get("_meta").and_then(Value::as_object)
}

/// A request's progress token, if it carries a usable one (a string or a number).
pub(super) fn progress_token(params: &Value) -> Option<Value> {
    meta(params)
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_number())
        .cloned()
}

/// True when these client capabilities declare the tasks extension.
pub fn declares_tasks(caps: &ClientCapabilities) -> bool {
    caps.as_value()
        .get("extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some_and(Value::is_object)
}
