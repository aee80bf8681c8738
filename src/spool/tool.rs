//! The `output` tool and the `output://{call}/{stream}` resources: reading any part of a
//! kept output (README "Output spool").

use crate::spec::OUTPUT_TOOL;
use std::collections::HashMap;
use std::fs::File;
use std::sync::Arc;

use regex_lite::Regex;
use serde_json::{json, Value};

use super::{
    grep, read_slice, stream_name, valid_id, Ended, Kept, Slice, Spool, Stop, DEFAULT_LIMIT,
    MAX_LIMIT,
};
use stdmcp::jsonrpc::{ErrorCode, ErrorObject};
use stdmcp::mcp::{CallToolResult, Content, ResourceContents, ResourceLink, ResourceTemplate};
use stdmcp::process::Stream;
use stdmcp::{Server, ToolDef, ToolError, ToolResult};

/// Longest `grep` pattern, in bytes.
const MAX_PATTERN: usize = 1000;

/// The URI of a kept stream.
pub(crate) fn uri(call: &str, s: Stream) -> String {
    format!("output://{call}/{}", stream_name(s))
}

/// A `resource_link` to a kept stream (MCP 2025-06-18, Tools: Resource Links); revisions
/// before it get the link as a line of text ([`stdmcp::mcp::gate`]). Its description says
/// whether the stream is kept whole or only its first bytes are (`kept.cut`).
pub(crate) fn link(call: &str, s: Stream, kept: &Kept) -> Content {
    let (name, bytes) = (stream_name(s), kept.bytes);
    let description = if kept.cut {
        format!(
            "the first {bytes} bytes of the {name} of call {call}: only they were kept (the \
             output spool is full, or could not be written)"
        )
    } else {
        format!("the complete {name} of call {call} ({bytes} bytes)")
    };
    Content::ResourceLink(Box::new(ResourceLink {
        uri: uri(call, s),
        name: format!("{name} of call {call}"),
        title: None,
        description: Some(description),
        mime_type: Some("text/plain".into()),
        size: Some(bytes),
        annotations: None,
        icons: None,
        meta: None,
    }))
}

/// What a note says of the output `spool` kept of call `call`, which has ended: that the
/// `output` tool reads it whole, that only part of it was kept, or why nothing is.
pub(crate) fn kept_sentence(spool: &Spool, call: &str) -> String {
    let read = format!(
        "the `output` tool reads it, e.g. {{\"call\": \"{call}\", \"stream\": \"stdout\"}}"
    );
    match (
        spool.kept(call, Stream::Stdout),
        spool.kept(call, Stream::Stderr),
    ) {
        (Ok(o), Ok(e)) if !o.cut && !e.cut => format!("Its whole output is kept: {read}."),
        (Ok(_), Ok(_)) => format!(
            "Only part of its output is kept (the output spool is full, or could not be \
             written): {read}."
        ),
        (Err(why), _) | (_, Err(why)) => format!("Its output is not kept: {why}."),
    }
}

/// A non-negative integer argument.
pub(crate) fn u64_arg(args: &Value, key: &str) -> Result<Option<u64>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ToolError::msg(format!("{key} must be a non-negative integer"))),
    }
}

/// `limit`: 1 to [`MAX_LIMIT`], default [`DEFAULT_LIMIT`].
pub(crate) fn limit_arg(args: &Value) -> Result<u64, ToolError> {
    match u64_arg(args, "limit")? {
        None => Ok(DEFAULT_LIMIT),
        Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        Some(_) => Err(ToolError::msg(format!(
            "limit must be 1 to {MAX_LIMIT} bytes"
        ))),
    }
}

/// A string argument.
pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolError::msg(format!("{key} must be a string"))),
    }
}

/// The `grep` argument, compiled.
pub(crate) fn grep_arg(args: &Value) -> Result<Option<Regex>, ToolError> {
    let Some(p) = str_arg(args, "grep")? else {
        return Ok(None);
    };
    if p.len() > MAX_PATTERN {
        return Err(ToolError::msg(format!(
            "grep must be at most {MAX_PATTERN} bytes"
        )));
    }
    Regex::new(p)
        .map(Some)
        .map_err(|e| ToolError::msg(format!("grep is not a valid regular expression: {e}")))
}

/// The JSON Schema of `offset`, `limit` and `grep`.
pub(crate) fn slice_params() -> Value {
    json!({
        "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start at (default 0); with grep, where the scan starts (a line start, such as a previous result's next offset)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": format!("Most bytes to return (default {DEFAULT_LIMIT}).")},
        "grep": {"type": "string", "maxLength": MAX_PATTERN, "description": format!("A regular expression (regex-lite syntax): return only the lines that match, each with its byte offset, instead of a slice. One call scans for at most {} s (at memory speed when the pattern has a literal every match contains, such as `error` in `^\\d+ error`; holes of sparse files are skipped): if it stops before the end, the result gives the offset to go on from.", super::scan_time().as_secs())}
    })
}

/// Reads a slice (or the lines matching `grep`) of an open file; `what` names it in the
/// navigation note. The text block is exactly the bytes read; a second block says where
/// they are. The read stops between buffers when `stop` says so.
pub(crate) fn read_part(
    file: Option<&File>,
    what: &str,
    args: &Value,
    extra: Value,
    stop: &Stop,
) -> ToolResult {
    let offset = u64_arg(args, "offset")?.unwrap_or(0);
    let limit = limit_arg(args)?;
    let mut structured = extra;
    let Some(re) = grep_arg(args)? else {
        let s = read_slice(file, offset, limit, stop).map_err(|e| ToolError::msg(e.to_string()))?;
        let more = if s.next < s.total {
            format!("next offset {}", s.next)
        } else {
            "the end".into()
        };
        let note = format!(
            "[{what}: bytes {}-{} of {}; {more}]",
            s.offset, s.next, s.total
        );
        return Ok(part_result(s.text(), note, structured, Some(&s)));
    };
    let g = grep(file, offset, &re, limit, stop).map_err(|e| ToolError::msg(e.to_string()))?;
    let mut body = String::new();
    for (at, line) in &g.lines {
        body.push_str(&format!("{at}: {line}\n"));
    }
    let bound = format!(
        "one scan runs for at most {} s",
        super::scan_time().as_secs()
    );
    let why = match g.ended {
        Ended::End => String::new(),
        Ended::Limit => " (the matching lines reached the limit)".into(),
        Ended::Bound if g.inside_line => {
            format!(" ({bound}, and stopped inside a line longer than it reached)")
        }
        Ended::Bound => format!(" ({bound})"),
    };
    let more = if g.next < g.total {
        format!(
            "the scan stopped at byte {0}{why}: continue with offset {0}",
            g.next
        )
    } else {
        "the scan reached the end".into()
    };
    let from = offset.min(g.total);
    structured["matches"] = json!(g
        .lines
        .iter()
        .map(|(o, l)| json!({"offset": o, "line": l}))
        .collect::<Vec<_>>());
    structured["offset"] = json!(from);
    structured["nextOffset"] = json!(g.next);
    structured["totalBytes"] = json!(g.total);
    structured["scannedBytes"] = json!(g.scanned);
    structured["complete"] = json!(g.next >= g.total);
    let note = format!(
        "[{what}: {} matching lines from byte {from} of {}; {more}]",
        g.lines.len(),
        g.total
    );
    Ok(part_result(body, note, structured, None))
}

fn stream_arg(args: &Value) -> Result<Stream, ToolError> {
    match str_arg(args, "stream")? {
        None | Some("stdout") => Ok(Stream::Stdout),
        Some("stderr") => Ok(Stream::Stderr),
        Some(other) => Err(ToolError::msg(format!(
            "stream must be \"stdout\" or \"stderr\", not {other:?}"
        ))),
    }
}

fn state(k: &Kept) -> &'static str {
    match (k.running, k.cut) {
        (true, _) => "the call is still running",
        (false, false) => "complete",
        (false, true) => "only this much was kept: the spool's cap was reached",
    }
}

fn output(spool: &Spool, args: &Value, stop: &Stop) -> ToolResult {
    let call =
        str_arg(args, "call")?.ok_or_else(|| ToolError::msg("call (a call id) is required"))?;
    if !valid_id(call) {
        return Err(ToolError::msg(format!("{call:?} is not a call id")));
    }
    let stream = stream_arg(args)?;
    let (file, kept) = spool
        .open(call, stream)
        .map_err(|e| ToolError(e.to_string()))?;
    let what = format!("{} of call {call} ({})", stream_name(stream), state(&kept));
    let extra = json!({"call": call, "stream": stream_name(stream), "running": kept.running, "cut": kept.cut});
    read_part(file.as_ref(), &what, args, extra, stop)
}

fn read_resource(
    spool: &Spool,
    stop: &Stop,
    uri: &str,
    vars: &HashMap<String, String>,
) -> Result<Vec<ResourceContents>, ErrorObject> {
    let not_found =
        |why: String| ErrorObject::new(ErrorCode::RESOURCE_NOT_FOUND, format!("{why}: {uri}"));
    let call = vars.get("call").map(String::as_str).unwrap_or_default();
    let stream = match vars.get("stream").map(String::as_str) {
        Some("stdout") => Stream::Stdout,
        Some("stderr") => Stream::Stderr,
        _ => return Err(not_found("the stream is stdout or stderr".into())),
    };
    if !valid_id(call) {
        return Err(not_found(format!("{call:?} is not a call id")));
    }
    let (file, kept) = spool
        .open(call, stream)
        .map_err(|e| not_found(e.to_string()))?;
    let s = read_slice(file.as_ref(), 0, MAX_LIMIT, stop).map_err(|e| not_found(e.to_string()))?;
    let state = json!({"running": kept.running, "cut": kept.cut});
    Ok(slice_contents(uri, &s, state))
}

/// A slice as resource contents; where it lies (and `extra`) in `_meta`.
pub(crate) fn slice_contents(uri: &str, s: &Slice, mut extra: Value) -> Vec<ResourceContents> {
    let mut c = ResourceContents::text(uri, "text/plain", s.text());
    position(&mut extra, s);
    c.meta = extra.as_object().cloned();
    vec![c]
}

/// Sets `offset`, `nextOffset` and `totalBytes` of `v` from a slice.
fn position(v: &mut Value, s: &Slice) {
    v["offset"] = json!(s.offset);
    v["nextOffset"] = json!(s.next);
    v["totalBytes"] = json!(s.total);
}

/// A read's result: the bytes exactly in the first block, where they lie in the second
/// (`note`) and in `structured` (with the slice's position when there is one).
pub(crate) fn part_result(
    body: String,
    note: String,
    mut structured: Value,
    s: Option<&Slice>,
) -> CallToolResult {
    if let Some(s) = s {
        position(&mut structured, s);
    }
    CallToolResult {
        content: vec![Content::text(body), Content::text(note)],
        structured_content: Some(structured),
        is_error: false,
        meta: None,
    }
}

/// Adds the `output` tool and the `output://` resource template to `server`; the spool is
/// removed when serving ends.
pub(crate) fn register(server: Server, spool: &Arc<Spool>) -> Server {
    let description = format!(
        "Read the stdout or stderr of an earlier call of this server, as the output spool kept \
         it (whole, unless the spool was full: the answer says so; a result whose output was \
         cut names its call id). Returns up to `limit` \
         bytes (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}) from byte `offset`, then a line \
         with the total size and the next offset; or, with `grep`, the matching lines with \
         their byte offsets. The oldest calls are evicted when the spool is full."
    );
    let mut props = slice_params();
    props["call"] = json!({"type": "string", "maxLength": 64, "description": "The call id a cut result names."});
    props["stream"] = json!({"type": "string", "enum": ["stdout", "stderr"], "default": "stdout"});
    let schema = json!({"type": "object", "properties": props, "required": ["call"], "additionalProperties": false});
    let (s1, s2, s3) = (Arc::clone(spool), Arc::clone(spool), Arc::clone(spool));
    let tool = ToolDef::new(OUTPUT_TOOL, description, schema, move |ctx, args| {
        output(&s1, &args, &Stop::of(ctx))
    })
    .annotations(stdmcp::mcp::ToolAnnotations {
        title: None,
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
    });
    server
        .tool(tool)
        .resource_template(
            ResourceTemplate {
                uri_template: "output://{call}/{stream}".into(),
                name: "kept output".into(),
                title: None,
                description: Some(format!(
                    "The stdout or stderr of a call, from the output spool: the first {MAX_LIMIT} bytes (the output tool reads the rest)."
                )),
                mime_type: Some("text/plain".into()),
            },
            move |ctx, uri, vars| read_resource(&s2, &Stop::of(ctx), uri, vars),
        )
        .on_shutdown(move || {
            s3.clear();
            stdmcp::process::private_dir::release();
        })
}
