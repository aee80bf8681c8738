//! Where a caller's value stops being data: spliced into code an interpreter runs
//! (`sh -c`, `python3 -c`, `node -e`…), naming the program a runner starts (`env`, `xargs`,
//! `find -exec`…), or fed as a script on an interpreter's stdin. The loader marks code
//! parameters (their values are refused shell metacharacters unless `allowMetacharacters`);
//! `stdmcp check` and `serve` warn about every such place, and about string parameters that
//! look like paths but are not confined to a root.

use std::path::Path;

use super::{ArgPart, Kind, Manifest, ManifestError, ToolSpec};

/// Interpreters, and the options whose value is code.
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("sh", &["-c"]),
    ("bash", &["-c"]),
    ("dash", &["-c"]),
    ("ash", &["-c"]),
    ("zsh", &["-c"]),
    ("ksh", &["-c"]),
    ("mksh", &["-c"]),
    ("fish", &["-c", "--command"]),
    ("pwsh", &["-c", "-Command"]),
    ("python", &["-c"]),
    ("pypy", &["-c"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("nodejs", &["-e", "--eval", "-p", "--print"]),
    ("deno", &["eval"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("luajit", &["-e"]),
    ("julia", &["-e", "--eval"]),
    ("Rscript", &["-e"]),
    ("R", &["-e"]),
    ("osascript", &["-e"]),
    ("tclsh", &["-c"]),
    ("swipl", &["-g", "-t"]),
    ("poly", &["--eval"]),
    ("awk", &["--source", "-e"]),
    ("gawk", &["--source", "-e"]),
    ("sed", &["-e", "--expression"]),
];

/// Programs that run another program named by their first operand.
const RUNNERS: &[&str] = &[
    "env", "xargs", "nice", "nohup", "timeout", "stdbuf", "setsid", "sudo", "doas", "time", "chrt",
    "ionice", "taskset", "strace", "flock", "watch", "parallel",
];

/// `find` options whose next argument is a program.
const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// A place where a parameter's value stops being data.
#[derive(Clone, Debug, PartialEq)]
pub enum Risk {
    /// `args[arg]` splices `param` into code run by `interpreter option`.
    Code {
        /// Index in `args`.
        arg: usize,
        /// The parameter.
        param: String,
        /// The interpreter and its code option, as written (`sh -c`).
        by: String,
    },
    /// `args[arg]`, a value of `param`, names the program `runner` starts.
    Program {
        /// Index in `args`.
        arg: usize,
        /// The parameter.
        param: String,
        /// The runner (`env`, `xargs`, `find`).
        runner: String,
    },
}

/// A program's name without directory and version (`/usr/bin/python3.11` → `python`).
fn base_name(program: &str) -> &str {
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
}

fn code_options(program: &str) -> &'static [&'static str] {
    let name = base_name(program);
    INTERPRETERS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&[], |(_, o)| *o)
}

/// What the template of a tool does with each parameter, in order.
pub fn risks(program: &Path, args: &[ArgPart]) -> Vec<Risk> {
    let mut out = Vec::new();
    let mut current = program.to_string_lossy().into_owned();
    // Set by a runner until its program operand; by a code option until its value.
    let mut wants_program = RUNNERS.contains(&base_name(&current));
    let mut code_next: Option<String> = None;
    let mut find_exec = false;
    for (i, part) in args.iter().enumerate() {
        let exec_next = std::mem::take(&mut find_exec);
        match part {
            ArgPart::Literal(s) => {
                if code_next.take().is_some() {
                    continue;
                }
                let operand = !s.starts_with('-')
                    && !s.contains('=')
                    && !s.starts_with(|c: char| c.is_ascii_digit());
                if wants_program && operand || exec_next {
                    current.clone_from(s);
                    wants_program = RUNNERS.contains(&base_name(s));
                } else if code_options(&current).contains(&s.as_str()) {
                    code_next = Some(s.clone());
                } else if base_name(&current) == "find" && FIND_EXEC.contains(&s.as_str()) {
                    find_exec = true;
                }
            }
            ArgPart::Param { name, flag, .. } => {
                let by_flag = flag
                    .as_deref()
                    .map(|f| f.trim_end_matches('=').trim_end())
                    .filter(|f| code_options(&current).contains(f));
                if let Some(option) = code_next.take().or(by_flag.map(str::to_owned)) {
                    out.push(Risk::Code {
                        arg: i,
                        param: name.clone(),
                        by: format!("{} {option}", base_name_keep_version(&current)),
                    });
                } else if flag.is_none() && (wants_program || exec_next) {
                    let runner = base_name_keep_version(&current).to_owned();
                    out.push(Risk::Program {
                        arg: i,
                        param: name.clone(),
                        runner,
                    });
                    wants_program = false;
                }
            }
        }
    }
    out
}

fn base_name_keep_version(program: &str) -> &str {
    Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program)
}

/// The parameters whose values are spliced into interpreter code.
pub fn code_params(program: &Path, args: &[ArgPart]) -> Vec<String> {
    risks(program, args)
        .into_iter()
        .filter_map(|r| match r {
            Risk::Code { param, .. } => Some(param),
            Risk::Program { .. } => None,
        })
        .collect()
}

/// True when an interpreter reads its program from stdin: no operand, no code option.
fn stdin_is_code(program: &Path, args: &[ArgPart]) -> bool {
    let name = program.to_string_lossy();
    !code_options(&name).is_empty()
        && args.iter().all(|a| match a {
            ArgPart::Literal(s) => {
                (s == "-" || s.starts_with('-')) && !code_options(&name).contains(&s.as_str())
            }
            ArgPart::Param { flag, .. } => flag.is_some(),
        })
}

/// Names that suggest a file (`path`, `file`, `dirs`, `input_file`…).
fn looks_like_path(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let n = n.trim_end_matches('s');
    ["path", "file", "dir", "directory", "filename", "folder"]
        .iter()
        .any(|w| n == *w || n.ends_with(&format!("_{w}")))
}

/// Risky but valid things in one tool, with JSON paths under `at` (`tools[2]`).
pub fn tool_warnings(spec: &ToolSpec, at: &str) -> Vec<ManifestError> {
    let mut out = Vec::new();
    let mut warn = |path: String, problem: String| out.push(ManifestError { path, problem });
    for r in risks(&spec.program, &spec.args) {
        match r {
            Risk::Code { arg, param, by } => {
                let guard = if spec
                    .params
                    .get(&param)
                    .is_some_and(|p| p.allow_metacharacters)
                {
                    "allowMetacharacters lets any text through"
                } else {
                    "shell metacharacters in it are refused, which narrows but does not close this"
                };
                warn(format!("{at}.args[{arg}]"), format!(
                    "{param} is run as code by {by}: the caller can make it do anything the program can ({guard}); pass values as data instead, e.g. [\"sh\", \"-c\", \"cmd \\\"$1\\\"\", \"sh\", {{\"param\": \"{param}\"}}]"
                ));
            }
            Risk::Program { arg, param, runner } => warn(
                format!("{at}.args[{arg}]"),
                format!(
                    "{param} chooses the program {runner} runs: the caller can run any program"
                ),
            ),
        }
    }
    if let Some(s) = &spec.stdin {
        if stdin_is_code(&spec.program, &spec.args) {
            warn(format!("{at}.stdin"), format!(
                "{s} is read as a program by {}: the caller can make it do anything the program can",
                spec.program.display()
            ));
        }
    }
    for (name, p) in &spec.params {
        let text = match &p.kind {
            Kind::String => true,
            Kind::Array { items, .. } => items.kind == Kind::String,
            _ => false,
        };
        if text && looks_like_path(name) {
            warn(format!("{at}.params.{name}"), format!(
                "{name} looks like a path but is plain text, confined to nothing; declare it as a path (or an array with path items) to keep it inside a root"
            ));
        }
    }
    out
}

/// Risky but valid things in a manifest (see the module documentation).
pub fn warnings(m: &Manifest) -> Vec<ManifestError> {
    m.tools
        .iter()
        .enumerate()
        .flat_map(|(i, t)| tool_warnings(t, &format!("tools[{i}]")))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parts(v: serde_json::Value) -> Vec<ArgPart> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|a| match a {
                serde_json::Value::String(s) => ArgPart::Literal(s.clone()),
                o => ArgPart::Param {
                    name: o["param"].as_str().unwrap().to_owned(),
                    flag: o["flag"].as_str().map(str::to_owned),
                    joined: o["joined"].as_bool().unwrap_or(false),
                },
            })
            .collect()
    }

    fn code(program: &str, args: serde_json::Value) -> Vec<String> {
        code_params(Path::new(program), &parts(args))
    }

    #[test]
    fn finds_values_that_become_code() {
        assert_eq!(base_name("/usr/bin/python3.11"), "python");
        assert_eq!(code("/bin/sh", json!(["-c", {"param": "s"}])), ["s"]);
        assert_eq!(
            code("/usr/bin/python3", json!([{"param": "s", "flag": "-c"}])),
            ["s"]
        );
        assert_eq!(
            code(
                "perl",
                json!([{"param": "s", "flag": "-e", "joined": true}])
            ),
            ["s"]
        );
        assert_eq!(
            code(
                "/usr/bin/env",
                json!(["-i", "A=1", "timeout", "5", "bash", "-c", {"param": "s"}])
            ),
            ["s"]
        );
        // Data, not code: a positional parameter of the script, a script file, a plain tool.
        assert!(code("sh", json!(["-c", "echo \"$1\"", "sh", {"param": "s"}])).is_empty());
        assert!(code("python3", json!(["script.py", {"param": "s"}])).is_empty());
        assert!(code("grep", json!(["-e", {"param": "s"}])).is_empty());
        let r = risks(
            Path::new("find"),
            &parts(json!([".", "-exec", {"param": "p"}, ";"])),
        );
        assert!(matches!(&r[..], [Risk::Program { arg: 2, runner, .. }] if runner == "find"));
        let r = risks(
            Path::new("xargs"),
            &parts(json!(["-n", "1", {"param": "p"}])),
        );
        assert!(matches!(&r[..], [Risk::Program { arg: 2, .. }]));
    }

    #[test]
    fn knows_when_stdin_is_a_script_and_what_looks_like_a_path() {
        let stdin = |p: &str, a| stdin_is_code(Path::new(p), &parts(a));
        assert!(stdin("python3", json!([])));
        assert!(stdin("bash", json!(["-s"])));
        assert!(!stdin("python3", json!(["script.py"])));
        assert!(!stdin("sh", json!(["-c", "cat"])));
        assert!(!stdin("cat", json!([])));
        for n in ["path", "paths", "file", "input_file", "out_dir", "Files"] {
            assert!(looks_like_path(n), "{n}");
        }
        for n in ["profile", "pattern", "filter", "directory_count"] {
            assert!(!looks_like_path(n), "{n}");
        }
    }
}
