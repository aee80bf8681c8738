//! The manifest's data: what every phase reads. The loader (`crate::manifest`) builds it from
//! JSON and checks it; the server is assembled from it (`crate::assemble`); calls
//! (`crate::call`), sessions and the proof cursor run from it. Nothing here reads a file or
//! starts a program.

pub(crate) mod confine;
pub(crate) mod cursor;
pub(crate) mod logs;
pub(crate) mod project;
pub(crate) mod remote;
pub(crate) mod session;
mod tool;
pub(crate) mod verdict;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use stdmcp::process::Limits;

pub(crate) use session::SessionKind;
pub(crate) use tool::{ArgPart, Cwd, Param, ParamType, PathKind, ProgressLines, ToolSpec};

/// The manifest's roots: each name and its canonical directory.
pub(crate) type Roots = BTreeMap<String, PathBuf>;

/// The built-in tool that reads the output spool, served with any tool or session kind.
pub(crate) const OUTPUT_TOOL: &str = "output";
/// The built-in tool that lists log files, served when a tool declares `logs`.
pub(crate) const LOGS_TOOL: &str = "logs";
/// The built-in tool that reads a log file, served when a tool declares `logs`.
pub(crate) const LOG_TOOL: &str = "log";

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
    /// The roots declared writable (`"write": true`): the programs of the tools that name
    /// them may write in them.
    pub writable_roots: std::collections::BTreeSet<String>,
    /// The tools, in manifest order.
    pub tools: Vec<ToolSpec>,
    /// The kinds of interactive sessions (README "Sessions").
    pub sessions: Vec<SessionKind>,
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
    /// Confinement every tool and session kind starts from.
    pub confine: confine::Declared,
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
            confine: confine::Declared::default(),
        }
    }
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

/// A tool left out because a program it needs is missing.
#[derive(Clone, Debug, PartialEq)]
pub struct SkippedTool {
    /// The tool's name.
    pub name: String,
    /// Why: the program searched for and where.
    pub problem: String,
}
