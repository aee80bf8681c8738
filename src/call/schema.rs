//! What a client sees of a manifest tool (`tools/list`): the input schema generated from its
//! parameters, and the output schema of its `structuredContent` (a command's run, or a
//! portfolio's race).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::spec::{Manifest, Param, ParamType, PathKind, ToolSpec};
use stdmcp::mcp::Tool;

/// The `tools/list` definitions of a manifest's own tools, in its order.
pub fn tool_definitions(m: &Manifest) -> Vec<Tool> {
    m.tools
        .iter()
        .map(|t| tool_definition(t, &m.roots))
        .collect()
}

/// The `tools/list` definition of a manifest tool: an input schema generated from its
/// parameters and the output schema of every manifest tool's `structuredContent`.
pub(crate) fn tool_definition(spec: &ToolSpec, roots: &BTreeMap<String, PathBuf>) -> Tool {
    let mut props = Map::new();
    let mut required = Vec::new();
    for (name, p) in &spec.params {
        props.insert(name.clone(), param_schema(p, roots));
        if p.required {
            required.push(json!(name));
        }
    }
    Tool {
        name: spec.name.clone(),
        title: spec.title.clone(),
        description: Some(spec.description.clone()),
        input_schema: json!({"type": "object", "properties": props, "required": required, "additionalProperties": false}),
        output_schema: Some(if spec.portfolio.is_empty() {
            output_schema()
        } else {
            portfolio_output_schema()
        }),
        annotations: Some(spec.annotations.clone()),
        icons: None,
        meta: None,
    }
}

/// The input schema of one parameter.
pub(crate) fn param_schema(p: &Param, roots: &BTreeMap<String, PathBuf>) -> Value {
    let mut s = value_schema(p, roots);
    if let Some(d) = &p.default {
        s["default"] = d.clone();
    }
    s
}

/// The schema of one value (of a parameter, or of each item of an array).
fn value_schema(p: &Param, roots: &BTreeMap<String, PathBuf>) -> Value {
    let mut s = match &p.kind {
        ParamType::String => json!({"type": "string", "maxLength": p.max_length}),
        ParamType::Integer { minimum, maximum } => {
            ranged("integer", json!(minimum), json!(maximum))
        }
        ParamType::Number { minimum, maximum } => ranged("number", json!(minimum), json!(maximum)),
        ParamType::Boolean => json!({"type": "boolean"}),
        ParamType::Enum(values) => json!({"type": "string", "enum": values}),
        ParamType::Array { max_items, items } => {
            json!({"type": "array", "items": value_schema(items, roots), "maxItems": max_items})
        }
        ParamType::Path { .. } => json!({"type": "string", "maxLength": p.max_length}),
    };
    let mut description = p.description.clone().unwrap_or_default();
    if let ParamType::Path { root, kind, .. } = &p.kind {
        let what = match kind {
            PathKind::File => "a file",
            PathKind::Dir => "a directory",
            PathKind::Any => "a path",
        };
        let dir = roots
            .get(root)
            .map_or_else(|| root.clone(), |d| d.display().to_string());
        description = format!("{description} ({what} inside {dir}, relative to it or absolute)")
            .trim()
            .to_owned();
    }
    if !description.is_empty() {
        s["description"] = json!(description);
    }
    s
}

/// `{"type": ty}` with the bounds that are not null.
fn ranged(ty: &str, minimum: Value, maximum: Value) -> Value {
    let mut s = json!({ "type": ty });
    for (k, v) in [("minimum", minimum), ("maximum", maximum)] {
        if !v.is_null() {
            s[k] = v;
        }
    }
    s
}

/// The schema of `structuredContent` for every manifest tool.
pub(crate) fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "exitCode": {"type": ["integer", "null"], "description": "Exit code; null when killed by a signal or not started"},
            "signal": {"type": ["integer", "null"], "description": "Signal that ended the program, if any"},
            "stdout": {"type": "string", "description": "Standard output (head and tail kept when over the cap)"},
            "stderr": {"type": "string", "description": "Standard error (head and tail kept when over the cap)"},
            "durationMs": {"type": "integer"},
            "timedOut": {"type": "boolean", "description": "The server-side deadline passed and the process group was killed"},
            "verdict": {"type": "string", "description": "The verdict read from the output by the tool's verdict rules (for a portfolio: the winner's), if any"},
            "callId": {"type": "string", "description": "The call's id: the output tool reads its stdout and stderr as the output spool kept them (whole unless the spool was full)"},
            "confined": {"type": "boolean", "description": "The kernel (Landlock) enforced everything the tool's confinement rules ask; false with confine: off, or where the kernel cannot"},
            "notConfined": {"type": "array", "items": {"type": "string"}, "description": "When confined is false: what was not enforced (filesystem, truncate, ioctl, network, signals, abstractUnixSockets)"},
            "truncated": {
                "type": "object",
                "description": "Bytes cut from the middle of each stream (0: nothing cut)",
                "properties": {"stdout": {"type": "integer"}, "stderr": {"type": "integer"}},
                "required": ["stdout", "stderr"]
            }
        },
        "required": ["exitCode", "signal", "stdout", "stderr", "durationMs", "timedOut", "truncated"]
    })
}

/// The schema of a portfolio's `structuredContent`.
pub(crate) fn portfolio_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "description": "The winner's verdict (absent when no member decided)"},
            "winner": {"type": "string", "description": "The member tool that won (absent when no member decided)"},
            "stdout": {"type": "string", "description": "The winner's standard output"},
            "members": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "tool": {"type": "string"},
                        "state": {"enum": ["won", "stopped", "finished", "failed", "timed out", "running"]},
                        "verdict": {"type": "string"},
                        "seconds": {"type": "number", "description": "From the portfolio's start to the member's end (or stop)"},
                        "exitCode": {"type": "integer"},
                        "call": {"type": "string", "description": "The member's call id: the output tool reads its output as the output spool kept it"},
                        "confined": {"type": "boolean", "description": "The kernel enforced everything the member's confinement asks (as a tool's structuredContent.confined)"},
                        "notConfined": {"type": "array", "items": {"type": "string"}, "description": "When confined is false: what was not enforced"}
                    },
                    "required": ["tool", "state", "seconds", "call"]
                }
            }
        },
        "required": ["members"]
    })
}
