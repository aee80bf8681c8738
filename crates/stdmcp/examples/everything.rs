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
//! | `test_*`, `json_schema_2020_12_tool` | the conformance suite's fixtures |
//! | `test_roots`, `test_input_required_result_*` | ask the client (in `everything/mrtr.rs`) |
//! | `greet`, `slow_compute`, `failing_job`, `protocol_error_job` | the tasks extension's fixtures: calls longer than 0.5 s become tasks or jobs (in `everything/tasks.rs`) |

#[path = "everything/mrtr.rs"]
mod mrtr;
#[path = "everything/tasks.rs"]
mod tasks;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stdmcp::jsonrpc::ErrorObject;
use stdmcp::mcp::{
    GetPromptResult, LogLevel, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents,
    ResourceTemplate, ToolAnnotations,
};
use stdmcp::process::RunSpec;
use stdmcp::{CallToolResult, Content, Ctx, Server, ToolDef, ToolError, ToolResult};

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
/// A WAV header with no samples.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

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

fn conformance_tools(server: Server) -> Server {
    let no_args = || json!({"type": "object", "properties": {}});
    let text_tool = |name: &str, desc: &str, result: fn() -> CallToolResult| {
        ToolDef::new(
            name,
            desc,
            json!({"type": "object", "properties": {}}),
            move |_, _| Ok(result()),
        )
    };
    server
        .tool(text_tool("test_simple_text", "Returns simple text content", || {
            CallToolResult::text("This is a simple text response for testing.")
        }))
        .tool(text_tool("test_image_content", "Returns image content", || {
            CallToolResult::new(vec![Content::image(PNG, "image/png")])
        }))
        .tool(text_tool("test_audio_content", "Returns audio content", || {
            CallToolResult::new(vec![Content::audio(WAV, "audio/wav")])
        }))
        .tool(text_tool("test_embedded_resource", "Returns an embedded resource", || {
            CallToolResult::new(vec![Content::resource(ResourceContents::text(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            ))])
        }))
        .tool(text_tool("test_multiple_content_types", "Returns text, image and resource content", || {
            CallToolResult::new(vec![
                Content::text("Multiple content types test:"),
                Content::image(PNG, "image/png"),
                Content::resource(ResourceContents::text(
                    "test://mixed-content-resource",
                    "application/json",
                    r#"{"test":"data","value":123}"#,
                )),
            ])
        }))
        .tool(text_tool("test_error_handling", "Always returns an error", || {
            CallToolResult::error("This tool intentionally returns an error for testing")
        }))
        .tool(ToolDef::new("test_tool_with_logging", "Sends log messages while running", no_args(), |ctx, _| {
            for (i, m) in ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate() {
                if i > 0 && !ctx.sleep(Duration::from_millis(50)) {
                    break;
                }
                ctx.log(LogLevel::Info, *m);
            }
            Ok(CallToolResult::text("Tool with logging executed successfully"))
        }))
        .tool(ToolDef::new("test_tool_with_progress", "Reports progress 0, 50, 100", no_args(), |ctx, _| {
            for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if i > 0 && !ctx.sleep(Duration::from_millis(50)) {
                    break;
                }
                ctx.progress(p, Some(100.0), Some(&format!("Completed step {p} of 100")));
            }
            Ok(CallToolResult::text("Progress tool completed"))
        }))
        .tool(sample_tool(
            "test_sampling",
            "Asks the client's model to answer a prompt",
            schema(json!({"prompt": {"type": "string", "description": "The prompt to send"}}), &["prompt"]),
            |args| args["prompt"].as_str().unwrap_or_default().to_owned(),
        ))
        .tool(elicit_tool(
            "test_elicitation",
            schema(json!({"message": {"type": "string"}}), &["message"]),
            |args| {
                json!({"message": args["message"].as_str().unwrap_or("Please provide your information"), "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "Your username"},
                        "email": {"type": "string", "description": "Your email address"}
                    },
                    "required": ["username", "email"]
                }})
            },
        ))
        .tool(elicit_tool("test_elicitation_sep1034_defaults", no_args(), |_| {
            json!({"message": "Please review and update the form fields with defaults", "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}
                }
            }})
        }))
        .tool(elicit_tool("test_elicitation_sep1330_enums", no_args(), |_| {
            json!({"message": "Please select options from the enum fields", "requestedSchema": {
                "type": "object",
                "properties": {
                    "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}
                }
            }})
        }))
        .tool(ToolDef::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            // The suite's SEP-1613/SEP-2106 fixture: every keyword must survive tools/list.
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }),
            |_, args| Ok(CallToolResult::text(format!("JSON Schema 2020-12 tool called with: {args}"))),
        ))
        // Diagnostic tools of the suite's 2026-07-28 `server-stateless` scenario.
        .tool(ToolDef::new("test_logging_tool", "Sends log messages (info) while running", no_args(), |ctx, _| {
            for m in ["Logging tool started", "Logging tool running", "Logging tool done"] {
                ctx.log(LogLevel::Info, m);
            }
            Ok(CallToolResult::text("Logging tool executed"))
        }))
        .tool(elicit_tool("test_streaming_elicitation", no_args(), |_| {
            json!({"message": "Please confirm", "requestedSchema": {
                "type": "object",
                "properties": {"confirmed": {"type": "boolean", "description": "Confirm"}},
                "required": ["confirmed"]
            }})
        }))
        .tool(sample_tool(
            "test_missing_capability",
            "Needs the client's sampling capability",
            no_args(),
            |_| "Say hello".to_owned(),
        ))
}

/// A tool that asks the client's model (`sampling/createMessage`) and returns its answer.
fn sample_tool(
    name: &str,
    description: &str,
    input: Value,
    prompt: fn(&Value) -> String,
) -> ToolDef {
    ToolDef::new(name, description, input, move |ctx, args| {
        let request = json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt(&args)}}], "maxTokens": 100});
        let r = ctx.create_message(request).map_err(|e| ToolError::msg(e.message))?;
        let text = r.pointer("/content/text").and_then(Value::as_str).unwrap_or("");
        Ok(CallToolResult::text(format!("LLM response: {text}")))
    })
    .requires("sampling")
}

/// A tool that asks the user (`elicitation/create`) and returns the answer.
fn elicit_tool(name: &str, input: Value, params: fn(&Value) -> Value) -> ToolDef {
    ToolDef::new(
        name,
        "Asks the user for input through elicitation",
        input,
        move |ctx, args| {
            let r = ctx
                .elicit(params(&args))
                .map_err(|e| ToolError::msg(e.message))?;
            let action = r["action"].as_str().unwrap_or("unknown");
            Ok(CallToolResult::text(format!(
                "User response: action={action}, content={}",
                r["content"]
            )))
        },
    )
    .requires("elicitation")
}

fn prompt(name: &str, description: &str, args: &[&str]) -> Prompt {
    let arguments = args
        .iter()
        .map(|a| PromptArgument {
            name: (*a).into(),
            title: None,
            description: Some(format!("Argument {a}")),
            required: Some(true),
        })
        .collect::<Vec<_>>();
    Prompt {
        name: name.into(),
        title: None,
        description: Some(description.into()),
        arguments: (!arguments.is_empty()).then_some(arguments),
        icons: None,
    }
}

fn user(content: Content) -> PromptMessage {
    PromptMessage {
        role: "user".into(),
        content,
    }
}

fn prompts(server: Server) -> Server {
    let one = |messages: Vec<PromptMessage>| {
        Ok(GetPromptResult {
            description: None,
            messages,
        })
    };
    server
        .prompt(
            prompt(
                "test_simple_prompt",
                "A simple prompt without arguments",
                &[],
            ),
            move |_, _| {
                one(vec![user(Content::text(
                    "This is a simple prompt for testing.",
                ))])
            },
        )
        .prompt(
            prompt(
                "test_prompt_with_arguments",
                "A prompt with required arguments",
                &["arg1", "arg2"],
            ),
            move |_, a| {
                let get = |k: &str| {
                    a.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                one(vec![user(Content::text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    get("arg1"),
                    get("arg2")
                )))])
            },
        )
        .prompt(
            prompt(
                "test_prompt_with_embedded_resource",
                "A prompt with an embedded resource",
                &["resourceUri"],
            ),
            move |_, a| {
                let uri = a
                    .get("resourceUri")
                    .and_then(Value::as_str)
                    .unwrap_or("test://example-resource");
                one(vec![
                    user(Content::resource(ResourceContents::text(
                        uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    ))),
                    user(Content::text("Please process the embedded resource above.")),
                ])
            },
        )
        .prompt(
            prompt("test_prompt_with_image", "A prompt with an image", &[]),
            move |_, _| {
                one(vec![
                    user(Content::image(PNG, "image/png")),
                    user(Content::text("Please analyze the image above.")),
                ])
            },
        )
        .completer(|_, params| {
            let value = params
                .pointer("/argument/value")
                .and_then(Value::as_str)
                .unwrap_or("");
            Ok(["paris", "park", "party", "test"]
                .iter()
                .filter(|c| c.starts_with(value))
                .map(|c| (*c).to_owned())
                .collect())
        })
}

fn resource(uri: &str, name: &str, mime: &str) -> Resource {
    Resource {
        uri: uri.into(),
        name: name.into(),
        title: None,
        description: Some(format!("The {name} resource")),
        mime_type: Some(mime.into()),
    }
}

fn resources(server: Server) -> Server {
    let text = |uri: &str, body: &str| {
        Ok::<_, ErrorObject>(vec![ResourceContents::text(uri, "text/plain", body)])
    };
    server
        .resource(
            resource("test://static-text", "static-text", "text/plain"),
            move |_, uri| text(uri, "This is the content of the static text resource."),
        )
        .resource(
            resource("test://static-binary", "static-binary", "image/png"),
            |_, uri| Ok(vec![ResourceContents::blob(uri, "image/png", PNG)]),
        )
        .resource(
            resource("test://watched-resource", "watched-resource", "text/plain"),
            move |_, uri| text(uri, "Watched resource content"),
        )
        .resource_template(
            ResourceTemplate {
                uri_template: "test://template/{id}/data".into(),
                name: "template".into(),
                title: None,
                description: Some("A resource template with an id".into()),
                mime_type: Some("application/json".into()),
            },
            |_, uri, vars| {
                let id = vars.get("id").cloned().unwrap_or_default();
                let body =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                Ok(vec![ResourceContents::text(
                    uri,
                    "application/json",
                    body.to_string(),
                )])
            },
        )
}

fn main() -> std::process::ExitCode {
    stdmcp::init_logging();
    let server = Server::new("stdmcp-everything", env!("CARGO_PKG_VERSION")).instructions(
        "A test server: echo, add, sleep, spawn, fail, and the conformance suite's fixtures.",
    );
    let server = tasks::tools(mrtr::tools(resources(prompts(conformance_tools(tools(
        server,
    ))))));
    // The STDMCP_* settings the tests give it, read as the `stdmcp` command reads them.
    let options = stdmcp::Options::default().from_env();
    server.options(options).serve_stdio()
}
