//! A tool of a manifest: the program, its argument template and typed parameters, its
//! limits and hooks.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use stdmcp::mcp::ToolAnnotations;
use stdmcp::process::{Limits, Stream};

use super::{logs, remote, verdict};

/// One tool of a manifest.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Description for the model.
    pub description: String,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// The program, absolute.
    pub program: PathBuf,
    /// The argument template.
    pub args: Vec<ArgPart>,
    /// Parameters, by name.
    pub params: BTreeMap<String, Param>,
    /// Working directory.
    pub cwd: Option<Cwd>,
    /// Variables set for this tool (on top of the defaults').
    pub env: BTreeMap<String, String>,
    /// Server variables passed to this tool (on top of the defaults').
    pub pass_env: Vec<String>,
    /// The parameter whose value is written to the program's stdin.
    pub stdin: Option<String>,
    /// Wall-clock limit of one call.
    pub timeout: Duration,
    /// A call still running after this long is answered with a job (README "Long runs").
    pub background: Option<Duration>,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Bytes kept of each output stream.
    pub max_output_bytes: usize,
    /// Exit codes that mean success.
    pub success_codes: Vec<i32>,
    /// Progress lines the program prints, if any.
    pub progress: Option<ProgressLines>,
    /// Run the program with line-buffered stdout/stderr (`stdbuf -oL -eL`).
    pub line_buffered: bool,
    /// Resource limits (the tool's own keys over the defaults').
    pub limits: Limits,
    /// Remote-work hooks: `capture`, `onCancel` ([`remote`]).
    pub remote: remote::Remote,
    /// Log files the program writes (README "Log files").
    pub logs: Option<logs::Logs>,
    /// How to read the program's verdict from its output (README "Verdicts").
    pub verdict: Option<verdict::Verdict>,
    /// A portfolio's members (README "Portfolios"): tools of the manifest run at once on
    /// the same arguments; empty for a tool that runs a program.
    pub portfolio: Vec<String>,
    /// What its program may reach (README "Security model").
    pub confine: super::confine::Rules,
}

/// One element of an argument template.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgPart {
    /// Passed as it is.
    Literal(String),
    /// A parameter's value: omitted when an optional parameter is not given; an array gives one
    /// element per item; a boolean gives only its flag, when true.
    Param {
        /// The parameter.
        name: String,
        /// Emitted before the value (`["--flag", value]`), or joined to it.
        flag: Option<String>,
        /// `--flag=value` as one element.
        joined: bool,
    },
}

/// A typed parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// What it means, for the model.
    pub description: Option<String>,
    /// Its type and type-specific limits.
    pub kind: ParamType,
    /// Whether the caller must give it.
    pub required: bool,
    /// Used when not given.
    pub default: Option<Value>,
    /// Allow a standalone value starting with `-` (refused by default: option injection).
    pub allow_leading_dash: bool,
    /// Allow control characters (newlines…) in argv values, and shell metacharacters in a
    /// value spliced into interpreter code (both refused by default; NUL is always refused).
    pub allow_metacharacters: bool,
    /// Longest string value, in characters.
    pub max_length: usize,
    /// The value is spliced into code an interpreter runs (`sh -c`, `python3 -c`…), found
    /// by [`lint::code_params`] when the manifest is loaded.
    pub in_code: bool,
    /// The environment variable the value is put in (`env`), besides or instead of argv.
    pub env: Option<String>,
}

/// Parameter types.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamType {
    /// Text.
    String,
    /// A whole number in a range.
    Integer {
        /// Smallest allowed.
        minimum: Option<i64>,
        /// Largest allowed.
        maximum: Option<i64>,
    },
    /// A number in a range.
    Number {
        /// Smallest allowed.
        minimum: Option<f64>,
        /// Largest allowed.
        maximum: Option<f64>,
    },
    /// True or false.
    Boolean,
    /// One of a list of strings.
    Enum(Vec<String>),
    /// A list of values, each checked as `items` (strings unless the manifest says otherwise).
    Array {
        /// Most items allowed.
        max_items: usize,
        /// What each item must be (never an array or a boolean).
        items: Box<Param>,
    },
    /// A path confined to a declared root (after resolving symlinks).
    Path {
        /// The root's name.
        root: String,
        /// The path must exist.
        must_exist: bool,
        /// What it must be.
        kind: PathKind,
        /// The program may write what the value names (`"write": true`): a directory and
        /// what is beneath it, a file, or the directory a missing file would be made in.
        write: bool,
    },
}

/// What a path parameter must name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Either.
    Any,
}

/// A tool's working directory.
#[derive(Clone, Debug, PartialEq)]
pub enum Cwd {
    /// Always this directory.
    Fixed(PathBuf),
    /// The directory a path parameter names.
    Param(String),
}

/// Lines with a prefix that report progress: `PREFIX progress[/total] [message]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressLines {
    /// The prefix.
    pub prefix: String,
    /// Where the program prints them.
    pub stream: Stream,
}

impl ArgPart {
    /// Whether parameter `name` appears in the template `args`.
    pub fn uses(args: &[ArgPart], name: &str) -> bool {
        args.iter()
            .any(|a| matches!(a, ArgPart::Param { name: n, .. } if n == name))
    }

    /// Whether the template `args` uses a built-in placeholder (then it is expanded per call).
    pub fn uses_built_in(args: &[ArgPart]) -> bool {
        args.iter().any(|a| match a {
            ArgPart::Literal(s) => remote::placeholders(s)
                .iter()
                .any(|p| remote::BUILT_IN.contains(p)),
            ArgPart::Param { .. } => false,
        })
    }

    /// The template `args` with the built-in placeholders of its literals filled in.
    pub fn expand_built_in(args: &[ArgPart], values: &BTreeMap<String, String>) -> Vec<ArgPart> {
        args.iter()
            .map(|a| match a {
                ArgPart::Literal(s) => {
                    ArgPart::Literal(remote::expand(s, values, &[]).unwrap_or_default())
                }
                other => other.clone(),
            })
            .collect()
    }
}
