//! Reads a manifest from JSON, checking every field and naming the JSON path of each problem.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::fields::{annotations, args, check_all_used, environment, fixed_dir, program, Scope};
use super::json::{Errors, Obj};
use super::limits::{limits, line_buffered};
use super::param;
use crate::spec::{
    Cwd, Defaults, Manifest, ManifestError, Param, ParamType, PathKind, ProgressLines, ToolSpec,
};
use stdmcp::process::Stream;

fn is_tool_name(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

pub(super) fn manifest(v: &Value, base: &Path) -> Result<Manifest, Vec<ManifestError>> {
    let mut errs = Errors(Vec::new());
    let Some(top) = Obj::new(v, "", &mut errs) else {
        return Err(errs.0);
    };
    top.only(
        &[
            "name",
            "version",
            "title",
            "description",
            "instructions",
            "defaults",
            "roots",
            "tools",
            "sessions",
            "missingPrograms",
        ],
        &mut errs,
    );
    let skip_missing = super::missing::skip_mode(&top, &mut errs);
    let mut skipped = Vec::new();
    let name = top.required_string("name", &mut errs).unwrap_or_default();
    let version = top
        .string("version", &mut errs)
        .unwrap_or_else(|| "0.0.0".into());
    let defaults = top
        .map
        .get("defaults")
        .map_or_else(Defaults::default, |d| defaults(d, &mut errs));
    let (roots, writable_roots) = super::confine::roots(&top, base, &mut errs);
    let scope = Scope {
        defaults: &defaults,
        roots: &roots,
        writable_roots: &writable_roots,
        base,
    };
    let title = top.string("title", &mut errs);
    let description = top.string("description", &mut errs);
    let instructions = top.string("instructions", &mut errs);
    let mut tools = Vec::new();
    match top.map.get("tools") {
        Some(Value::Array(items)) => {
            tools = tool_list(items, scope, skip_missing, &mut skipped, &mut errs);
        }
        Some(_) => errs.add("tools", "must be an array"),
        None if top.map.contains_key("sessions") => {}
        None => errs.add("tools", "is required"),
    }
    super::logs::check_names(&tools, &mut errs);
    super::background::check_reserved(&tools, &mut errs);
    let tool_names = tools.iter().map(|t| t.name.clone()).collect();
    let sessions = super::session::sessions(
        top.map.get("sessions"),
        scope,
        &tool_names,
        skip_missing.then_some(&mut skipped),
        &mut errs,
    );
    if !errs.0.is_empty() {
        return Err(errs.0);
    }
    Ok(Manifest {
        name,
        version,
        title,
        description,
        instructions: super::missing::instructions(instructions, &skipped),
        skipped,
        defaults,
        roots,
        writable_roots,
        tools,
        sessions,
    })
}

/// The `tools` array: each tool checked, names unique, tools whose program is missing set
/// aside in `skipped` when the manifest says so, portfolios checked.
fn tool_list(
    items: &[Value],
    scope: Scope<'_>,
    skip_missing: bool,
    skipped: &mut Vec<crate::spec::SkippedTool>,
    errs: &mut Errors,
) -> Vec<ToolSpec> {
    let mut tools = Vec::new();
    let mut seen = BTreeSet::new();
    let mut paths = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("tools[{i}]");
        let mut own = Errors(Vec::new());
        let parsed = tool(item, &path, scope, &mut own);
        let missing = skip_missing
            .then(|| super::missing::take(item, &path, scope.base, &mut own))
            .flatten();
        errs.0.append(&mut own.0);
        if let (Some(problem), Some(t)) = (missing, &parsed) {
            skipped.push(crate::spec::SkippedTool {
                name: t.name.clone(),
                problem,
            });
        } else if let Some(t) = parsed {
            paths.push(path.clone());
            if !seen.insert(t.name.clone()) {
                errs.add(
                    &format!("{path}.name"),
                    format!("another tool is already called {}", t.name),
                );
            }
            tools.push(t);
        }
    }
    if !skipped.is_empty() {
        super::missing::narrow_portfolios(&mut tools, &mut paths, skipped);
    }
    super::portfolio::check(&tools, &paths, errs);
    tools
}

fn defaults(v: &Value, errs: &mut Errors) -> Defaults {
    let mut d = Defaults::default();
    let Some(o) = Obj::new(v, "defaults", errs) else {
        return d;
    };
    o.only(
        &[
            "timeoutSeconds",
            "killGraceMs",
            "maxOutputBytes",
            "heartbeatSeconds",
            "maxConcurrentCalls",
            "env",
            "passEnv",
            "maxMemoryMB",
            "cpuSeconds",
            "maxFileSizeMB",
            "nice",
            "background",
            "confine",
            "readable",
            "writable",
            "network",
        ],
        errs,
    );
    if let Some(t) = o.seconds("timeoutSeconds", errs) {
        d.timeout = t;
    }
    d.background = super::background::background(&o, errs).flatten();
    if let Some(g) = o.millis("killGraceMs", errs) {
        d.kill_grace = g;
    }
    if let Some(n) = o.count("maxOutputBytes", errs) {
        d.max_output_bytes = n;
    }
    if let Some(h) = o.duration("heartbeatSeconds", 0.01, 1.0, errs) {
        d.heartbeat = h;
    }
    if let Some(n) = o.count("maxConcurrentCalls", errs) {
        d.max_concurrent_calls = n;
    }
    d.env = o.env("env", errs);
    d.pass_env = o.strings("passEnv", errs);
    d.limits = limits(&o, d.limits, errs);
    d.confine = super::confine::declared(&o, errs);
    d
}

fn tool(v: &Value, path: &str, scope: Scope<'_>, errs: &mut Errors) -> Option<ToolSpec> {
    let Scope {
        defaults: d,
        roots,
        base,
        ..
    } = scope;
    let o = Obj::new(v, path, errs)?;
    if o.map.contains_key("portfolio") {
        let name = tool_name(&o, errs);
        return Some(super::portfolio::tool(&o, name, d, roots, errs));
    }
    o.only(TOOL_KEYS, errs);
    let name = tool_name(&o, errs);
    let description = o.required_string("description", errs).unwrap_or_default();
    let program = program(&o, base, errs);
    let mut params = param::params(&o, roots, errs);
    let args = args(&o, &params, errs);
    param::finish(&o, &mut params, &program, &args, roots, errs);
    let stdin = stdin(&o, &params, errs);
    let cwd = cwd(&o, &params, base, errs);
    check_all_used(&o, &params, &args, stdin.as_deref(), cwd.as_ref(), errs);
    let logs = super::logs::logs(&o, cwd.as_ref(), errs);
    let (env, pass_env) = environment(&o, d, errs);
    let success_codes = success_codes(&o, errs);
    let timeout = o.seconds("timeoutSeconds", errs).unwrap_or(d.timeout);
    let background = super::background::for_tool(&o, d.background, timeout, errs);
    let verdict = super::verdict::verdict(&o, &params, errs);
    let fixed_cwd = match &cwd {
        Some(Cwd::Fixed(dir)) => Some(dir.as_path()),
        _ => None,
    };
    let subject = super::confine::Subject {
        program: &program,
        params: &params,
        roots: Vec::new(),
        cwd: fixed_cwd,
    };
    let confine = super::confine::rules(&o, scope, &subject, errs);
    Some(ToolSpec {
        name,
        title: o.string("title", errs),
        description,
        annotations: annotations(&o, errs),
        program,
        args,
        params,
        cwd,
        env,
        pass_env,
        stdin,
        timeout,
        background,
        kill_grace: o.millis("killGraceMs", errs).unwrap_or(d.kill_grace),
        max_output_bytes: o
            .count("maxOutputBytes", errs)
            .unwrap_or(d.max_output_bytes),
        success_codes,
        progress: progress(&o, errs),
        line_buffered: line_buffered(&o, base, errs),
        limits: limits(&o, d.limits, errs),
        remote: super::remote::remote(&o, base, errs),
        logs,
        verdict,
        portfolio: Vec::new(),
        confine,
    })
}

/// The keys a tool object may have.
const TOOL_KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "annotations",
    "program",
    "args",
    "params",
    "cwd",
    "env",
    "passEnv",
    "stdin",
    "timeoutSeconds",
    "killGraceMs",
    "maxOutputBytes",
    "successCodes",
    "progress",
    "lineBuffered",
    "maxMemoryMB",
    "cpuSeconds",
    "maxFileSizeMB",
    "nice",
    "capture",
    "onCancel",
    "onCancelTimeoutSeconds",
    "logs",
    "background",
    "verdict",
    "confine",
    "readable",
    "writable",
    "network",
];

fn tool_name(o: &Obj<'_>, errs: &mut Errors) -> String {
    let name = o.required_string("name", errs).unwrap_or_default();
    if !name.is_empty() && !is_tool_name(&name) {
        errs.add(
            &o.at("name"),
            "must be 1-128 characters of A-Z a-z 0-9 _ - .",
        );
    }
    name
}

/// `stdin` names a string parameter whose value is sent on the child's standard input.
fn stdin(o: &Obj<'_>, params: &BTreeMap<String, Param>, errs: &mut Errors) -> Option<String> {
    let stdin = o.string("stdin", errs);
    if let Some(s) = &stdin {
        match params.get(s) {
            Some(p) if matches!(p.kind, ParamType::String) => {}
            Some(_) => errs.add(
                &o.at("stdin"),
                format!("parameter {s} must be of type string to be sent on stdin"),
            ),
            None => errs.add(&o.at("stdin"), format!("names no parameter: {s}")),
        }
    }
    stdin
}

fn success_codes(o: &Obj<'_>, errs: &mut Errors) -> Vec<i32> {
    match o.map.get("successCodes") {
        None => vec![0],
        Some(Value::Array(c))
            if !c.is_empty()
                && c.iter()
                    .all(|x| x.as_i64().is_some_and(|n| (0..=255).contains(&n))) =>
        {
            c.iter()
                .filter_map(|x| x.as_i64().map(|n| n as i32))
                .collect()
        }
        Some(_) => {
            errs.add(
                &o.at("successCodes"),
                "must be a non-empty array of exit codes (0-255)",
            );
            vec![0]
        }
    }
}

fn progress(o: &Obj<'_>, errs: &mut Errors) -> Option<ProgressLines> {
    let p = Obj::new(o.map.get("progress")?, &o.at("progress"), errs)?;
    p.only(&["prefix", "stream"], errs);
    let prefix = p
        .required_string("prefix", errs)
        .filter(|s| !s.is_empty())?;
    let stream = match p.string("stream", errs).as_deref() {
        None | Some("stdout") => Stream::Stdout,
        Some("stderr") => Stream::Stderr,
        Some(other) => {
            errs.add(
                &p.at("stream"),
                format!("must be \"stdout\" or \"stderr\", not {other:?}"),
            );
            Stream::Stdout
        }
    };
    Some(ProgressLines { prefix, stream })
}

fn cwd(
    o: &Obj<'_>,
    params: &BTreeMap<String, Param>,
    base: &Path,
    errs: &mut Errors,
) -> Option<Cwd> {
    let path = o.at("cwd");
    match o.map.get("cwd")? {
        Value::String(dir) => fixed_dir(&path, base, dir, errs).map(Cwd::Fixed),
        v @ Value::Object(_) => {
            let c = Obj::new(v, &path, errs)?;
            c.only(&["param"], errs);
            let name = c.required_string("param", errs)?;
            match params.get(&name).map(|p| &p.kind) {
                Some(ParamType::Path {
                    kind: PathKind::Dir,
                    must_exist: true,
                    ..
                }) => Some(Cwd::Param(name)),
                Some(_) => {
                    errs.add(
                        &c.at("param"),
                        format!(
                            "{name} must be a path parameter with kind \"dir\" that must exist"
                        ),
                    );
                    None
                }
                None => {
                    errs.add(
                        &c.at("param"),
                        format!("names no declared parameter: {name}"),
                    );
                    None
                }
            }
        }
        _ => {
            errs.add(&path, "must be a directory (a string) or {\"param\": name}");
            None
        }
    }
}
