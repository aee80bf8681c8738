//! A test server built with stdmcp's public API: the tools the integration tests, the
//! benchmark and the SDK interop checks use, and the official conformance suite's fixtures.
//!
//! Run: `cargo run --example everything` (speaks MCP on stdin/stdout).
//!
//! | tool | what it does |
//! |---|---|
//! | `echo {text}` | returns the text |
//! | `add {a, b}` | integers; `structuredContent {sum}` with an output schema, and the JSON as text |
//! | `sleep {ms}` | sleeps; progress every 100 ms when asked; stops at once when cancelled |
//! | `spawn {ms}` | runs the system `sleep` through the process runner; cancelling kills it |
//! | `fail {}` | an `isError` result |
//! | `panic {}` | a handler that panics (the server goes on) |
//! | `flood {progress, message_bytes, logs, log_bytes, result_bytes}` | as fast as it can: `progress` progress reports with messages of about `message_bytes`, `logs` log messages of `log_bytes`, then a result of `result_bytes` |
//! | `hooked {}` | a cancel hook that reports progress and logs; waits for the cancel |
//! | `hooked_deadline {}` | the same, cancelled by its 100 ms deadline; answers how it ended |
//! | `test_*`, `json_schema_2020_12_tool` | the conformance suite's fixtures, with its prompts and resources (in `everything/conformance.rs`) |
//! | `test_roots`, `test_input_required_result_*` | ask the client (in `everything/mrtr.rs`) |
//! | `greet`, `slow_compute`, `failing_job`, `protocol_error_job` | the tasks extension's fixtures: calls longer than 0.5 s become tasks or jobs (in `everything/tasks.rs`) |

#[path = "everything/conformance.rs"]
mod conformance;
#[path = "everything/mrtr.rs"]
mod mrtr;
#[path = "everything/tasks.rs"]
mod tasks;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stdmcp::mcp::{LogLevel, ToolAnnotations};
use stdmcp::process::RunSpec;
use stdmcp::{CallToolResult, Ctx, Server, ToolDef, ToolError, ToolResult};

/// The input schema of a tool without arguments.
fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn schema(props: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": props, "required": required })
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        open_world_hint: Some(false),
        ..Default::default()
    }
}

fn int_arg(args: &Value, name: &str) -> Result<i64, ToolError> {
    args[name]
        .as_i64()
        .ok_or_else(|| ToolError::msg(format!("{name} must be an integer")))
}

fn sleep(ctx: &Ctx, args: Value) -> ToolResult {
    let ms = int_arg(&args, "ms")?.max(0) as u64;
    let start = Instant::now();
    let end = start + Duration::from_millis(ms);
    let total = ms.div_ceil(100) as f64;
    let mut step = 0u64;
    loop {
        let next = (start + Duration::from_millis(100 * (step + 1))).min(end);
        if ctx.wait_cancelled(next) {
            return Ok(CallToolResult::text("cancelled"));
        }
        step += 1;
        if next >= end {
            return Ok(CallToolResult::text("slept"));
        }
        ctx.progress(
            step as f64,
            Some(total),
            Some(&format!("slept {} ms", 100 * step)),
        );
    }
}

fn spawn(ctx: &Ctx, args: Value) -> ToolResult {
    let ms = int_arg(&args, "ms")?.max(0);
    let outcome = RunSpec::new("sleep")
        .arg(format!("{}.{:03}", ms / 1000, ms % 1000))
        .kill_grace(Duration::from_millis(500))
        .run(ctx.cancel_token())?;
    if outcome.cancelled {
        return Ok(CallToolResult::error("cancelled"));
    }
    Ok(CallToolResult::text("spawned"))
}

fn count_arg(args: &Value, name: &str) -> Result<usize, ToolError> {
    match args.get(name) {
        None => Ok(0),
        Some(_) => usize::try_from(int_arg(args, name)?.max(0))
            .map_err(|_| ToolError::msg(format!("{name} is too large"))),
    }
}

/// Floods the client: progress as fast as possible, log messages between them, then a large
/// result (what a chatty build or prover does to a client that reads slowly).
fn flood(ctx: &Ctx, args: Value) -> ToolResult {
    let progress = count_arg(&args, "progress")?;
    let logs = count_arg(&args, "logs")?;
    let log_text = "l".repeat(count_arg(&args, "log_bytes")?);
    let padding = "m".repeat(count_arg(&args, "message_bytes")?);
    let every = progress.checked_div(logs).map_or(usize::MAX, |n| n.max(1));
    let mut logged = 0;
    for i in 1..=progress.max(logs) {
        if ctx.is_cancelled() {
            return Ok(CallToolResult::text("cancelled"));
        }
        if i <= progress {
            let message = format!("P {i} {padding}");
            ctx.progress(i as f64, None, Some(&message));
        }
        if logged < logs && i % every == 0 {
            logged += 1;
            ctx.log(LogLevel::Info, json!({"n": logged, "text": log_text}));
        }
    }
    Ok(CallToolResult::text(
        "r".repeat(count_arg(&args, "result_bytes")?),
    ))
}

/// Waits for the cancel; the cancel hook reports progress and logs (as `Ctx::cancel_token`'s
/// docs allow), then the handler answers how the call ended.
fn hooked(ctx: &Ctx, _: Value) -> ToolResult {
    let reporter = ctx.reporter();
    ctx.progress(1.0, None, Some("waiting for the cancel"));
    let _guard = ctx.cancel_token().on_cancel(move || {
        reporter.progress(2.0, None, Some("cancel hook ran"));
    });
    let logged = {
        let token = ctx.cancel_token().clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let _log_guard = token.on_cancel(move || {
            let _ = tx.send(());
        });
        ctx.wait_cancelled(Instant::now() + Duration::from_secs(60));
        rx.recv_timeout(Duration::from_secs(10)).is_ok()
    };
    ctx.log(LogLevel::Info, "the cancel hook ran");
    Ok(CallToolResult::text(format!(
        "cancelled: {:?}, hooks ran: {logged}",
        ctx.cancel_reason()
    )))
}

/// The plain tools: echo, add, sleep, spawn.
fn tools(server: Server) -> Server {
    server
        .tool(
            ToolDef::new(
                "echo",
                "Returns the text it is given.",
                schema(json!({"text": {"type": "string"}}), &["text"]),
                |_, args| {
                    Ok(CallToolResult::text(
                        args["text"].as_str().unwrap_or_default(),
                    ))
                },
            )
            .title("Echo")
            .annotations(read_only()),
        )
        .tool(
            ToolDef::new(
                "add",
                "Adds two integers.",
                schema(
                    json!({"a": {"type": "integer"}, "b": {"type": "integer"}}),
                    &["a", "b"],
                ),
                |_, args| {
                    let sum = int_arg(&args, "a")?
                        .checked_add(int_arg(&args, "b")?)
                        .ok_or_else(|| ToolError::msg("the sum overflows"))?;
                    Ok(CallToolResult::structured(json!({ "sum": sum })))
                },
            )
            .title("Add")
            .output_schema(schema(json!({"sum": {"type": "integer"}}), &["sum"]))
            .annotations(read_only()),
        )
        .tool(
            ToolDef::new(
                "sleep",
                "Sleeps for ms milliseconds, reporting progress every 100 ms.",
                schema(json!({"ms": {"type": "integer", "minimum": 0}}), &["ms"]),
                sleep,
            )
            .annotations(read_only()),
        )
        .tool(
            ToolDef::new(
                "spawn",
                "Runs the system sleep program for ms milliseconds as a child process.",
                schema(json!({"ms": {"type": "integer", "minimum": 0}}), &["ms"]),
                spawn,
            )
            .annotations(read_only()),
        )
}

/// Tools at the edges: one that fails, one that panics, one that floods the client, and
/// cancel hooks.
fn edge_tools(server: Server) -> Server {
    server
        .tool(ToolDef::new(
            "fail",
            "Always fails.",
            json!({"type": "object"}),
            |_, _| Err(ToolError::msg("this tool always fails")),
        ))
        .tool(ToolDef::new(
            "panic",
            "A handler that panics.",
            json!({"type": "object"}),
            |_, _| panic!("the panic tool panicked on purpose"),
        ))
        .tool(ToolDef::new(
            "flood",
            "Reports progress and logs as fast as it can, then returns a large result.",
            schema(
                json!({
                    "progress": {"type": "integer", "minimum": 0},
                    "message_bytes": {"type": "integer", "minimum": 0},
                    "logs": {"type": "integer", "minimum": 0},
                    "log_bytes": {"type": "integer", "minimum": 0},
                    "result_bytes": {"type": "integer", "minimum": 0}
                }),
                &[],
            ),
            flood,
        ))
        .tool(ToolDef::new(
            "hooked",
            "Waits for the cancel; its cancel hook reports progress.",
            json!({"type": "object"}),
            hooked,
        ))
        .tool(
            ToolDef::new(
                "hooked_deadline",
                "Like hooked, cancelled by its 100 ms deadline.",
                json!({"type": "object"}),
                hooked,
            )
            .timeout(Duration::from_millis(100)),
        )
}

fn main() -> std::process::ExitCode {
    stdmcp::init_logging();
    let server = Server::new("stdmcp-everything", env!("CARGO_PKG_VERSION")).instructions(
        "A test server: echo, add, sleep, spawn, fail, and the conformance suite's fixtures.",
    );
    let server = conformance::tools(edge_tools(tools(server)));
    let server = conformance::resources(conformance::prompts(server));
    let server = tasks::tools(mrtr::tools(server));
    // The STDMCP_* settings the tests give it, read as the `stdmcp` command reads them.
    let options = stdmcp::Options::default().from_env();
    server.options(options).serve_stdio()
}
