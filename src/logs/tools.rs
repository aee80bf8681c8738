//! The `logs` and `log` tools and the `log://` resources: listing and reading the log files
//! of tools that declare `logs` (README "Log files"), confined like path parameters: the
//! working directory to the tool's root, the file to the working directory and the globs.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::{HeldWorkdir, LogFile};
use crate::spec::logs::Logs;
use crate::spec::{Cwd, ToolSpec, LOGS_TOOL, LOG_TOOL};
use crate::spool::tool::{part_result, read_part, slice_contents, slice_params, str_arg, u64_arg};
use crate::spool::{tail_slice, Stop, MAX_LIMIT};
use stdmcp::jsonrpc::{ErrorCode, ErrorObject};
use stdmcp::mcp::timestamp::iso8601_seconds;
use stdmcp::mcp::{CallToolResult, ResourceContents, ResourceTemplate, ToolAnnotations};
use stdmcp::{Server, ToolDef, ToolError, ToolResult};

type Tools = Arc<BTreeMap<String, ToolSpec>>;
type Roots = Arc<BTreeMap<String, PathBuf>>;

/// The tool named by `tool`, with the working directory `workdir` names.
fn target<'a>(
    tools: &'a Tools,
    roots: &Roots,
    args: &Value,
) -> Result<(&'a ToolSpec, &'a Logs, HeldWorkdir), ToolError> {
    let name = str_arg(args, "tool")?.ok_or_else(|| ToolError::msg("tool is required"))?;
    let (spec, logs) = tools
        .get(name)
        .and_then(|s| Some((s, s.logs.as_ref()?)))
        .ok_or_else(|| {
            ToolError::msg(format!(
                "{name} is not a tool with log files (these are: {})",
                tools.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })?;
    let dir = HeldWorkdir::of(spec, roots, str_arg(args, "workdir")?).map_err(ToolError)?;
    Ok((spec, logs, dir))
}

/// Percent-encodes everything but unreserved characters (and `/` when `keep_slash`).
fn encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn template(spec: &ToolSpec) -> String {
    match spec.cwd {
        Some(Cwd::Param(_)) => format!("log://{}/{{workdir}}/{{name}}", spec.name),
        _ => format!("log://{}/{{name}}", spec.name),
    }
}

/// The URI of log `name` of `spec` in `workdir` (the argument as given, `None` for a fixed cwd).
fn uri(spec: &ToolSpec, workdir: Option<&str>, name: &str) -> String {
    match (&spec.cwd, workdir) {
        (Some(Cwd::Param(_)), w) => format!(
            "log://{}/{}/{}",
            spec.name,
            encode(w.unwrap_or("."), false),
            encode(name, true)
        ),
        _ => format!("log://{}/{}", spec.name, encode(name, true)),
    }
}

/// Which `log://` URIs a call of `spec` with `args` may have changed: those of its logs in
/// its working directory (the same directory however its `workdir` is written).
pub(crate) fn updated_by<'a>(spec: &'a ToolSpec, args: &Value) -> impl Fn(&str) -> bool + 'a {
    let workdir = match spec.cwd {
        Some(Cwd::Param(_)) => Some(
            str_arg(args, "workdir")
                .ok()
                .flatten()
                .unwrap_or(".")
                .to_owned(),
        ),
        _ => None,
    };
    let template = template(spec);
    move |uri: &str| {
        let Some(logs) = &spec.logs else { return false };
        let Some(vars) = stdmcp::mcp::template::match_template(&template, uri) else {
            return false;
        };
        let var = |k: &str| vars.get(k).and_then(|v| decode(v));
        let same_dir = match (&workdir, var("workdir")) {
            (Some(a), Some(b)) => Path::new(a).components().eq(Path::new(&b).components()),
            (None, _) => true,
            (Some(_), None) => false,
        };
        same_dir && var("name").is_some_and(|n| logs.matches(&n))
    }
}

fn list(tools: &Tools, roots: &Roots, args: &Value) -> ToolResult {
    let (spec, logs, dir) = target(tools, roots, args)?;
    let listing = logs.list(&dir);
    let files: &[LogFile] = &listing.files;
    let wd = match spec.cwd {
        Some(Cwd::Param(_)) => Some(str_arg(args, "workdir")?.unwrap_or(".")),
        _ => None,
    };
    let mut text = String::new();
    let mut rows = Vec::new();
    for f in files {
        text.push_str(&format!(
            "{}  {} bytes  {}\n",
            f.name,
            f.size,
            iso8601_seconds(f.modified)
        ));
        rows.push(json!({"name": f.name, "size": f.size, "modified": iso8601_seconds(f.modified), "uri": uri(spec, wd, &f.name)}));
    }
    if files.is_empty() {
        text = format!(
            "No log files ({}) in {}.\n",
            logs.describe(),
            dir.path.display()
        );
    }
    let mut structured = json!({"tool": spec.name, "workdir": dir.path, "logs": rows});
    if listing.cut() {
        text.push_str(&cut_note(&listing));
        structured["cut"] = json!({
            "listed": files.len(),
            "leftOut": listing.left_out,
            "notSearched": listing.unsearched,
        });
    }
    Ok(CallToolResult {
        structured_content: Some(structured),
        ..CallToolResult::text(text.trim_end())
    })
}

/// What a listing that was cut says about it.
fn cut_note(l: &super::Listing) -> String {
    let mut note = format!("The list was cut: {} files listed", l.files.len());
    if l.left_out > 0 {
        note.push_str(&format!(
            ", {} more names matching the globs left out (at most {} are listed)",
            l.left_out,
            super::MAX_FILES
        ));
    }
    if l.unsearched > 0 {
        note.push_str(&format!(
            ", {} names not looked at (a directory of more than {} names, or more than {} paths at one level of a glob): there may be more logs",
            l.unsearched,
            stdmcp::beneath::MAX_NAMES,
            super::MAX_FILES
        ));
    }
    note.push_str(". `log` reads any of them by name.\n");
    note
}

fn read(tools: &Tools, roots: &Roots, args: &Value, stop: &Stop) -> ToolResult {
    let (spec, logs, dir) = target(tools, roots, args)?;
    let name = str_arg(args, "name")?
        .ok_or_else(|| ToolError::msg("name (as `logs` lists it) is required"))?;
    let (file, _) = logs.open(&dir, name).map_err(ToolError)?;
    let extra = json!({"tool": spec.name, "name": name});
    let Some(tail) = u64_arg(args, "tail")? else {
        return read_part(Some(&file), &format!("log {name}"), args, extra, stop);
    };
    if tail > MAX_LIMIT {
        return Err(ToolError::msg(format!(
            "tail must be at most {MAX_LIMIT} bytes"
        )));
    }
    if args.get("offset").is_some_and(|o| !o.is_null())
        || args.get("grep").is_some_and(|g| !g.is_null())
    {
        return Err(ToolError::msg(
            "tail reads the end: give it without offset or grep",
        ));
    }
    let s = tail_slice(Some(&file), tail, MAX_LIMIT, stop)
        .map_err(|e| ToolError::msg(e.to_string()))?;
    let note = format!(
        "[log {name}: the last {} bytes, {}-{} of {}]",
        s.next - s.offset,
        s.offset,
        s.next,
        s.total
    );
    Ok(part_result(s.text(), note, extra, Some(&s)))
}

fn read_resource(
    spec: &ToolSpec,
    roots: &Roots,
    stop: &Stop,
    uri: &str,
    vars: &HashMap<String, String>,
) -> Result<Vec<ResourceContents>, ErrorObject> {
    let refuse =
        |why: String| ErrorObject::new(ErrorCode::RESOURCE_NOT_FOUND, format!("{why}: {uri}"));
    let var = |k: &str| {
        vars.get(k)
            .map(|v| decode(v).ok_or_else(|| refuse(format!("{k} is not percent-encoded UTF-8"))))
            .transpose()
    };
    let (wd, name) = (var("workdir")?, var("name")?.unwrap_or_default());
    let logs = spec.logs.as_ref().ok_or_else(|| refuse("no logs".into()))?;
    let dir = HeldWorkdir::of(spec, roots, wd.as_deref()).map_err(refuse)?;
    let (file, _) = logs.open(&dir, &name).map_err(refuse)?;
    let s =
        tail_slice(Some(&file), MAX_LIMIT, MAX_LIMIT, stop).map_err(|e| refuse(e.to_string()))?;
    Ok(slice_contents(uri, &s, json!({})))
}

fn schema(tools: &Tools, extra: Value, required: &[&str]) -> Value {
    let mut props = json!({
        "tool": {"type": "string", "enum": tools.keys().collect::<Vec<_>>(), "description": "The tool whose logs these are."},
        "workdir": {"type": "string", "description": "The working directory of the call, as given to the tool (its directory parameter); not for tools with a fixed working directory."}
    });
    if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let mut req = vec!["tool"];
    req.extend(required);
    json!({"type": "object", "properties": props, "required": req, "additionalProperties": false})
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        title: None,
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
    }
}

/// Adds `logs`, `log` and a resource template per tool with logs (none without).
pub(crate) fn register(mut server: Server, specs: &[ToolSpec], roots: &Roots) -> Server {
    let tools: Tools = Arc::new(
        specs
            .iter()
            .filter(|t| t.logs.is_some())
            .map(|t| (t.name.clone(), t.clone()))
            .collect(),
    );
    if tools.is_empty() {
        return server;
    }
    let (t, r) = (tools.clone(), roots.clone());
    server = server.tool(
        ToolDef::new(LOGS_TOOL, "List the log files a tool's program wrote in a working directory: name, size in bytes, last modification (UTC). Read one with `log`.", schema(&tools, json!({}), &[]), move |_, a| list(&t, &r, &a))
            .annotations(read_only()),
    );
    let mut props = slice_params();
    props["name"] = json!({"type": "string", "maxLength": 1024, "description": "The log's name as `logs` lists it."});
    props["tail"] = json!({"type": "integer", "minimum": 0, "maximum": MAX_LIMIT, "description": "Read the last this many bytes instead (without offset or grep)."});
    let (t, r) = (tools.clone(), roots.clone());
    let description = format!("Read a bounded part of a tool's log file: up to `limit` bytes (default {}, at most {MAX_LIMIT}) from byte `offset`, the last `tail` bytes, or the lines matching `grep`; a second text block gives the total size and the next offset.", crate::spool::DEFAULT_LIMIT);
    server = server.tool(
        ToolDef::new(
            LOG_TOOL,
            description,
            schema(&tools, props, &["name"]),
            move |ctx, a| read(&t, &r, &a, &Stop::of(ctx)),
        )
        .annotations(read_only()),
    );
    for spec in tools.values() {
        let (s, r) = (spec.clone(), roots.clone());
        server = server.resource_template(
            ResourceTemplate {
                uri_template: template(spec),
                name: format!("{} logs", spec.name),
                title: None,
                description: Some(format!("The log files of {} ({}), percent-encoded: the whole file, or its last {MAX_LIMIT} bytes.", spec.name, spec.logs.as_ref().map(|l| l.describe()).unwrap_or_default())),
                mime_type: Some("text/plain".into()),
            },
            move |ctx, u, vars| read_resource(&s, &r, &Stop::of(ctx), u, vars),
        );
    }
    server
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_uris() {
        assert_eq!(encode("a b/c%", false), "a%20b%2Fc%25");
        assert_eq!(encode(".hol/logs/x", true), ".hol/logs/x");
        assert_eq!(decode("a%20b%2Fc%25").as_deref(), Some("a b/c%"));
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%2"), None);
    }
}
