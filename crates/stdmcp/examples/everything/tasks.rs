//! The conformance suite's fixtures for the tasks extension of 2026-07-28
//! (`io.modelcontextprotocol/tasks`), and a job for the interop checks: tools with a
//! background delay ([`ToolDef::background`]), so that a call still running after it is
//! answered with a task (or, for a client without the extension, a job); and tasks that ask
//! the client (`confirm_delete`, `multi_input`, `test_tool_with_task`).

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stdmcp::InputRequest;
use stdmcp::{CallToolResult, Ctx, Server, ToolDef, ToolError, ToolResult};
use stdmcp_proto::peer::TASKS_EXTENSION;

/// The fixtures' background delay: `slow_compute {seconds: 0}` answers at once, any longer
/// run becomes a task.
const AFTER: Duration = Duration::from_millis(500);

fn seconds_arg(args: &Value) -> Result<u64, ToolError> {
    match args.get("seconds") {
        None => Ok(0),
        Some(v) => v
            .as_u64()
            .filter(|s| *s <= 3600)
            .ok_or_else(|| ToolError::msg("seconds must be a whole number from 0 to 3600")),
    }
}

/// Waits `secs` seconds unless cancelled; reports each second as a status line.
fn work(ctx: &Ctx, secs: u64) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    let mut n = 0;
    while Instant::now() < end {
        if ctx.wait_cancelled((Instant::now() + Duration::from_secs(1)).min(end)) {
            return false;
        }
        n += 1;
        ctx.set_status(format!("computed {n} of {secs} s"));
    }
    true
}

fn slow_compute(ctx: &Ctx, args: Value) -> ToolResult {
    let secs = seconds_arg(&args)?;
    let label = args["label"].as_str().unwrap_or("slow_compute");
    if !work(ctx, secs) {
        return Err(ToolError::msg(format!("{label}: cancelled")));
    }
    Ok(CallToolResult::text(format!(
        "{label}: computed for {secs} s"
    )))
}

/// An elicitation of one field.
fn ask_field(key: &str, message: &str, field: &str, kind: &str) -> InputRequest {
    InputRequest {
        key: key.into(),
        method: "elicitation/create".into(),
        params: json!({"message": message, "requestedSchema": {
            "type": "object", "properties": { field: { "type": kind } }, "required": [field] }}),
    }
}

/// What the client said for `key`: `accept` with content, or its action.
fn said(answers: &serde_json::Map<String, Value>, key: &str) -> String {
    match answers.get(key) {
        Some(a) if a["action"] == "accept" => a["content"].to_string(),
        Some(a) => a["action"].as_str().unwrap_or("no answer").to_owned(),
        None => "no answer".to_owned(),
    }
}

/// Works past the background delay (so the call is a task by then), then asks; the
/// questions wait in the task (`input_required`) until `tasks/update` answers them all.
fn ask_as_task(
    ctx: &Ctx,
    requests: Vec<InputRequest>,
) -> Result<serde_json::Map<String, Value>, ToolError> {
    work(ctx, 1);
    ctx.ask(requests).map_err(|e| ToolError::msg(e.message))
}

fn input_tools(server: Server) -> Server {
    server
        .tool(
            ToolDef::new(
                "confirm_delete",
                "Asks (as a task) whether to delete a file; deletes nothing either way.",
                json!({ "type": "object", "properties": { "filename": { "type": "string" } } }),
                |ctx, args| {
                    let file = args["filename"].as_str().unwrap_or("the file").to_owned();
                    let a = ask_as_task(
                        ctx,
                        vec![ask_field(
                            "confirm",
                            &format!("Delete {file}?"),
                            "confirm",
                            "boolean",
                        )],
                    )?;
                    Ok(CallToolResult::text(format!(
                        "confirm_delete {file}: the client said {}",
                        said(&a, "confirm")
                    )))
                },
            )
            .background(AFTER),
        )
        .tool(
            ToolDef::new(
                "multi_input",
                "Asks (as a task) two questions at once.",
                json!({ "type": "object", "properties": {} }),
                |ctx, _| {
                    let a = ask_as_task(
                        ctx,
                        vec![
                            ask_field("name", "Your name?", "name", "string"),
                            ask_field("confirm", "Go on?", "confirm", "boolean"),
                        ],
                    )?;
                    Ok(CallToolResult::text(format!(
                        "multi_input: name {}, confirm {}",
                        said(&a, "name"),
                        said(&a, "confirm")
                    )))
                },
            )
            .background(AFTER),
        )
        .tool(
            ToolDef::new(
                "test_tool_with_task",
                "Asks the user's name first (input_required), then works as a task and greets.",
                json!({ "type": "object", "properties": {} }),
                |ctx, _| {
                    let a = ctx
                        .ask(vec![ask_field(
                            "user_name",
                            "What is your name?",
                            "name",
                            "string",
                        )])
                        .map_err(|e| ToolError::msg(e.message))?;
                    let name = a
                        .get("user_name")
                        .and_then(|v| v.pointer("/content/name"))
                        .and_then(Value::as_str)
                        .unwrap_or("stranger")
                        .to_owned();
                    work(ctx, 1);
                    Ok(CallToolResult::text(format!("Hello, {name}!")))
                },
            )
            .background(AFTER)
            .requires(TASKS_EXTENSION),
        )
}

pub(crate) fn tools(server: Server) -> Server {
    let server = input_tools(server);
    let object = |props: Value| json!({ "type": "object", "properties": props });
    server
        .tool(ToolDef::new(
            "greet",
            "Says hello (answers at once: never a task).",
            json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }),
            |_, args| Ok(CallToolResult::text(format!("Hello, {}!", args["name"].as_str().unwrap_or("world")))),
        ))
        .tool(
            ToolDef::new(
                "slow_compute",
                "Works for `seconds` seconds, then answers; a run longer than half a second becomes a task (or a job).",
                object(json!({ "seconds": { "type": "integer", "minimum": 0 }, "label": { "type": "string" } })),
                slow_compute,
            )
            .background(AFTER),
        )
        .tool(
            ToolDef::new(
                "failing_job",
                "Fails with a tool error after about a second (as a task; needs the tasks extension).",
                object(json!({})),
                |ctx, _| {
                    work(ctx, 1);
                    Err(ToolError::msg("failing_job failed on purpose"))
                },
            )
            .background(AFTER)
            .requires(TASKS_EXTENSION),
        )
        .tool(
            ToolDef::new(
                "protocol_error_job",
                "Panics after about a second: the task fails with a JSON-RPC error.",
                object(json!({})),
                |ctx, _| {
                    work(ctx, 1);
                    panic!("protocol_error_job panicked on purpose")
                },
            )
            .background(AFTER),
        )
}
