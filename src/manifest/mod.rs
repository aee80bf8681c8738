//! Manifests: local programs served as MCP tools, declared in JSON (README "Manifest
//! reference"; JSON Schema in `docs/manifest.schema.json`).
//!
//! Loading resolves everything once: programs to absolute paths (on `PATH` at startup),
//! roots to canonical directories. Calling a tool builds an argv from the tool's template
//! and the validated arguments ([`plan`]), then runs it through the process runner ([`run`]).

mod background;
mod confine;
mod cursor;
mod hooks;
mod json;
mod limits;
pub mod lint;
pub mod log_tools;
pub mod logs;
mod missing;
mod param;
mod parse;
pub mod plan;
mod portfolio;
mod programs;
pub mod race;
pub mod remote;
pub mod run;
mod session;
mod value;
pub mod verdict;

pub use confine::confine;
pub use missing::SkippedTool;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use stdmcp::mcp::{Implementation, Tool, ToolAnnotations};
use stdmcp::process::{Limits, Stream};
use stdmcp::{Options, Server, ToolDef};

/// The manifest served when none is configured.
pub const DEFAULT_MANIFEST: &str = include_str!("default.json");

/// A loaded, checked manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// Server name (`serverInfo.name`).
    pub name: String,
    /// Server version.
    pub version: String,
    /// Display title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Guidance for the model (naming the tools left out, if any).
    pub instructions: Option<String>,
    /// Tools left out because a program they need is missing (`missingPrograms: "skip"`).
    pub skipped: Vec<SkippedTool>,
    /// Settings every tool inherits.
    pub defaults: Defaults,
    /// Named directories that path parameters are confined to (canonical).
    pub roots: BTreeMap<String, PathBuf>,
    /// The tools, in manifest order.
    pub tools: Vec<ToolSpec>,
    /// The kinds of interactive sessions (README "Sessions").
    pub sessions: Vec<crate::session::SessionKind>,
}

/// Settings every tool inherits unless it sets its own.
#[derive(Clone, Debug)]
pub struct Defaults {
    /// Wall-clock limit of one call.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL to the process group.
    pub kill_grace: Duration,
    /// Bytes kept of each of stdout and stderr (head and tail).
    pub max_output_bytes: usize,
    /// Heartbeat progress interval.
    pub heartbeat: Duration,
    /// Calls running at once; more wait their turn.
    pub max_concurrent_calls: usize,
    /// Environment variables set for every tool.
    pub env: BTreeMap<String, String>,
    /// Variables of the server's environment passed to every tool.
    pub pass_env: Vec<String>,
    /// Resource limits of every tool.
    pub limits: Limits,
    /// Background delay of every tool (`background.afterSeconds`), if any.
    pub background: Option<Duration>,
}

impl Default for Defaults {
    fn default() -> Defaults {
        Defaults {
            timeout: Duration::from_secs(60),
            kill_grace: Duration::from_secs(1),
            max_output_bytes: 64 * 1024,
            heartbeat: stdmcp_proto::peer::DEFAULT_HEARTBEAT,
            max_concurrent_calls: 16,
            env: BTreeMap::new(),
            pass_env: Vec::new(),
            limits: Limits::default(),
            background: None,
        }
    }
}

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
    pub kind: Kind,
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
pub enum Kind {
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

/// A problem in a manifest, at a JSON path such as `tools[2].params.file.root`.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestError {
    /// Where.
    pub path: String,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.problem)
        } else {
            write!(f, "{}: {}", self.path, self.problem)
        }
    }
}

impl Manifest {
    /// Reads and checks a manifest file; relative paths in it are relative to its directory.
    pub fn load(path: &Path) -> Result<Manifest, Vec<ManifestError>> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![ManifestError {
                path: String::new(),
                problem: format!("cannot read {}: {e}", path.display()),
            }]
        })?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Manifest::parse(&text, base)
    }

    /// Checks a manifest given as text; relative paths are relative to `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Manifest, Vec<ManifestError>> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            vec![ManifestError {
                path: String::new(),
                problem: format!("not valid JSON: {e}"),
            }]
        })?;
        parse::manifest(&value, base)
    }

    /// The embedded default manifest. Its workspace root is `STDMCP_ROOT` if set, else the
    /// current directory, except that a current directory of `/` (as some clients start
    /// servers) means the home directory instead, when there is one.
    pub fn default_manifest() -> Result<Manifest, Vec<ManifestError>> {
        Manifest::parse(DEFAULT_MANIFEST, &default_root())
    }

    /// The tools as `tools/list` shows them.
    pub fn tool_definitions(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .map(|t| plan::tool_definition(t, &self.roots))
            .collect()
    }

    /// A server serving this manifest.
    pub fn into_server(self) -> Server {
        let mut info = Implementation::new(&self.name, &self.version);
        info.title.clone_from(&self.title);
        info.description.clone_from(&self.description);
        let mut server = Server::new(&self.name, &self.version).info(info);
        if let Some(i) = &self.instructions {
            server = server.instructions(i);
        }
        let roots = Arc::new(self.roots.clone());
        for spec in &self.tools {
            let def = plan::tool_definition(spec, &roots);
            let timeout = spec.timeout;
            let background = spec.background;
            let slots = spec.portfolio.len();
            let members: Vec<Arc<ToolSpec>> = spec
                .portfolio
                .iter()
                .filter_map(|m| self.tools.iter().find(|t| &t.name == m))
                .map(|t| Arc::new(t.clone()))
                .collect();
            let spec = Arc::new(spec.clone());
            let roots = roots.clone();
            let mut tool = ToolDef::new(
                def.name.clone(),
                def.description.clone().unwrap_or_default(),
                def.input_schema.clone(),
                move |ctx, args| {
                    Ok(if members.is_empty() {
                        run::call(ctx, &spec, &roots, &args)
                    } else {
                        race::call(ctx, &spec, &members, &roots, &args)
                    })
                },
            )
            .timeout(timeout)
            .slots(slots);
            if let Some(t) = def.title {
                tool = tool.title(t);
            }
            if let Some(s) = def.output_schema {
                tool = tool.output_schema(s);
            }
            if let Some(a) = def.annotations {
                tool = tool.annotations(a);
            }
            if let Some(after) = background {
                tool = tool.background(after);
            }
            server = server.tool(tool);
        }
        server = log_tools::register(server, &self.tools, &roots);
        // Sessions keep their long answers in the spool too.
        if !self.tools.is_empty() || !self.sessions.is_empty() {
            server = crate::spool::tool::register(server, crate::spool::Spool::global());
        }
        server = crate::session::register(server, &self.sessions);
        let mut options = Options::default();
        options.heartbeat = self.defaults.heartbeat;
        options.max_concurrent_calls = self.defaults.max_concurrent_calls;
        server.options(options.from_env())
    }
}

fn default_root() -> PathBuf {
    if let Some(r) = std::env::var_os("STDMCP_ROOT").filter(|r| !r.is_empty()) {
        return PathBuf::from(r);
    }
    // A home directory that is not there (a chroot, a container's nominal HOME) would make
    // the workspace unusable and the server refuse to start: `/` is served instead.
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .filter(|h| h.is_dir());
    match std::env::current_dir() {
        Ok(d) if d.parent().is_some() => d,
        Ok(d) => home.unwrap_or(d),
        Err(_) => home.unwrap_or_else(|| PathBuf::from(".")),
    }
}

/// Where `serve` finds its manifest when `--config` is not given: `STDMCP_CONFIG`, then
/// `./stdmcp.json`, then `$XDG_CONFIG_HOME/stdmcp/stdmcp.json` (or `~/.config/…`).
pub fn discover() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("STDMCP_CONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let local = PathBuf::from("stdmcp.json");
    if local.is_file() {
        return Some(local);
    }
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let user = config_home.join("stdmcp").join("stdmcp.json");
    user.is_file().then_some(user)
}
