//! A tool's definition and handler ([`ToolDef`]), as a server is built from them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use stdmcp_proto::mcp::{Tool, ToolAnnotations};
use stdmcp_proto::peer::Timeout;

use super::ctx::Ctx;
use super::handlers::{ToolFn, ToolResult};

/// A tool: its definition as clients see it, and the handler that runs it.
pub struct ToolDef {
    pub(super) tool: Tool,
    pub(super) handler: Arc<ToolFn>,
    pub(super) timeout: Option<Timeout>,
    pub(super) requires: Vec<String>,
    pub(super) background: Option<Duration>,
    pub(super) slots: usize,
}

impl ToolDef {
    /// A tool named `name` whose arguments follow `input_schema` (a JSON Schema object).
    /// The handler runs on its own worker thread.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl Fn(&Ctx, Value) -> ToolResult + Send + Sync + 'static,
    ) -> ToolDef {
        ToolDef {
            tool: Tool {
                name: name.into(),
                title: None,
                description: Some(description.into()),
                input_schema,
                output_schema: None,
                annotations: None,
                icons: None,
                meta: None,
            },
            handler: Arc::new(handler),
            timeout: None,
            requires: Vec::new(),
            background: None,
            slots: 1,
        }
    }

    /// Display title.
    pub fn title(mut self, title: impl Into<String>) -> ToolDef {
        self.tool.title = Some(title.into());
        self
    }

    /// JSON Schema of the `structuredContent` the tool returns.
    pub fn output_schema(mut self, schema: Value) -> ToolDef {
        self.tool.output_schema = Some(schema);
        self
    }

    /// Behaviour hints.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> ToolDef {
        self.tool.annotations = Some(annotations);
        self
    }

    /// A server-side deadline: when it passes, the call's cancel token fires with
    /// [`crate::cancel::CancelReason::Deadline`] (the handler still answers).
    pub fn timeout(mut self, timeout: Duration) -> ToolDef {
        self.timeout = Some(Timeout::Fixed(timeout));
        self
    }

    /// A server-side deadline by a rule, for example one each call chooses by an argument
    /// ([`Timeout::Argument`]). [`Ctx::deadline`] tells the handler when it is.
    pub fn timeout_rule(mut self, rule: Timeout) -> ToolDef {
        self.timeout = Some(rule);
        self
    }

    /// Calls still running `after` this long are answered with a job (README "Long runs"):
    /// its id, state, elapsed time and latest output lines, and how to go on; the work goes
    /// on, with its deadline, and `job_wait`, `job_cancel` and `jobs` (added to the tools)
    /// reach it. A 2026-07-28 request that declares the tasks extension gets a task instead.
    /// `Duration::ZERO` answers every call with a job at once. The handler's statuses
    /// (`Ctx::set_status`, progress messages) become the job's latest output lines, so
    /// `Ctx::wants_progress` is true for such a tool even without a progress token.
    pub fn background(mut self, after: Duration) -> ToolDef {
        self.background = Some(after);
        self
    }

    /// Each call counts as `n` calls against `max_concurrent_calls` and starts only when all
    /// `n` are free at once (a portfolio of `n` members, README "Portfolios"; default 1).
    pub fn slots(mut self, n: usize) -> ToolDef {
        self.slots = n.max(1);
        self
    }

    /// A client capability the tool needs (`"sampling"`, `"elicitation"`, `"roots"`, or an
    /// extension's identifier such as `"io.modelcontextprotocol/tasks"`): a call
    /// from a client that did not declare it is refused before the handler runs (-32021 in
    /// 2026-07-28, an `isError` result before).
    pub fn requires(mut self, capability: impl Into<String>) -> ToolDef {
        self.requires.push(capability.into());
        self
    }

    /// The definition as `tools/list` shows it.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }
}
