//! What a worker thread does with an admitted call: makes the handler's context ([`Ctx`]) of
//! it, runs its handler (a panic becomes an error for this call only) and hands the outcome
//! to the dispatcher. The runtime gives this to the worker pool, with the server's handlers.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::json;
use stdmcp_proto::jsonrpc::ErrorObject;
use stdmcp_proto::mcp::template::match_template;
use stdmcp_proto::mcp::{gate, CallToolResult, GetPromptResult, PromptMessage};
use stdmcp_proto::peer::{self, Reply, Work};

use super::ctx::Ctx;
use super::dispatch::Admitted;
use super::handlers::Handlers;
use crate::cancel::CancelReason;

/// Runs an admitted call on a worker thread and reports its end; returns the call this thread
/// runs next, if the pool could start no thread for one admitted meanwhile.
pub(super) fn work(handlers: &Handlers, a: Admitted) -> Option<Admitted> {
    let Admitted {
        shared,
        cancel,
        call,
    } = a;
    let peer::Admitted {
        id,
        work,
        version,
        wants_progress,
        client_capabilities,
        deadline,
        slots: _,
    } = call;
    let ctx = Ctx {
        shared,
        id,
        cancel,
        deadline,
        version,
        wants_progress,
        client_capabilities,
    };
    // Cancelled between its start and this worker's: never answered, nothing is run. (A
    // deadline that passed meanwhile is the handler's to answer: it timed out.)
    let reason = ctx.cancel.is_cancelled().then(|| ctx.cancel.reason());
    let outcome = match reason {
        Some(Some(CancelReason::Client | CancelReason::Shutdown)) => {
            Reply::Error(ErrorObject::internal("cancelled before it started"))
        }
        _ => run(handlers, &ctx, work),
    };
    ctx.shared.finish(&ctx.id, outcome, ctx.wants_progress)
}

/// Runs one piece of work on the worker thread; a panic becomes an error for this call only.
fn run(handlers: &Handlers, ctx: &Ctx, work: Work) -> Reply {
    let result = catch_unwind(AssertUnwindSafe(|| match work {
        Work::CallTool { tool, arguments } => match handlers.tools.get(tool) {
            Some(handler) => {
                Reply::Tool(handler(ctx, arguments).unwrap_or_else(|e| CallToolResult::error(e.0)))
            }
            None => Reply::Error(ErrorObject::internal("no handler for this tool")),
        },
        Work::GetPrompt { prompt, arguments } => match handlers.prompts.get(prompt) {
            Some(handler) => match handler(ctx, &arguments) {
                Ok(r) => prompt_value(r, ctx),
                Err(e) => Reply::Error(e),
            },
            None => Reply::Error(ErrorObject::internal("no handler for this prompt")),
        },
        Work::ReadResource { uri } => read_resource(handlers, ctx, &uri),
        Work::Complete { params } => {
            let values = match &handlers.complete {
                Some(c) => c(ctx, &params),
                None => Ok(Vec::new()),
            };
            match values {
                Ok(mut v) => {
                    let total = v.len();
                    v.truncate(100);
                    Reply::Value(
                        json!({"completion": {"values": v, "total": total, "hasMore": total > 100}}),
                    )
                }
                Err(e) => Reply::Error(e),
            }
        }
    }));
    result.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        log::error!("handler for request {} panicked: {what}", ctx.id);
        Reply::Error(ErrorObject::internal(format!(
            "Internal error: the handler panicked: {what}"
        )))
    })
}

fn prompt_value(r: GetPromptResult, ctx: &Ctx) -> Reply {
    let messages: Vec<PromptMessage> = r
        .messages
        .into_iter()
        .map(|m| PromptMessage {
            role: m.role,
            content: gate::content(m.content, ctx.version),
        })
        .collect();
    let r = GetPromptResult {
        description: r.description,
        messages,
    };
    match serde_json::to_value(r) {
        Ok(v) => Reply::Value(v),
        Err(e) => Reply::Error(ErrorObject::internal(e.to_string())),
    }
}

fn read_resource(handlers: &Handlers, ctx: &Ctx, uri: &str) -> Reply {
    let found = match handlers.resources.get(uri) {
        Some(entry) => Some((entry.read.clone(), HashMap::new())),
        None => handlers
            .templates
            .iter()
            .find_map(|t| match_template(&t.template, uri).map(|vars| (t.read.clone(), vars))),
    };
    let Some((read, vars)) = found else {
        return Reply::NotFound(uri.to_owned());
    };
    match read(ctx, uri, &vars) {
        Ok(contents) if contents.is_empty() => Reply::NotFound(uri.to_owned()),
        Ok(contents) => Reply::Value(json!({ "contents": contents })),
        Err(e) => Reply::Error(e),
    }
}
