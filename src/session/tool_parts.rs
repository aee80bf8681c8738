//! What every session tool is made of: the `session` parameter and its name, the schema
//! object, the annotations, the reply, and the operations' view of a call's `Ctx` (its
//! [`Caller`]). Shared by the kinds' tools (`tools.rs`) and the proof cursor's
//! (`cursor/tools.rs`).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::exchange::Caller;
use super::ops::OpResult;
use stdmcp::mcp::{CallToolResult, ToolAnnotations};
use stdmcp::CancelReason;
use stdmcp::{Ctx, ToolError, ToolResult};

/// Longest session name.
const MAX_NAME: usize = 64;
pub(crate) fn session_param() -> Value {
    json!({"type": "string", "description": "The session's name (default \"default\"): sessions of one kind with different names are separate programs.", "pattern": "^[A-Za-z0-9_.-]{1,64}$"})
}

pub(crate) fn name_of(args: &Value) -> Result<String, ToolError> {
    match args.get("session") {
        None | Some(Value::Null) => Ok("default".into()),
        Some(Value::String(s))
            if (1..=MAX_NAME).contains(&s.len())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)) =>
        {
            Ok(s.clone())
        }
        Some(_) => Err(ToolError::msg(
            "session must be 1-64 characters of A-Z a-z 0-9 _ . -",
        )),
    }
}

pub(crate) fn reply(r: OpResult) -> ToolResult {
    Ok(match r {
        Ok(t) => CallToolResult::text(t),
        Err(t) => CallToolResult::error(t),
    })
}

pub(crate) fn with_call<T>(ctx: &Ctx, f: impl FnOnce(&Caller<'_>) -> T) -> T {
    let token = ctx.cancel_token().clone();
    let reporter = ctx.reporter();
    // The deadline fires the token too; the operations see it by `deadline` instead, so
    // that they can tell the model the send timed out rather than that it was cancelled.
    let cancelled = || token.is_cancelled() && token.reason() != Some(CancelReason::Deadline);
    let shutdown = || token.reason() == Some(CancelReason::Shutdown);
    let status = move |line: &str| reporter.set_status(line);
    // Every session tool that waits has a deadline (see `kind_tools`); a day is a fallback.
    let deadline = ctx
        .deadline()
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
    f(&Caller {
        cancelled: &cancelled,
        deadline,
        shutdown: &shutdown,
        status: &status,
    })
}

pub(crate) fn annotations(read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations {
    ToolAnnotations {
        title: None,
        read_only_hint: Some(read_only),
        destructive_hint: Some(destructive),
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(false),
    }
}

pub(crate) fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}
