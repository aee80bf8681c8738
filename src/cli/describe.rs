//! What `stdmcp check` prints of a loaded manifest: each tool (what it runs, its parameters,
//! limits and hooks) and each session kind (with its proof cursor's rules).

use std::fmt::Write as _;

use regex_lite::Regex;

use stdmcp_proto::human;

use crate::spec::cursor::{CursorSpec, StateAt};
use crate::spec::project::Deps;
use crate::spec::remote::Remote;
use crate::spec::session::{SessionKind, Workdir};
use crate::spec::{ArgPart, Manifest, ParamType, ToolSpec};

/// The tools and session kinds of `manifest`, described.
pub(super) fn manifest(manifest: &Manifest) -> String {
    let mut out = String::new();
    for t in &manifest.tools {
        out.push('\n');
        tool_summary(&mut out, t);
    }
    for k in &manifest.sessions {
        out.push('\n');
        session_kind(&mut out, k);
    }
    out
}

/// Describes one tool for `stdmcp check`: what it runs, its parameters and its limits.
fn tool_summary(out: &mut String, t: &ToolSpec) {
    let title = t
        .title
        .as_deref()
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    let _ = writeln!(out, "  {}{title}", t.name);
    let _ = writeln!(out, "    {}", t.description);
    if t.portfolio.is_empty() {
        let _ = writeln!(
            out,
            "    runs: {} {}",
            t.program.display(),
            command_line(&t.args, &t.params)
        );
    } else {
        let _ = writeln!(
            out,
            "    portfolio: {} (all at once; the first decisive verdict wins, the others are stopped)",
            t.portfolio.join(", ")
        );
    }
    params_summary(out, &t.params);
    let a = &t.annotations;
    let _ = writeln!(
        out,
        "    timeout {}, output cap {} bytes, success codes {:?}, read-only {}, destructive {}",
        human::setting(t.timeout),
        t.max_output_bytes,
        t.success_codes,
        a.read_only_hint.unwrap_or(false),
        a.destructive_hint.unwrap_or(true)
    );
    let buffering = if t.line_buffered {
        ", output line-buffered (stdbuf)"
    } else {
        ""
    };
    let _ = writeln!(out, "    limits: {}{buffering}", t.limits);
    if t.portfolio.is_empty() {
        let _ = writeln!(out, "    confine: {}", t.confine.describe());
    }
    if let Some(line) = remote(&t.remote) {
        let _ = writeln!(out, "    {line}");
    }
    if let Some(v) = &t.verdict {
        let _ = writeln!(
            out,
            "    verdict rules (first that matches a line; last line wins):"
        );
        for line in v.describe() {
            let _ = writeln!(out, "      {line}");
        }
    }
    if let Some(logs) = &t.logs {
        let _ = writeln!(
            out,
            "    logs: {} (tails added to failed results; the logs and log tools read them)",
            logs.describe()
        );
    }
    if let Some(after) = t.background {
        let _ = writeln!(
            out,
            "    background: a call still running after {} is answered with a job (job_wait, job_cancel, jobs)",
            human::setting(after)
        );
    }
}

/// One line per parameter: name, type, required or default, env, description.
fn params_summary(
    out: &mut String,
    params: &std::collections::BTreeMap<String, crate::spec::Param>,
) {
    for (name, p) in params {
        let ty = type_name(&p.kind);
        let req = if p.required { ", required" } else { "" };
        let def = p
            .default
            .as_ref()
            .map(|d| format!(", default {d}"))
            .unwrap_or_default();
        let env = p
            .env
            .as_deref()
            .map(|e| format!(", in ${e}"))
            .unwrap_or_default();
        let desc = p
            .description
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        let _ = writeln!(out, "    - {name} ({ty}{req}{def}{env}){desc}");
    }
}

/// An argument template as a reader would write it: `{name}`, `-f {name}`, `[-f]`.
fn command_line(
    args: &[ArgPart],
    params: &std::collections::BTreeMap<String, crate::spec::Param>,
) -> String {
    args.iter()
        .map(|a| match a {
            ArgPart::Literal(s) => s.clone(),
            ArgPart::Param {
                name,
                flag: Some(f),
                joined: true,
            } => format!("{f}{{{name}}}"),
            ArgPart::Param {
                name,
                flag: Some(f),
                ..
            } if matches!(params.get(name).map(|p| &p.kind), Some(ParamType::Boolean)) => {
                format!("[{f}]")
            }
            ArgPart::Param {
                name,
                flag: Some(f),
                joined: false,
            } => format!("{f} {{{name}}}"),
            ArgPart::Param { name, .. } => format!("{{{name}}}"),
        })
        .collect::<Vec<String>>()
        .join(" ")
}

fn session_kind(out: &mut String, k: &SessionKind) {
    use crate::spec::session::{AnswerMode, Workdir};
    let _ = writeln!(
        out,
        "  session {} (tools {}_start, _send, _interrupt, _stop, _restart)",
        k.name, k.name
    );
    let _ = writeln!(out, "    {}", k.description);
    let _ = writeln!(
        out,
        "    runs: {} {}",
        k.program.display(),
        command_line(&k.args, &k.params)
    );
    if !k.params.is_empty() {
        let _ = writeln!(out, "    start parameters ({}_start):", k.name);
        params_summary(out, &k.params);
    }
    let dir = match &k.workdir {
        Workdir::Inherit => "the server's".to_owned(),
        Workdir::Fixed(d) => d.display().to_string(),
        Workdir::Param {
            root_name, default, ..
        } => {
            format!("workdir in root {root_name} (default {default})")
        }
    };
    let answer = match &k.answer {
        AnswerMode::Nul => "ends with NUL".to_owned(),
        AnswerMode::Sentinel { command } => format!("sentinel {command:?}"),
        AnswerMode::Prompt { pattern, .. } => format!("prompt /{pattern}/"),
        AnswerMode::Quiet(ms) => format!("quiet for {} ms", ms.as_millis()),
    };
    let _ = writeln!(
        out,
        "    working directory: {dir}; answer: {answer}; {} startup input(s)",
        k.startup.len()
    );
    let _ = writeln!(out, "    confine: {}", k.confine.describe());
    let _ = writeln!(
        out,
        "    at most {} sessions, idle stop {}, timeout {} (max {}), output cap {} bytes, interrupt {}",
        k.max_sessions,
        human::setting(k.idle),
        human::setting(k.timeout),
        human::setting(k.max_timeout),
        k.max_output_bytes,
        crate::spec::session::signal_name(k.interrupt_signal)
    );
    if let Some(s) = &k.status {
        let _ = writeln!(out, "    status input (K_start on a running session): {s}");
    }
    if let Some(e) = &k.error {
        let _ = writeln!(out, "    an answer matching /{}/ is an error", e.source);
    }
    if let Some(c) = &k.cursor {
        out.push_str(&cursor(k, c));
    }
}

/// A parameter's type as `check` shows it (`file path in root problems`).
fn type_name(kind: &ParamType) -> String {
    match kind {
        ParamType::String => "string".to_owned(),
        ParamType::Integer { minimum, maximum } => {
            format!("integer {}..{}", opt(minimum), opt(maximum))
        }
        ParamType::Number { minimum, maximum } => {
            format!("number {}..{}", opt(minimum), opt(maximum))
        }
        ParamType::Boolean => "boolean".to_owned(),
        ParamType::Enum(v) => format!("one of {}", v.join("|")),
        ParamType::Array { max_items, items } => {
            format!(
                "array of up to {max_items} items, each {}",
                type_name(&items.kind)
            )
        }
        ParamType::Path { root, kind, .. } => {
            format!("{kind:?} path in root {root}").to_lowercase()
        }
    }
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

/// How `stdmcp check` shows a tool's hooks (`None` when it has none).
fn remote(r: &Remote) -> Option<String> {
    let mut parts = Vec::new();
    if !r.capture.is_empty() {
        let res: Vec<&str> = r.capture.iter().map(Regex::as_str).collect();
        parts.push(format!("captures {res:?}"));
    }
    if let Some((program, args)) = &r.on_cancel {
        parts.push(format!(
            "on cancel, deadline or shutdown runs: {} {} (within {})",
            program.display(),
            args.join(" "),
            stdmcp_proto::human::setting(r.on_cancel_timeout)
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// What `stdmcp check` prints about a kind's cursor.
fn cursor(kind: &SessionKind, c: &CursorSpec) -> String {
    use std::fmt::Write;
    let k = &kind.name;
    let root = match &kind.workdir {
        Workdir::Param { root_name, .. } => root_name.as_str(),
        _ => "?",
    };
    let mut out = String::new();
    let tools: Vec<String> = c.tools().iter().map(|t| format!("{k}_{t}")).collect();
    let _ = writeln!(out, "    cursor: tools {}", tools.join(", "));
    let _ = writeln!(
        out,
        "      files under root {root}, {}; placeholder /{}/",
        if c.write {
            "proofs written into them"
        } else {
            "read only (proofs returned, not written)"
        },
        pattern(&c.placeholder)
    );
    for r in &c.rules {
        let proof = r
            .proof
            .as_ref()
            .map_or_else(|| "none".to_owned(), |p| format!("/{}/", pattern(p)));
        let _ = writeln!(
            out,
            "      block /{}/ proof {proof} end /{}/{}",
            pattern(&r.start),
            pattern(&r.end),
            if r.goal { "" } else { " (not a goal)" }
        );
    }
    let _ = writeln!(
        out,
        "      enter {:?}, step {:?}, undo {:?}, goals {:?}, drop {:?}",
        c.enter, c.step, c.undo, c.goals, c.drop
    );
    let _ = writeln!(
        out,
        "      error /{}/, proved /{}/; steps join as {:?} separated by {:?}",
        pattern(&c.error),
        pattern(&c.proved),
        c.join_step,
        c.join_separator
    );
    let state_at = match &c.state_at {
        StateAt::Prefix { .. } => "the proof's prefix as one step",
        StateAt::Sentences { .. } => "the proof's sentences as steps",
    };
    let _ = writeln!(
        out,
        "      state_at: {state_at}; loads time out after {:.0} s{}",
        c.timeout.as_secs_f64(),
        c.background
            .map(|d| format!(", become jobs after {:.0} s", d.as_secs_f64()))
            .unwrap_or_default()
    );
    project(&mut out, c);
    out
}

/// A cursor's project, imports and build, for `stdmcp check`.
fn project(out: &mut String, c: &CursorSpec) {
    if let Some(p) = &c.project {
        let _ = writeln!(
            out,
            "      project: {} found upward from the proof file",
            p.file
        );
        for r in &p.lines {
            let mut gives = Vec::new();
            for (what, list) in [
                ("args", &r.args),
                ("inputs", &r.inputs),
                ("load path", &r.dirs),
            ] {
                if !list.is_empty() {
                    gives.push(format!("{what} {list:?}"));
                }
            }
            let each = r
                .split
                .map(|g| format!(" (each word of group {g})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "        line /{}/{each} gives {}",
                pattern(&r.pattern),
                gives.join(", ")
            );
        }
    }
    for r in &c.imports.rules {
        let name = r.name.as_deref().unwrap_or_default();
        let _ = writeln!(out, "      imports /{}/ name {name:?}", pattern(&r.pattern));
    }
    if let Some(l) = &c.imports.load {
        let _ = writeln!(
            out,
            "      loads an import with {l:?} before the command that names it"
        );
    }
    if let Some(b) = &c.build {
        let deps = match &b.deps {
            Deps::Program { program, args, .. } => {
                format!(
                    "the make-style rules of {} {}",
                    program.display(),
                    args.join(" ")
                )
            }
            Deps::Imports(rules) => {
                let found: Vec<String> = rules
                    .iter()
                    .map(|r| format!("/{}/ -> {}", pattern(&r.matches), r.source))
                    .collect();
                format!("its imports ({})", found.join(", "))
            }
        };
        let _ = writeln!(
            out,
            "      build: dependencies found by {deps}; each built with {} {}, up to date when {} is newer",
            b.program.display(),
            b.args.join(" "),
            b.output
        );
    }
    if let Some(cmd) = &c.commands {
        let _ = writeln!(
            out,
            "      commands outside blocks end at /{}/",
            pattern(cmd)
        );
    }
    if !c.rollback.is_empty() {
        let _ = writeln!(
            out,
            "      an interrupted block is taken back with {:?}",
            c.rollback
        );
    }
}

/// A pattern as the manifest wrote it (without the multi-line flag the loader adds).
fn pattern(r: &Regex) -> &str {
    r.as_str().trim_start_matches("(?m)")
}
