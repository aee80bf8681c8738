//! The server assembled from a loaded manifest: each tool's handler (a command run through
//! the runner, or a portfolio's race), the log tools, the output spool's tool, each session
//! kind's tools with its proof cursor's, and the runtime's options.

use std::sync::Arc;

use stdmcp::mcp::Implementation;
use stdmcp::{Options, Server, ToolDef};

use crate::call::{portfolio, run, schema};
use crate::spec::{Manifest, Roots, SessionKind, ToolSpec};

/// A server serving `manifest`.
pub(crate) fn server(manifest: Manifest) -> Server {
    let mut info = Implementation::new(&manifest.name, &manifest.version);
    info.title.clone_from(&manifest.title);
    info.description.clone_from(&manifest.description);
    let mut server = Server::new(&manifest.name, &manifest.version).info(info);
    if let Some(i) = &manifest.instructions {
        server = server.instructions(i);
    }
    let roots = Arc::new(manifest.roots.clone());
    for spec in &manifest.tools {
        server = server.tool(tool(spec, &manifest.tools, &roots));
    }
    server = crate::logs::tools::register(server, &manifest.tools, &roots);
    // Sessions keep their long answers in the spool too.
    if !manifest.tools.is_empty() || !manifest.sessions.is_empty() {
        server = crate::spool::tool::register(server, crate::spool::Spool::global());
    }
    server = sessions(server, &manifest.sessions);
    let mut options = Options::default();
    options.heartbeat = manifest.defaults.heartbeat;
    options.max_concurrent_calls = manifest.defaults.max_concurrent_calls;
    server.options(options.from_env())
}

/// The tool that serves `spec`: its program run through the runner, or its portfolio's
/// members (among `all`) raced.
fn tool(spec: &ToolSpec, all: &[ToolSpec], roots: &Arc<Roots>) -> ToolDef {
    let def = schema::tool_definition(spec, roots);
    let members: Vec<Arc<ToolSpec>> = spec
        .portfolio
        .iter()
        .filter_map(|m| all.iter().find(|t| &t.name == m))
        .map(|t| Arc::new(t.clone()))
        .collect();
    let slots = spec.portfolio.len();
    let (timeout, background) = (spec.timeout, spec.background);
    let spec = Arc::new(spec.clone());
    let roots = roots.clone();
    let mut tool = ToolDef::new(
        def.name.clone(),
        def.description.clone().unwrap_or_default(),
        def.input_schema.clone(),
        move |ctx, args| {
            Ok(if members.is_empty() {
                run::call(ctx, &spec, &roots, &args)
            } else {
                portfolio::call(ctx, &spec, &members, &roots, &args)
            })
        },
    )
    .timeout(timeout)
    .slots(slots);
    if let Some(t) = def.title {
        tool = tool.title(t);
    }
    if let Some(s) = def.output_schema {
        tool = tool.output_schema(s);
    }
    if let Some(a) = def.annotations {
        tool = tool.annotations(a);
    }
    if let Some(after) = background {
        tool = tool.background(after);
    }
    tool
}

/// Each session kind's tools, followed by its proof cursor's, and the tools and resources
/// of all sessions; the sessions end when the server does.
fn sessions(mut server: Server, kinds: &[SessionKind]) -> Server {
    if kinds.is_empty() {
        return server;
    }
    let reg = crate::session::registry();
    let cursors = Arc::new(crate::cursor::CursorStore::default());
    for kind in kinds {
        let kind = Arc::new(kind.clone());
        server = crate::session::add_kind(server, &reg, &kind);
        for t in crate::cursor::tools(&reg, &kind, &cursors) {
            server = server.tool(t);
        }
    }
    crate::session::finish(server, reg)
}
