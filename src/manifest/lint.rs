//! Where a caller's value stops being data: spliced into code an interpreter runs
//! (`sh -c`, `python3 -c`, `node -e`, `awk`'s program text…), naming the program a runner
//! starts (`env`, `xargs`, `find -exec`…), choosing code to load (`perl -M`, `git -c`, `make
//! VAR=value`), or fed as a script on an interpreter's stdin. What is known about each
//! program is in `programs`; the scan stops at an interpreter's first operand (the
//! script: what follows is its data). The loader marks code
//! parameters (their values are refused shell metacharacters unless `allowMetacharacters`);
//! `stdmcp check` and `serve` warn about every such place, and about string parameters that
//! look like paths but are not confined to a root.

use std::path::Path;

use super::programs::{describe, operand_options, option, Operands, Opt, Program};
use crate::spec::{ArgPart, Manifest, ManifestError, Param, ParamType, ToolSpec};

/// `find` options whose next argument is a program.
const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// A place where a parameter's value stops being data.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Risk {
    /// `args[arg]` splices `param` into code run by `by` (`sh -c`, `awk (its program text)`).
    Code {
        /// Index in `args`.
        arg: usize,
        /// The parameter.
        param: String,
        /// The interpreter and how it takes the code, as written (`sh -c`).
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
    /// `args[arg]`, a value of `param`, chooses code that `by` loads or runs: a module
    /// (`perl -M`, `python -m`, `node -r`), a setting (`git -c core.pager=…`), a variable
    /// (`make CC=…`). Warned about; its characters are not what makes it dangerous.
    Loads {
        /// Index in `args`.
        arg: usize,
        /// The parameter.
        param: String,
        /// The program and option (`perl -M`).
        by: String,
    },
}

/// What the scan of a template expects next.
#[derive(Clone, Debug, PartialEq)]
enum Next {
    Nothing,
    /// The code of this option.
    Code(String),
    /// A value of some option.
    Value,
    /// The choice of code of this option.
    Load(String),
    /// The program `find -exec` runs.
    Program,
}

/// The scan of a template, program by program (a runner hands over to the program it runs).
struct Scan {
    /// The program as written.
    name: String,
    known: Option<&'static Program>,
    next: Next,
    /// Shell `-c` seen: the first operand is code.
    shell_code: bool,
    options_done: bool,
    /// A code or program-file option gave `awk`/`sed` their program.
    text_given: bool,
    /// Runner operands still to skip before the program.
    skip: usize,
    /// Reached through a runner: a later literal naming a known program may be what runs
    /// (`timeout -s KILL 5 sh -c …`, `xargs -I {} sh -c …`).
    after_runner: bool,
    /// What follows is data.
    done: bool,
}

impl Scan {
    fn new(name: &str, after_runner: bool) -> Scan {
        let known = describe(name);
        let skip = match known.map(|k| k.operands) {
            Some(Operands::Program { skip }) => skip,
            _ => 0,
        };
        Scan {
            name: Path::new(name)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(name)
                .to_owned(),
            known,
            next: Next::Nothing,
            shell_code: false,
            options_done: false,
            text_given: false,
            skip,
            after_runner,
            done: false,
        }
    }

    fn by(&self, how: &str) -> String {
        format!("{} {how}", self.name)
    }

    fn literal(&mut self, s: &str) {
        match std::mem::replace(&mut self.next, Next::Nothing) {
            Next::Code(_) => self.text_given = true,
            Next::Value => {}
            Next::Load(_) => self.done |= self.known.is_some_and(|k| k.load_ends),
            Next::Program => *self = Scan::new(s, true),
            Next::Nothing if self.done => {}
            Next::Nothing => match self.known {
                None if self.name == "find" && FIND_EXEC.contains(&s) => self.next = Next::Program,
                None if self.after_runner && describe(s).is_some() => *self = Scan::new(s, true),
                None => {}
                Some(k) => self.known_literal(k, s),
            },
        }
    }

    fn known_literal(&mut self, k: &'static Program, s: &str) {
        let opt = if self.options_done {
            Opt::Operand
        } else if s == "--" {
            self.options_done = true;
            return;
        } else {
            option(k, s)
        };
        match opt {
            Opt::Code(o) => self.next = Next::Code(o),
            Opt::ShellCode => self.shell_code = true,
            Opt::Value(file) => {
                self.text_given |= file;
                self.next = Next::Value;
            }
            Opt::Load(o) => self.next = Next::Load(o),
            Opt::Given => self.text_given = true,
            Opt::Loaded => self.done |= k.load_ends,
            Opt::Other => {}
            Opt::Operand => match k.operands {
                Operands::Code | Operands::Assignments => {}
                Operands::Program { .. } if s.contains('=') => {}
                Operands::Program { .. } if self.skip > 0 => self.skip -= 1,
                Operands::Program { .. } if s.starts_with(|c: char| c.is_ascii_digit()) => {}
                Operands::Program { .. } => *self = Scan::new(s, true),
                // A script, the shell's code, awk's program text: what follows is data.
                Operands::Script | Operands::Text => self.done = true,
            },
        }
    }

    /// The risk of `args[arg]`, a value of `param` passed with `flag`.
    fn param(&mut self, arg: usize, param: &str, flag: Option<&str>) -> Option<Risk> {
        let code = |by: String| Risk::Code {
            arg,
            param: param.to_owned(),
            by,
        };
        let loads = |by: String| Risk::Loads {
            arg,
            param: param.to_owned(),
            by,
        };
        let program = |runner: String| Risk::Program {
            arg,
            param: param.to_owned(),
            runner,
        };
        match std::mem::replace(&mut self.next, Next::Nothing) {
            Next::Code(o) => return Some(code(self.by(&o))),
            Next::Value => return None,
            Next::Load(o) => {
                self.done |= self.known.is_some_and(|k| k.load_ends);
                return Some(loads(self.by(&o)));
            }
            Next::Program => {
                self.done = true;
                return Some(program(self.name.clone()));
            }
            Next::Nothing if self.done => return None,
            Next::Nothing => {}
        }
        let flag = flag.filter(|f| !f.is_empty());
        let Some(k) = self.known else {
            if self.name == "find" && flag.is_some_and(|f| FIND_EXEC.contains(&f.trim_end())) {
                self.done = true;
                return Some(program(self.name.clone()));
            }
            return None;
        };
        if let (Some(f), false) = (flag, self.options_done) {
            // `--eval=`, `-c `, `-e` (joined or not): the option the value belongs to.
            match option(k, f.trim_end().trim_end_matches('=')) {
                Opt::Code(o) => return Some(code(self.by(&o))),
                Opt::ShellCode => {
                    self.done = true;
                    return Some(code(self.by("-c")));
                }
                Opt::Load(o) => {
                    self.done |= k.load_ends;
                    return Some(loads(self.by(&o)));
                }
                Opt::Operand => {} // a prefix of an operand (`"flag": "echo "`)
                _ => return None,
            }
        }
        if std::mem::take(&mut self.shell_code) {
            self.done = true;
            return Some(code(self.by("-c")));
        }
        match k.operands {
            Operands::Script => {
                self.done = true;
                None
            }
            Operands::Text => {
                self.done = true;
                let given = std::mem::replace(&mut self.text_given, true);
                (!given).then(|| code(self.by("(its program text)")))
            }
            Operands::Code => Some(code(self.by("(run by sh -c)"))),
            Operands::Assignments => Some(loads(self.by("(as a VAR=value operand)"))),
            Operands::Program { .. } if self.skip > 0 => {
                self.skip -= 1;
                None
            }
            Operands::Program { .. } => {
                self.done = true;
                Some(program(self.name.clone()))
            }
        }
    }
}

/// What the template of a tool does with each parameter, in order.
pub(crate) fn risks(program: &Path, args: &[ArgPart]) -> Vec<Risk> {
    let mut scan = Scan::new(&program.to_string_lossy(), false);
    let mut out = Vec::new();
    for (i, part) in args.iter().enumerate() {
        match part {
            ArgPart::Literal(s) => scan.literal(s),
            ArgPart::Param { name, flag, .. } => {
                out.extend(scan.param(i, name, flag.as_deref()));
            }
        }
    }
    out
}

/// The parameters whose values are spliced into interpreter code.
pub(crate) fn code_params(program: &Path, args: &[ArgPart]) -> Vec<String> {
    risks(program, args)
        .into_iter()
        .filter_map(|r| match r {
            Risk::Code { param, .. } => Some(param),
            Risk::Program { .. } | Risk::Loads { .. } => None,
        })
        .collect()
}

/// True when an interpreter reads its program from stdin: no operand, no code option.
fn stdin_is_code(program: &Path, args: &[ArgPart]) -> bool {
    let Some(k) = describe(&program.to_string_lossy()) else {
        return false;
    };
    k.reads_stdin
        && args.iter().all(|a| match a {
            ArgPart::Literal(s) => {
                s.starts_with('-')
                    && !matches!(option(k, s), Opt::Code(_) | Opt::ShellCode | Opt::Given)
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

/// A string, or an array of strings: any text the caller likes.
fn free_text(p: &Param) -> bool {
    match &p.kind {
        ParamType::String => true,
        ParamType::Array { items, .. } => items.kind == ParamType::String,
        _ => false,
    }
}

/// Risky but valid things in one tool, with JSON paths under `at` (`tools[2]`).
pub(crate) fn tool_warnings(spec: &ToolSpec, at: &str) -> Vec<ManifestError> {
    template_warnings(
        &Template {
            program: &spec.program,
            args: &spec.args,
            params: &spec.params,
            stdin: spec.stdin.as_deref(),
        },
        at,
    )
}

/// What a program runs with: a tool's, or a session kind's (its start parameters).
struct Template<'a> {
    program: &'a Path,
    args: &'a [ArgPart],
    params: &'a std::collections::BTreeMap<String, Param>,
    stdin: Option<&'a str>,
}

/// Variables that make a program load or run code of the value's choosing.
const CODE_VARIABLES: &[&str] = &[
    "PATH",
    "ENV",
    "BASH_ENV",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PERL5LIB",
    "PERL5OPT",
    "RUBYLIB",
    "RUBYOPT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "GIT_EXEC_PATH",
    "GIT_CONFIG_PARAMETERS",
];

/// Risky but valid things in an argument template and its parameters.
fn template_warnings(spec: &Template<'_>, at: &str) -> Vec<ManifestError> {
    let mut out = Vec::new();
    let mut warn = |path: String, problem: String| out.push(ManifestError { path, problem });
    for r in risks(spec.program, spec.args) {
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
            // Fixed choices (an enum) and numbers cannot name arbitrary code.
            Risk::Loads { arg, param, by } if spec.params.get(&param).is_some_and(free_text) => {
                warn(format!("{at}.args[{arg}]"), format!(
                    "{param} chooses code that {by} loads or runs: the caller can make it run anything (a module, a setting such as core.pager=…, a variable such as CC=…); offer fixed choices (an enum) instead"
                ));
            }
            Risk::Loads { .. } => {}
            Risk::Program { arg, param, runner } => warn(
                format!("{at}.args[{arg}]"),
                format!(
                    "{param} chooses the program {runner} runs: the caller can run any program"
                ),
            ),
        }
    }
    for (name, p) in spec.params.iter() {
        let Some(var) = p.env.as_deref().filter(|v| CODE_VARIABLES.contains(v)) else {
            continue;
        };
        if !matches!(p.kind, ParamType::Enum(_)) {
            out.push(ManifestError {
                path: format!("{at}.params.{name}.env"),
                problem: format!("{var} chooses code the program (or what it starts) runs: the caller can make it run anything; offer fixed choices (an enum) instead"),
            });
        }
    }
    let mut warn = |path: String, problem: String| out.push(ManifestError { path, problem });
    if let Some(s) = &spec.stdin {
        if stdin_is_code(spec.program, spec.args) {
            warn(format!("{at}.stdin"), format!(
                "{s} is read as a program by {}: the caller can make it do anything the program can",
                spec.program.display()
            ));
        }
    }
    for (name, p) in spec.params {
        let text = free_text(p);
        let alone = spec.args.iter().position(|a| {
            matches!(a, ArgPart::Param { name: n, flag, .. }
                if n == name && flag.as_deref().is_none_or(str::is_empty))
        });
        if let (true, Some(arg), Some(what)) = (
            text,
            alone,
            operand_options(&spec.program.to_string_lossy()),
        ) {
            warn(format!("{at}.args[{arg}]"), format!(
                "{name} is passed alone to {}, which reads {what}: only a leading '-' is refused; declare it as a path (passed absolute) or an enum to rule this out",
                spec.program.file_name().map_or_else(|| spec.program.display().to_string(), |n| n.to_string_lossy().into_owned())
            ));
        }
        if text && looks_like_path(name) {
            warn(format!("{at}.params.{name}"), format!(
                "{name} looks like a path but is plain text, confined to nothing; declare it as a path (or an array with path items) to keep it inside a root"
            ));
        }
    }
    out
}

/// Risky but valid things in a manifest (see the module documentation): its tools, and the
/// start parameters of its session kinds.
pub(crate) fn warnings(m: &Manifest) -> Vec<ManifestError> {
    let kinds = m.sessions.iter().enumerate().flat_map(|(i, k)| {
        let t = Template {
            program: &k.program,
            args: &k.args,
            params: &k.params,
            stdin: None,
        };
        template_warnings(&t, &format!("sessions[{i}]"))
    });
    m.tools
        .iter()
        .enumerate()
        .flat_map(|(i, t)| tool_warnings(t, &format!("tools[{i}]")))
        .chain(kinds)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
