//! The official conformance suite's fixtures: its tools (content of every kind, logging and
//! progress, asking the client's model and user, a JSON Schema 2020-12 input schema, the
//! 2026-07-28 `server-stateless` diagnostics), its prompts and completions, and its resources.

use std::time::Duration;

use serde_json::{json, Value};
use stdmcp::jsonrpc::ErrorObject;
use stdmcp::mcp::{
    GetPromptResult, LogLevel, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents,
    ResourceTemplate,
};
use stdmcp::{CallToolResult, Content, Server, ToolDef, ToolError};

use crate::no_args;

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
/// A WAV header with no samples.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// The suite's tools, in the order `tools/list` shows them.
pub(crate) fn tools(server: Server) -> Server {
    let server = asking_tools(notifying_tools(content_tools(server)));
    stateless_tools(server.tool(json_schema_2020_12_tool()))
}

/// Tools that return content of every kind, and an error.
fn content_tools(server: Server) -> Server {
    let text_tool = |name: &str, desc: &str, result: fn() -> CallToolResult| {
        ToolDef::new(name, desc, no_args(), move |_, _| Ok(result()))
    };
    server
        .tool(text_tool(
            "test_simple_text",
            "Returns simple text content",
            || CallToolResult::text("This is a simple text response for testing."),
        ))
        .tool(text_tool(
            "test_image_content",
            "Returns image content",
            || CallToolResult::new(vec![Content::image(PNG, "image/png")]),
        ))
        .tool(text_tool(
            "test_audio_content",
            "Returns audio content",
            || CallToolResult::new(vec![Content::audio(WAV, "audio/wav")]),
        ))
        .tool(text_tool(
            "test_embedded_resource",
            "Returns an embedded resource",
            || {
                CallToolResult::new(vec![Content::resource(ResourceContents::text(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                ))])
            },
        ))
        .tool(text_tool(
            "test_multiple_content_types",
            "Returns text, image and resource content",
            || {
                CallToolResult::new(vec![
                    Content::text("Multiple content types test:"),
                    Content::image(PNG, "image/png"),
                    Content::resource(ResourceContents::text(
                        "test://mixed-content-resource",
                        "application/json",
                        r#"{"test":"data","value":123}"#,
                    )),
                ])
            },
        ))
        .tool(text_tool(
            "test_error_handling",
            "Always returns an error",
            || CallToolResult::error("This tool intentionally returns an error for testing"),
        ))
}

/// Tools that log and report progress while they run.
fn notifying_tools(server: Server) -> Server {
    server
        .tool(ToolDef::new(
            "test_tool_with_logging",
            "Sends log messages while running",
            no_args(),
            |ctx, _| {
                for (i, m) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .iter()
                .enumerate()
                {
                    if i > 0 && !ctx.sleep(Duration::from_millis(50)) {
                        break;
                    }
                    ctx.log(LogLevel::Info, *m);
                }
                Ok(CallToolResult::text(
                    "Tool with logging executed successfully",
                ))
            },
        ))
        .tool(ToolDef::new(
            "test_tool_with_progress",
            "Reports progress 0, 50, 100",
            no_args(),
            |ctx, _| {
                for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 && !ctx.sleep(Duration::from_millis(50)) {
                        break;
                    }
                    ctx.progress(p, Some(100.0), Some(&format!("Completed step {p} of 100")));
                }
                Ok(CallToolResult::text("Progress tool completed"))
            },
        ))
}

/// Tools that ask the client's model (sampling) or its user (elicitation).
fn asking_tools(server: Server) -> Server {
    server
        .tool(sample_tool(
            "test_sampling",
            "Asks the client's model to answer a prompt",
            json!({"type": "object", "properties": {"prompt": {"type": "string", "description": "The prompt to send"}}, "required": ["prompt"]}),
            |args| args["prompt"].as_str().unwrap_or_default().to_owned(),
        ))
        .tool(elicit_tool(
            "test_elicitation",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
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
}

/// The suite's SEP-1613/SEP-2106 fixture: every keyword must survive tools/list.
fn json_schema_2020_12_tool() -> ToolDef {
    ToolDef::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
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
        |_, args| {
            Ok(CallToolResult::text(format!(
                "JSON Schema 2020-12 tool called with: {args}"
            )))
        },
    )
}

/// Diagnostic tools of the suite's 2026-07-28 `server-stateless` scenario.
fn stateless_tools(server: Server) -> Server {
    server
        .tool(ToolDef::new(
            "test_logging_tool",
            "Sends log messages (info) while running",
            no_args(),
            |ctx, _| {
                for m in [
                    "Logging tool started",
                    "Logging tool running",
                    "Logging tool done",
                ] {
                    ctx.log(LogLevel::Info, m);
                }
                Ok(CallToolResult::text("Logging tool executed"))
            },
        ))
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

/// The suite's prompts, and the completions of their arguments.
pub(crate) fn prompts(server: Server) -> Server {
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
        .completer(complete)
}

/// Completes an argument's value from a fixed list.
fn complete(_: &stdmcp::Ctx, params: &Value) -> Result<Vec<String>, ErrorObject> {
    let value = params
        .pointer("/argument/value")
        .and_then(Value::as_str)
        .unwrap_or("");
    Ok(["paris", "park", "party", "test"]
        .iter()
        .filter(|c| c.starts_with(value))
        .map(|c| (*c).to_owned())
        .collect())
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

/// The suite's resources: static text and binary, one to watch, and a template.
pub(crate) fn resources(server: Server) -> Server {
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
