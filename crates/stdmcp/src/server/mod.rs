//! The stdio server runtime and the Rust API for tools.
//!
//! Build a [`Server`] with [`ToolDef`]s (and optionally prompts and resources), then call
//! [`Server::serve_stdio`]. Each handler runs on a worker thread with a [`Ctx`] that reports
//! progress, sees cancellation, and in the handshake era can ask the client for sampling,
//! elicitation or roots.
//!
//! Inside, imports point one way. This file holds [`Server`] (what a server is built from,
//! and where serving starts) and re-exports the API; no module imports it. What a server is
//! built from: `tool` and `typed` ([`ToolDef`]), `handlers` (what handlers return, their
//! types, and the table of a server's handlers), `options` and `env` ([`Options`]). Serving:
//! `runtime` starts the threads and runs the shutdown sequence; `worker` is what a worker
//! thread does with an admitted call: it makes the call's [`Ctx`] (`ctx`) and runs its
//! handler; `dispatch` holds the peer behind its lock, carries out its effects and runs the
//! timer, handing admitted calls to the worker `pool` and bytes to the writer's `outbox`;
//! beneath it, the calls' status lines (`status`), the timer's wake-up (`bell`) and the
//! peer's diagnostics (`diagnostics`). The dispatcher names no handler and no context: the
//! runtime gives it the worker's function, and a context points to the dispatcher, never
//! the other way.

mod bell;
mod ctx;
mod diagnostics;
mod dispatch;
mod env;
mod handlers;
mod options;
mod outbox;
mod pool;
mod runtime;
mod status;
mod tool;
mod typed;
mod worker;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use stdmcp_proto::jsonrpc::ErrorObject;
use stdmcp_proto::mcp::{
    GetPromptResult, Implementation, Prompt, Resource, ResourceContents, ResourceTemplate,
};
use stdmcp_proto::peer::Catalog;

pub use ctx::{Ctx, Reporter};
pub(crate) use diagnostics::{diagnostics_level, log_diagnostics};
pub use handlers::{ToolError, ToolResult};
pub use options::Options;
pub use stdmcp_proto::peer::Timeout;
pub use tool::ToolDef;

use handlers::{Handlers, ReadFn, ResourceEntry, TemplateEntry};

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
        self.serve_on(
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
        self.serve_on(input, output, false)
    }

    fn serve_on(
        self,
        input: Box<dyn std::io::Read + Send>,
        output: Box<dyn std::io::Write + Send>,
        signals: bool,
    ) -> std::process::ExitCode {
        let Server {
            catalog,
            handlers,
            options,
            shutdown,
        } = self;
        runtime::serve(catalog, handlers, options, shutdown, input, output, signals)
    }
}
