//! The everything example's tools and prompt that ask the client for input: in the handshake
//! era through server -> client requests, in 2026-07-28 through `input_required` results
//! (2026-07-28, Multi Round-Trip Requests). The handlers are the same blocking code in both.
//!
//! | tool | asks |
//! |---|---|
//! | `test_roots` | `roots/list`, returns the roots |
//! | `test_input_required_result_*` | the conformance suite's fixtures (fixed keys) |
//! | prompt `test_input_required_result_prompt` | an elicitation, then builds the prompt |

use serde_json::{json, Map, Value};
use stdmcp::jsonrpc::ErrorObject;
use stdmcp::mcp::{GetPromptResult, Prompt, PromptMessage};
use stdmcp::InputRequest;
use stdmcp::{CallToolResult, Content, Ctx, Server, ToolDef, ToolError, ToolResult};

use crate::no_args;

fn elicit(key: &str, message: &str, field: &str, kind: &str) -> InputRequest {
    InputRequest {
        key: key.into(),
        method: "elicitation/create".into(),
        params: json!({"message": message, "requestedSchema": {
            "type": "object",
            "properties": { field: { "type": kind } },
            "required": [field]
        }}),
    }
}

fn sample(key: &str, text: &str, max_tokens: u32) -> InputRequest {
    InputRequest {
        key: key.into(),
        method: "sampling/createMessage".into(),
        params: json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens}),
    }
}

fn roots(key: &str) -> InputRequest {
    InputRequest {
        key: key.into(),
        method: "roots/list".into(),
        params: json!({}),
    }
}

/// What an answer says, briefly: accepted content, sampled text, or the roots.
fn said(answer: &Value) -> String {
    if let Some(c) = answer.get("content").filter(|c| c.is_object()) {
        return c.to_string();
    }
    if let Some(t) = answer.pointer("/content/text").and_then(Value::as_str) {
        return t.to_owned();
    }
    if let Some(r) = answer.get("roots") {
        return r.to_string();
    }
    answer.to_string()
}

/// A tool that asks `requests` in one round and answers with `reply` of the answers.
fn ask_tool(
    name: &str,
    requests: fn() -> Vec<InputRequest>,
    reply: fn(&Map<String, Value>) -> String,
) -> ToolDef {
    ToolDef::new(
        name,
        "Asks the client for input",
        no_args(),
        move |ctx, _| {
            let answers = ctx.ask(requests()).map_err(|e| ToolError::msg(e.message))?;
            Ok(CallToolResult::text(reply(&answers)))
        },
    )
}

fn get<'a>(answers: &'a Map<String, Value>, key: &str) -> &'a Value {
    answers.get(key).unwrap_or(&Value::Null)
}

pub(crate) fn tools(server: Server) -> Server {
    one_round_tools(server.tool(roots_tool()))
        .tool(ToolDef::new(
            "test_input_required_result_multi_round",
            "Asks twice, one round after the other",
            no_args(),
            multi_round,
        ))
        .tool(ToolDef::new(
            "test_input_required_result_capabilities",
            "Asks only what the request's client capabilities allow",
            no_args(),
            capabilities_asked,
        ))
        .prompt(
            Prompt {
                name: "test_input_required_result_prompt".into(),
                title: None,
                description: Some("A prompt that asks the user for context first".into()),
                arguments: None,
                icons: None,
            },
            prompt,
        )
}

/// `roots/list`, through the client's capability (both eras).
fn roots_tool() -> ToolDef {
    ToolDef::new(
        "test_roots",
        "Lists the client's roots",
        no_args(),
        |ctx, _| {
            let r = ctx.list_roots().map_err(|e| ToolError::msg(e.message))?;
            Ok(CallToolResult::text(format!("Roots: {}", r["roots"])))
        },
    )
    .requires("roots")
}

/// The tools that ask in one round (the suite's fixed keys).
fn one_round_tools(server: Server) -> Server {
    server
        .tool(ask_tool(
            "test_input_required_result_elicitation",
            || vec![elicit("user_name", "What is your name?", "name", "string")],
            |a| {
                let name = get(a, "user_name").pointer("/content/name");
                format!(
                    "Hello, {}!",
                    name.and_then(Value::as_str).unwrap_or("stranger")
                )
            },
        ))
        .tool(ask_tool(
            "test_input_required_result_sampling",
            || {
                vec![sample(
                    "capital_question",
                    "What is the capital of France?",
                    100,
                )]
            },
            |a| format!("Sampled: {}", said(get(a, "capital_question"))),
        ))
        .tool(ask_tool(
            "test_input_required_result_list_roots",
            || vec![roots("client_roots")],
            |a| format!("Roots: {}", said(get(a, "client_roots"))),
        ))
        .tool(ask_tool(
            "test_input_required_result_request_state",
            || vec![elicit("confirm", "Please confirm", "ok", "boolean")],
            |a| format!("state-ok: {}", said(get(a, "confirm"))),
        ))
        .tool(ask_tool(
            "test_input_required_result_tampered_state",
            || vec![elicit("confirm", "Please confirm", "ok", "boolean")],
            |a| format!("confirmed: {}", said(get(a, "confirm"))),
        ))
        .tool(ask_tool(
            "test_input_required_result_multiple_inputs",
            || {
                vec![
                    elicit("user_name", "What is your name?", "name", "string"),
                    sample("greeting", "Generate a greeting", 50),
                    roots("client_roots"),
                ]
            },
            |a| {
                let parts: Vec<String> = ["user_name", "greeting", "client_roots"]
                    .iter()
                    .map(|k| format!("{k}={}", said(get(a, k))))
                    .collect();
                parts.join(", ")
            },
        ))
}

/// Asks twice, one round after the other.
fn multi_round(ctx: &Ctx, _: Value) -> ToolResult {
    let step = |r| ctx.ask(vec![r]).map_err(|e| ToolError::msg(e.message));
    let a = step(elicit(
        "step1",
        "Step 1: What is your name?",
        "name",
        "string",
    ))?;
    let b = step(elicit(
        "step2",
        "Step 2: What is your favorite color?",
        "color",
        "string",
    ))?;
    Ok(CallToolResult::text(format!(
        "step1={}, step2={}",
        said(get(&a, "step1")),
        said(get(&b, "step2"))
    )))
}

/// Asks only what the request's client capabilities allow.
fn capabilities_asked(ctx: &Ctx, _: Value) -> ToolResult {
    let caps = ctx.client_capabilities();
    let mut asks = Vec::new();
    if caps.has("elicitation") {
        asks.push(elicit("user_name", "What is your name?", "name", "string"));
    }
    if caps.has("sampling") {
        asks.push(sample("greeting", "Generate a greeting", 50));
    }
    if asks.is_empty() {
        return Ok(CallToolResult::text(
            "nothing to ask: no capability declared",
        ));
    }
    let a = ctx.ask(asks).map_err(|e| ToolError::msg(e.message))?;
    let keys: Vec<&str> = a.keys().map(String::as_str).collect();
    Ok(CallToolResult::text(format!(
        "answered: {}",
        keys.join(", ")
    )))
}

fn prompt(ctx: &Ctx, _: &Map<String, Value>) -> Result<GetPromptResult, ErrorObject> {
    let ask = elicit(
        "user_context",
        "What context should the prompt use?",
        "context",
        "string",
    );
    let a = ctx.ask(vec![ask])?;
    let context = get(&a, "user_context").pointer("/content/context");
    let text = format!(
        "Use this context: {}",
        context.and_then(Value::as_str).unwrap_or("none given")
    );
    Ok(GetPromptResult {
        description: None,
        messages: vec![PromptMessage {
            role: "user".into(),
            content: Content::text(text),
        }],
    })
}
