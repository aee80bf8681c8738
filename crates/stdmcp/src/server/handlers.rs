//! What handlers return ([`ToolResult`], [`ToolError`]), their types, and the table of a
//! server's handlers by catalog index ([`Handlers`]), which the workers run.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};
use stdmcp_proto::jsonrpc::ErrorObject;
use stdmcp_proto::mcp::{CallToolResult, GetPromptResult, ResourceContents};

use super::ctx::Ctx;

/// What a tool handler returns: `Err` becomes an `isError` result carrying the message.
pub type ToolResult = Result<CallToolResult, ToolError>;

/// A tool failure, shown to the model as an `isError` result.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolError(pub String);

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(e: E) -> ToolError {
        ToolError(e.to_string())
    }
}

impl ToolError {
    /// A failure with this message.
    pub fn msg(m: impl Into<String>) -> ToolError {
        ToolError(m.into())
    }
}

pub(super) type ToolFn = dyn Fn(&Ctx, Value) -> ToolResult + Send + Sync;
pub(super) type PromptFn =
    dyn Fn(&Ctx, &Map<String, Value>) -> Result<GetPromptResult, ErrorObject> + Send + Sync;
pub(super) type ReadFn = dyn Fn(&Ctx, &str, &HashMap<String, String>) -> Result<Vec<ResourceContents>, ErrorObject>
    + Send
    + Sync;
pub(super) type CompleteFn = dyn Fn(&Ctx, &Value) -> Result<Vec<String>, ErrorObject> + Send + Sync;

/// A resource's handler.
pub(super) struct ResourceEntry {
    pub(super) read: Arc<ReadFn>,
}

/// A resource template and its handler.
pub(super) struct TemplateEntry {
    pub(super) template: String,
    pub(super) read: Arc<ReadFn>,
}

/// Handlers by catalog index.
pub(super) struct Handlers {
    pub(super) tools: Vec<Arc<ToolFn>>,
    pub(super) prompts: Vec<Arc<PromptFn>>,
    pub(super) resources: HashMap<String, ResourceEntry>,
    pub(super) templates: Vec<TemplateEntry>,
    pub(super) complete: Option<Arc<CompleteFn>>,
}
