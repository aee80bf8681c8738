//! The stdio server runtime and the Rust API for tools.
//!
//! Build a [`Server`] with [`ToolDef`]s (and optionally prompts and resources), then call
//! [`Server::serve_stdio`]. Each handler runs on a worker thread with a [`Ctx`] that reports
//! progress, sees cancellation, and in the handshake era can ask the client for sampling,
//! elicitation or roots.

mod bell;
mod ctx;
mod diagnostics;
mod dispatch;
mod env;
mod outbox;
mod pool;
mod runtime;
mod status;
mod typed;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::jsonrpc::ErrorObject;
use crate::mcp::{
    CallToolResult, GetPromptResult, Implementation, Prompt, Resource, ResourceContents,
    ResourceTemplate, Tool, ToolAnnotations,
};
pub use stdmcp_proto::peer::Timeout;
use stdmcp_proto::peer::{self, Catalog};

pub use ctx::{Ctx, Reporter};
pub(crate) use diagnostics::{diagnostics_level, log_diagnostics};
use pool::Pool;

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

type ToolFn = dyn Fn(&Ctx, Value) -> ToolResult + Send + Sync;
type PromptFn =
    dyn Fn(&Ctx, &Map<String, Value>) -> Result<GetPromptResult, ErrorObject> + Send + Sync;
type ReadFn = dyn Fn(&Ctx, &str, &HashMap<String, String>) -> Result<Vec<ResourceContents>, ErrorObject>
    + Send
    + Sync;
type CompleteFn = dyn Fn(&Ctx, &Value) -> Result<Vec<String>, ErrorObject> + Send + Sync;

/// A tool: its definition as clients see it, and the handler that runs it.
pub struct ToolDef {
    tool: Tool,
    handler: Arc<ToolFn>,
    timeout: Option<Timeout>,
    requires: Vec<String>,
    background: Option<Duration>,
    slots: usize,
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

/// Settings of the runtime: [`Options::default`], then the fields to change. The library reads
/// no environment variable on its own; [`Options::from_env`] takes `STDMCP_*` overrides when a
/// program asks (the `stdmcp` command does).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Heartbeat progress interval for calls with a progress token (default 5 s).
    pub heartbeat: Duration,
    /// After stdin closes or SIGTERM/SIGHUP, how long calls in flight may run before they are
    /// cancelled (default 1.5 s: clients send SIGTERM about 2 s after closing stdin).
    pub drain: Duration,
    /// After cancelling at shutdown, how long to wait for the calls to end (default 3 s).
    pub stop_wait: Duration,
    /// Largest frame accepted (default 64 MiB).
    pub max_frame_len: usize,
    /// Calls running at once; more are queued (default 1024).
    pub max_concurrent_calls: usize,
    /// Stack size of worker threads (default 1 MiB).
    pub worker_stack: usize,
    /// Idle worker threads exit after this long (default 30 s).
    pub worker_keep_alive: Duration,
    /// Handle SIGTERM, SIGHUP and SIGINT (default true; `serve_stdio` only).
    pub signals: bool,
    /// Bytes queued for stdout beyond which workers wait for the client to read (default
    /// 8 MiB). Progress is coalesced to the latest per call instead, and the reader stops
    /// reading at twice this much.
    pub max_outgoing_bytes: usize,
    /// At exit, queued output is written for as long as the client keeps reading; the server
    /// gives up when stdout accepted nothing for this long (default 2 s).
    pub flush_stall: Duration,
    /// Serve only the handshake era (default false): `server/discover` gets -32601, so that
    /// 2026-07-28 clients fall back to `initialize` (`stdmcp serve --era handshake`).
    pub handshake_only: bool,
    /// How long a 2026-07-28 call that asked the client for input waits for the retry
    /// before it is released (default 5 min).
    pub input_wait: Duration,
    /// 2026-07-28 calls waiting for the client's input at once, each holding a worker
    /// thread (default 64); beyond it, asking fails with an error.
    pub max_waiting_calls: usize,
    /// Jobs kept at once, working or ended (default 16; README "Long runs").
    pub max_jobs: usize,
    /// How long an ended job's result stays readable (default 10 min).
    pub job_retention: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            heartbeat: peer::DEFAULT_HEARTBEAT,
            drain: Duration::from_millis(1500),
            stop_wait: Duration::from_secs(3),
            max_frame_len: stdmcp_proto::framing::DEFAULT_MAX_FRAME_LEN,
            max_concurrent_calls: 1024,
            worker_stack: 1024 * 1024,
            worker_keep_alive: Duration::from_secs(30),
            signals: true,
            max_outgoing_bytes: 8 << 20,
            flush_stall: Duration::from_secs(2),
            handshake_only: false,
            input_wait: peer::DEFAULT_PARK_TTL,
            max_waiting_calls: 64,
            max_jobs: peer::DEFAULT_MAX_JOBS,
            job_retention: peer::DEFAULT_JOB_RETENTION,
        }
    }
}

pub(crate) struct ResourceEntry {
    read: Arc<ReadFn>,
}

pub(crate) struct TemplateEntry {
    template: String,
    read: Arc<ReadFn>,
}

/// Handlers by catalog index.
pub(crate) struct Handlers {
    tools: Vec<Arc<ToolFn>>,
    prompts: Vec<Arc<PromptFn>>,
    resources: HashMap<String, ResourceEntry>,
    templates: Vec<TemplateEntry>,
    complete: Option<Arc<CompleteFn>>,
}

/// A server: a catalog of tools, prompts and resources, and their handlers.
pub struct Server {
    catalog: Catalog,
    handlers: Handlers,
    options: Options,
    shutdown: Vec<Box<dyn FnOnce() + Send>>,
}

impl Server {
    /// A server that introduces itself as `name` `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Server {
        let mut catalog = Catalog::default();
        catalog.server_info = Implementation::new(name, version);
        Server {
            catalog,
            handlers: Handlers {
                tools: Vec::new(),
                prompts: Vec::new(),
                resources: HashMap::new(),
                templates: Vec::new(),
                complete: None,
            },
            options: Options::default(),
            shutdown: Vec::new(),
        }
    }

    /// Runs `f` when serving ends, after the calls in flight were drained or cancelled
    /// (for example to stop long-lived child processes).
    pub fn on_shutdown(mut self, f: impl FnOnce() + Send + 'static) -> Server {
        self.shutdown.push(Box::new(f));
        self
    }

    /// Replaces the `serverInfo` (title, description, icons…).
    pub fn info(mut self, info: Implementation) -> Server {
        self.catalog.server_info = info;
        self
    }

    /// Guidance for the model, sent as `instructions`.
    pub fn instructions(mut self, text: impl Into<String>) -> Server {
        self.catalog.instructions = Some(text.into());
        self
    }

    /// Adds a tool. A tool with the name of an earlier one replaces it.
    pub fn tool(mut self, def: ToolDef) -> Server {
        let c = &mut self.catalog;
        match c.tool_index(&def.tool.name) {
            Some(i) => {
                c.tools[i] = def.tool;
                c.tool_requirements[i] = def.requires;
                c.tool_timeouts[i] = def.timeout;
                c.tool_background[i] = def.background;
                c.tool_slots[i] = def.slots;
                self.handlers.tools[i] = def.handler;
            }
            None => {
                c.tools.push(def.tool);
                c.tool_requirements.push(def.requires);
                c.tool_timeouts.push(def.timeout);
                c.tool_background.push(def.background);
                c.tool_slots.push(def.slots);
                self.handlers.tools.push(def.handler);
            }
        }
        self
    }

    /// Adds a prompt; required arguments are checked before the handler runs.
    pub fn prompt(
        mut self,
        prompt: Prompt,
        handler: impl Fn(&Ctx, &Map<String, Value>) -> Result<GetPromptResult, ErrorObject>
            + Send
            + Sync
            + 'static,
    ) -> Server {
        self.catalog.prompts.push(prompt);
        self.handlers.prompts.push(Arc::new(handler));
        self
    }

    /// Adds a resource with a fixed URI.
    pub fn resource(
        mut self,
        resource: Resource,
        read: impl Fn(&Ctx, &str) -> Result<Vec<ResourceContents>, ErrorObject> + Send + Sync + 'static,
    ) -> Server {
        let read: Arc<ReadFn> = Arc::new(move |ctx, uri, _| read(ctx, uri));
        self.handlers
            .resources
            .insert(resource.uri.clone(), ResourceEntry { read });
        self.catalog.resources.push(resource);
        self
    }

    /// Adds a resource template (`{name}` variables, RFC 6570 level 1); the handler gets
    /// the URI and the variables.
    pub fn resource_template(
        mut self,
        template: ResourceTemplate,
        read: impl Fn(&Ctx, &str, &HashMap<String, String>) -> Result<Vec<ResourceContents>, ErrorObject>
            + Send
            + Sync
            + 'static,
    ) -> Server {
        self.handlers.templates.push(TemplateEntry {
            template: template.uri_template.clone(),
            read: Arc::new(read),
        });
        self.catalog.resource_templates.push(template);
        self
    }

    /// Answers `completion/complete` (params as sent) with candidate values.
    pub fn completer(
        mut self,
        complete: impl Fn(&Ctx, &Value) -> Result<Vec<String>, ErrorObject> + Send + Sync + 'static,
    ) -> Server {
        self.handlers.complete = Some(Arc::new(complete));
        self
    }

    /// Replaces the runtime settings.
    pub fn options(mut self, options: Options) -> Server {
        self.options = options;
        self
    }

    /// Serves only the handshake era ([`Options::handshake_only`]) when `yes`.
    pub fn handshake_only(mut self, yes: bool) -> Server {
        self.options.handshake_only = yes;
        self
    }

    /// The catalog as clients see it.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Serves MCP on stdin/stdout until stdin closes or a signal arrives; returns the exit
    /// code the process should end with (0, or 130 after SIGINT).
    pub fn serve_stdio(self) -> std::process::ExitCode {
        runtime::serve(
            self,
            Box::new(std::io::stdin()),
            Box::new(std::io::stdout()),
            true,
        )
    }

    /// Serves MCP on any byte streams (no signal handling); returns when `input` ends.
    pub fn serve(
        self,
        input: Box<dyn std::io::Read + Send>,
        output: Box<dyn std::io::Write + Send>,
    ) -> std::process::ExitCode {
        runtime::serve(self, input, output, false)
    }
}
