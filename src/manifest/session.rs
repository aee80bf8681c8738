//! Reads the manifest's `sessions` array: the kinds of interactive sessions (README
//! "Sessions"), naming the JSON path of each problem.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::fields::{environment, fixed_dir, program, Scope};
use super::json::{Errors, Obj};
use super::limits::limits;
use crate::spec::session::{AnswerMode, Pattern, SessionKind, Workdir, SIGNALS};
use crate::spec::Defaults;

const KEYS: &[&str] = &[
    "name",
    "description",
    "program",
    "args",
    "params",
    "cwd",
    "workdir",
    "env",
    "passEnv",
    "startup",
    "answer",
    "inputEnd",
    "interrupt",
    "maxMemoryMB",
    "cpuSeconds",
    "maxFileSizeMB",
    "nice",
    "stripAnsi",
    "maxSessions",
    "idleSeconds",
    "timeoutSeconds",
    "maxTimeoutSeconds",
    "maxOutputBytes",
    "startupTimeoutSeconds",
    "interruptGraceMs",
    "status",
    "error",
    "cursor",
    "confine",
    "readable",
    "writable",
    "network",
];

fn is_kind_name(s: &str) -> bool {
    (1..=40).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The `sessions` array (absent: none). `tools` are the tool names already taken.
pub(super) fn sessions(
    v: Option<&Value>,
    scope: Scope<'_>,
    tools: &BTreeSet<String>,
    mut skipped: Option<&mut Vec<crate::spec::SkippedTool>>,
    errs: &mut Errors,
) -> Vec<SessionKind> {
    let mut out = Vec::new();
    let items = match v {
        None => return out,
        Some(Value::Array(items)) => items,
        Some(_) => {
            errs.add("sessions", "must be an array of session kinds");
            return out;
        }
    };
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("sessions[{i}]");
        let mut own = Errors(Vec::new());
        let k = kind(item, &path, scope, &mut own);
        // `missingPrograms: "skip"`: a kind whose program is missing is left out.
        let missing = match skipped.as_deref_mut() {
            Some(list) => {
                super::missing::take(item, &path, scope.base, &mut own).map(|p| (list, p))
            }
            None => None,
        };
        errs.0.append(&mut own.0);
        let Some(k) = k else {
            continue;
        };
        if let Some((skipped, problem)) = missing {
            skipped.push(crate::spec::SkippedTool {
                name: format!("{} sessions", k.name),
                problem,
            });
            continue;
        }
        if !seen.insert(k.name.clone()) {
            errs.add(
                &format!("{path}.name"),
                format!("another session kind is already called {}", k.name),
            );
        }
        for t in crate::spec::session::tool_names(&k.name, k.cursor.as_deref()) {
            if tools.contains(&t) {
                errs.add(
                    &format!("{path}.name"),
                    format!("its tool {t} has the name of a tool in `tools`"),
                );
            }
        }
        out.push(k);
    }
    out
}

fn kind(v: &Value, path: &str, scope: Scope<'_>, errs: &mut Errors) -> Option<SessionKind> {
    let o = Obj::new(v, path, errs)?;
    o.only(KEYS, errs);
    let (d, roots, base) = (scope.defaults, scope.roots, scope.base);
    let name = o.required_string("name", errs).unwrap_or_default();
    if !name.is_empty() && !is_kind_name(&name) {
        errs.add(&o.at("name"), "must be 1-40 characters of A-Z a-z 0-9 _ -");
    }
    let description = o.required_string("description", errs).unwrap_or_default();
    let program = program(&o, base, errs);
    let (params, args) = params_and_args(&o, &name, &program, roots, errs);
    let startup = literals(&o, "startup", errs);
    let workdir = workdir(&o, roots, base, errs);
    let (env, pass_env) = environment(&o, d, errs);
    // On a bad answer rule the error is recorded; go on to find the other problems.
    let (answer, greeting) = answer(&o, errs).unwrap_or((AnswerMode::Nul, true));
    let input_nul = input_nul(&o, errs);
    let (interrupt_signal, interrupt_input) = interrupt(&o, errs);
    let (timeout, max_timeout) = timeouts(&o, d, errs);
    let cursor = o.map.get("cursor").and_then(|c| {
        if !matches!(workdir, Workdir::Param { .. }) {
            errs.add(
                &o.at("cursor"),
                "needs a `workdir` {\"root\": …}: the cursor's files are under that root",
            );
        }
        super::cursor::cursor(c, &o.at("cursor"), (max_timeout, base), errs)
    });
    let confine = {
        let (roots, cwd) = match &workdir {
            Workdir::Param { root_name, .. } => (vec![root_name.clone()], None),
            Workdir::Fixed(dir) => (Vec::new(), Some(dir.as_path())),
            Workdir::Inherit => (Vec::new(), None),
        };
        let subject = super::confine::Subject {
            program: &program,
            params: &params,
            roots,
            cwd,
        };
        super::confine::rules(&o, scope, &subject, errs)
    };
    Some(SessionKind {
        name,
        description,
        program,
        args,
        params,
        roots: roots.clone(),
        workdir,
        env,
        pass_env,
        startup,
        answer,
        greeting,
        input_nul,
        interrupt_signal,
        interrupt_input,
        strip_ansi: o.boolean("stripAnsi", errs).unwrap_or(true),
        max_sessions: o.count("maxSessions", errs).unwrap_or(4),
        idle: o
            .seconds("idleSeconds", errs)
            .unwrap_or(Duration::from_secs(1800)),
        timeout,
        max_timeout,
        max_output_bytes: o.count("maxOutputBytes", errs).unwrap_or(64 * 1024),
        startup_timeout: o
            .seconds("startupTimeoutSeconds", errs)
            .unwrap_or(Duration::from_secs(30)),
        interrupt_grace: o
            .millis("interruptGraceMs", errs)
            .unwrap_or(Duration::from_secs(5)),
        limits: limits(&o, d.limits, errs),
        status: status(&o, errs),
        error: error_pattern(&o, errs),
        cursor,
        confine,
    })
}

/// The kind's `params` (none called `session` or `workdir`, the start tool's own arguments)
/// and `args`, each param used.
fn params_and_args(
    o: &Obj<'_>,
    name: &str,
    program: &Path,
    roots: &BTreeMap<String, PathBuf>,
    errs: &mut Errors,
) -> (
    BTreeMap<String, crate::spec::Param>,
    Vec<crate::spec::ArgPart>,
) {
    let mut params = super::param::params(o, roots, errs);
    for taken in ["session", "workdir"] {
        if params.contains_key(taken) {
            errs.add(
                &format!("{}.params.{taken}", o.path),
                format!("is an argument of {name}_start already: choose another name"),
            );
        }
    }
    let args = super::fields::args(o, &params, errs);
    super::param::finish(o, &mut params, program, &args, roots, errs);
    super::fields::check_all_used(o, &params, &args, None, None, errs);
    (params, args)
}

/// `status`: an input without NUL.
fn status(o: &Obj<'_>, errs: &mut Errors) -> Option<String> {
    let s = o.string("status", errs)?;
    if s.contains('\0') || s.trim().is_empty() {
        errs.add(&o.at("status"), "must be an input: not blank, without NUL");
        return None;
    }
    Some(s)
}

/// `error`: a regular expression.
fn error_pattern(o: &Obj<'_>, errs: &mut Errors) -> Option<Pattern> {
    let s = o.string("error", errs)?;
    Pattern::new(&s)
        .map_err(|e| errs.add(&o.at("error"), e.to_string()))
        .ok()
}

/// `inputEnd`: whether input ends with NUL rather than a newline.
fn input_nul(o: &Obj<'_>, errs: &mut Errors) -> bool {
    match o.string("inputEnd", errs).as_deref() {
        None | Some("newline") => false,
        Some("nul") => true,
        Some(other) => {
            errs.add(
                &o.at("inputEnd"),
                format!("must be \"newline\" or \"nul\", not {other:?}"),
            );
            false
        }
    }
}

/// `timeoutSeconds` (per exchange) and the `maxTimeoutSeconds` a call may ask for; the first
/// may not exceed the second.
fn timeouts(o: &Obj<'_>, d: &Defaults, errs: &mut Errors) -> (Duration, Duration) {
    let timeout = o.seconds("timeoutSeconds", errs).unwrap_or(d.timeout);
    let max_timeout = o
        .seconds("maxTimeoutSeconds", errs)
        .unwrap_or(Duration::from_secs(600));
    if timeout > max_timeout {
        errs.add(
            &o.at("timeoutSeconds"),
            format!(
                "is larger than maxTimeoutSeconds ({})",
                stdmcp_proto::human::setting(max_timeout)
            ),
        );
    }
    (timeout, max_timeout)
}

/// An array of literal strings without NUL.
fn literals(o: &Obj<'_>, key: &str, errs: &mut Errors) -> Vec<String> {
    let items = o.strings(key, errs);
    for (i, s) in items.iter().enumerate() {
        if s.contains('\0') {
            errs.add(&format!("{}[{i}]", o.at(key)), "must not contain NUL");
        }
    }
    items
}

fn workdir(
    o: &Obj<'_>,
    roots: &BTreeMap<String, PathBuf>,
    base: &Path,
    errs: &mut Errors,
) -> Workdir {
    let fixed = o.string("cwd", errs);
    let param = o.map.get("workdir");
    if fixed.is_some() && param.is_some() {
        errs.add(&o.at("workdir"), "cannot be used together with cwd");
    }
    if let Some(dir) = fixed {
        return fixed_dir(&o.at("cwd"), base, &dir, errs).map_or(Workdir::Inherit, Workdir::Fixed);
    }
    let Some(w) = param.and_then(|v| Obj::new(v, &o.at("workdir"), errs)) else {
        return Workdir::Inherit;
    };
    w.only(&["root", "default"], errs);
    let root_name = w.required_string("root", errs).unwrap_or_default();
    let Some(root) = roots.get(&root_name) else {
        if !root_name.is_empty() {
            errs.add(
                &w.at("root"),
                format!("names no declared root (top-level `roots`): {root_name}"),
            );
        }
        return Workdir::Inherit;
    };
    let default = w.string("default", errs).unwrap_or_else(|| ".".into());
    if let Err(e) = crate::resolve::dir_within(root, &default) {
        errs.add(&w.at("default"), e.to_string());
    }
    Workdir::Param {
        root_name,
        root: root.clone(),
        default,
    }
}

fn answer(o: &Obj<'_>, errs: &mut Errors) -> Option<(AnswerMode, bool)> {
    let Some(v) = o.map.get("answer") else {
        errs.add(
            &o.at("answer"),
            "is required (nul, sentinel, prompt or quiet)",
        );
        return None;
    };
    let a = Obj::new(v, &o.at("answer"), errs)?;
    a.only(&["mode", "command", "pattern", "ms", "greeting"], errs);
    let greeting = a.boolean("greeting", errs).unwrap_or(true);
    let mode = match a.required_string("mode", errs)?.as_str() {
        "nul" => AnswerMode::Nul,
        "sentinel" => {
            let command = a.required_string("command", errs)?;
            if !command.contains("{marker}") {
                errs.add(&a.at("command"), "must contain {marker}");
            }
            AnswerMode::Sentinel { command }
        }
        "prompt" => {
            let pattern = a.required_string("pattern", errs)?;
            match regex_lite::Regex::new(&format!("(?:{pattern})\\z")) {
                Ok(regex) => AnswerMode::Prompt { pattern, regex },
                Err(e) => {
                    errs.add(
                        &a.at("pattern"),
                        format!("not a valid regular expression: {e}"),
                    );
                    return None;
                }
            }
        }
        "quiet" => match a.map.get("ms").and_then(Value::as_u64) {
            Some(ms) if ms > 0 => AnswerMode::Quiet(Duration::from_millis(ms)),
            _ => {
                errs.add(
                    &a.at("ms"),
                    "quiet mode needs a positive number of milliseconds",
                );
                return None;
            }
        },
        other => {
            errs.add(
                &a.at("mode"),
                format!("unknown mode {other:?} (nul, sentinel, prompt, quiet)"),
            );
            return None;
        }
    };
    let allowed: &[&str] = match &mode {
        AnswerMode::Nul => &[],
        AnswerMode::Sentinel { .. } => &["command"],
        AnswerMode::Prompt { .. } => &["pattern"],
        AnswerMode::Quiet(_) => &["ms"],
    };
    for k in ["command", "pattern", "ms"] {
        if a.map.contains_key(k) && !allowed.contains(&k) {
            errs.add(&a.at(k), format!("is not used by mode {}", mode.name()));
        }
    }
    Some((mode, greeting))
}

fn interrupt(o: &Obj<'_>, errs: &mut Errors) -> (i32, Option<String>) {
    let default = (libc::SIGINT, None);
    let Some(i) = o
        .map
        .get("interrupt")
        .and_then(|v| Obj::new(v, &o.at("interrupt"), errs))
    else {
        return default;
    };
    i.only(&["signal", "input"], errs);
    let signal = match i.string("signal", errs) {
        None => libc::SIGINT,
        Some(s) => match SIGNALS.iter().find(|(n, _)| *n == s) {
            Some((_, n)) => *n,
            None => {
                let names: Vec<&str> = SIGNALS.iter().map(|(n, _)| *n).collect();
                errs.add(
                    &i.at("signal"),
                    format!("unknown signal {s:?} (one of {})", names.join(", ")),
                );
                libc::SIGINT
            }
        },
    };
    (signal, i.string("input", errs))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use crate::manifest::Manifest;
    use crate::spec::session::{AnswerMode, Workdir};

    fn parse(v: serde_json::Value) -> Result<Manifest, Vec<String>> {
        Manifest::parse(&v.to_string(), std::path::Path::new("/"))
            .map_err(|e| e.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn a_kind_with_defaults() {
        let m = parse(json!({"name": "m", "roots": {"r": "/tmp"}, "sessions": [
            {"name": "sh", "description": "d", "program": "sh", "args": ["-i"],
             "workdir": {"root": "r"}, "answer": {"mode": "prompt", "pattern": "\\$ "}}
        ]}))
        .unwrap();
        let k = &m.sessions[0];
        assert!(m.tools.is_empty());
        assert!(matches!(k.answer, AnswerMode::Prompt { .. }));
        assert!(k.greeting && k.strip_ansi && !k.input_nul);
        assert_eq!(k.interrupt_signal, libc::SIGINT);
        assert_eq!(k.max_sessions, 4);
        assert_eq!(k.idle.as_secs(), 1800);
        assert_eq!(k.max_timeout.as_secs(), 600);
        assert_eq!(k.max_output_bytes, 65536);
        assert!(matches!(&k.workdir, Workdir::Param { default, .. } if default == "."));
    }

    #[test]
    fn problems_name_their_json_path() {
        let errs = parse(json!({"name": "m", "tools": [
            {"name": "py_send", "description": "d", "program": "true"}
        ], "sessions": [
            {"name": "py", "description": "d", "program": "python3", "answer": {"mode": "nul"},
             "timeoutSeconds": 700, "startup": ["a\u{0}"], "interrupt": {"signal": "SIGNOPE"}},
            {"name": "w", "description": "d", "program": "cat", "answer": {"mode": "nul"},
             "workdir": {"root": "nope"}},
            {"name": "x", "program": "cat", "answer": {"mode": "echo"}}
        ]}))
        .unwrap_err();
        let expect = [
            "sessions[0].name: its tool py_send has the name of a tool in `tools`",
            "sessions[0].timeoutSeconds: is larger than maxTimeoutSeconds (600 s)",
            "sessions[0].startup[0]: must not contain NUL",
            "sessions[0].interrupt.signal: unknown signal",
            "sessions[1].workdir.root: names no declared root (top-level `roots`): nope",
            "sessions[2].description: is required",
            "sessions[2].answer.mode: unknown mode \"echo\"",
        ];
        for e in expect {
            assert!(
                errs.iter().any(|x| x.starts_with(e)),
                "no {e:?} in {errs:#?}"
            );
        }
        let errs = parse(json!({"name": "m", "sessions": {}})).unwrap_err();
        assert_eq!(errs, ["sessions: must be an array of session kinds"]);
        let errs = parse(json!({"name": "m"})).unwrap_err();
        assert_eq!(errs, ["tools: is required"]);
    }

    #[test]
    fn a_fixed_cwd_must_be_a_directory_for_tools_and_kinds() {
        let errs = parse(json!({"name": "m",
            "tools": [{"name": "t", "description": "d", "program": "true", "cwd": "/etc/passwd"},
                      {"name": "u", "description": "d", "program": "true", "cwd": "/no/such/dir"}],
            "sessions": [{"name": "k", "description": "d", "program": "cat",
                          "answer": {"mode": "nul"}, "cwd": "/etc/passwd"}]}))
        .unwrap_err();
        for want in [
            "tools[0].cwd: /etc/passwd is not a directory",
            "tools[1].cwd: cannot use /no/such/dir: ",
            "sessions[0].cwd: /etc/passwd is not a directory",
        ] {
            assert!(
                errs.iter().any(|e| e.starts_with(want)),
                "no {want:?} in {errs:#?}"
            );
        }
        let m = parse(json!({"name": "m",
            "tools": [{"name": "t", "description": "d", "program": "true", "cwd": "/tmp"}],
            "sessions": [{"name": "k", "description": "d", "program": "cat",
                          "answer": {"mode": "nul"}, "cwd": "/tmp"}]}))
        .unwrap();
        assert!(matches!(&m.sessions[0].workdir, Workdir::Fixed(d) if d.is_dir()));
    }
}
