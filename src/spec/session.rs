//! A session kind as declared in a manifest's `sessions` array (README "Sessions").

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::tool::{ArgPart, Param};
use stdmcp::process::Limits;

/// How the end of an answer is recognised.
#[derive(Clone, Debug)]
pub enum AnswerMode {
    /// The program ends each answer with a NUL byte.
    Nul,
    /// After each input the server sends `command` with `{marker}` replaced by a fresh random
    /// marker; the answer is everything before the marker.
    Sentinel {
        /// The command, with `{marker}` in it.
        command: String,
    },
    /// A regular expression matched at the end of the output.
    Prompt {
        /// The pattern as written in the manifest.
        pattern: String,
        /// The pattern anchored at the end of the output.
        regex: regex_lite::Regex,
    },
    /// No output for this long.
    Quiet(Duration),
}

impl AnswerMode {
    /// The mode's name in the manifest.
    pub fn name(&self) -> &'static str {
        match self {
            AnswerMode::Nul => "nul",
            AnswerMode::Sentinel { .. } => "sentinel",
            AnswerMode::Prompt { .. } => "prompt",
            AnswerMode::Quiet(_) => "quiet",
        }
    }
}

/// Where a session runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Workdir {
    /// The server's working directory.
    Inherit,
    /// Always this directory (canonical).
    Fixed(PathBuf),
    /// `K_start` takes a `workdir` confined to this root (canonical); `default` is used
    /// when it is not given (relative to the root).
    Param {
        /// The root's name in the manifest's `roots`.
        root_name: String,
        /// The root, canonical.
        root: PathBuf,
        /// The default, relative to the root.
        default: String,
    },
}

/// One session kind.
#[derive(Clone, Debug)]
pub struct SessionKind {
    /// Name: tools are `NAME_start`, `NAME_send`, ….
    pub name: String,
    /// What the program is, for the model.
    pub description: String,
    /// The program, absolute.
    pub program: PathBuf,
    /// The argument template (literals, and the start parameters' values).
    pub args: Vec<ArgPart>,
    /// Start parameters: `K_start` takes them; they extend argv and the environment.
    pub params: BTreeMap<String, Param>,
    /// The manifest's roots (start parameters that are paths are confined to them).
    pub roots: BTreeMap<String, PathBuf>,
    /// Working directory.
    pub workdir: Workdir,
    /// Variables set for the program.
    pub env: BTreeMap<String, String>,
    /// Server variables passed to the program.
    pub pass_env: Vec<String>,
    /// Inputs sent once after start.
    pub startup: Vec<String>,
    /// How an answer ends.
    pub answer: AnswerMode,
    /// Wait for a first answer end (the banner's) before sending anything (default true).
    pub greeting: bool,
    /// Inputs end with NUL instead of a newline.
    pub input_nul: bool,
    /// Signal sent to the session's process group to interrupt it.
    pub interrupt_signal: i32,
    /// Input written after the signal.
    pub interrupt_input: Option<String>,
    /// Remove ANSI escape sequences from answers.
    pub strip_ansi: bool,
    /// Sessions of this kind alive at once.
    pub max_sessions: usize,
    /// Idle sessions are stopped after this long.
    pub idle: Duration,
    /// Default limit of one send.
    pub timeout: Duration,
    /// Largest limit a send may ask for.
    pub max_timeout: Duration,
    /// Bytes kept of one answer (head and tail).
    pub max_output_bytes: usize,
    /// Limit of start-up (banner and startup inputs).
    pub startup_timeout: Duration,
    /// After an interrupt, how long the program has to come back before it is restarted.
    pub interrupt_grace: Duration,
    /// Resource limits of the program's processes (`maxMemoryMB`, `cpuSeconds`, …).
    pub limits: Limits,
    /// Sent by `K_start` to a session that already runs; its answer is shown (`status`).
    pub status: Option<String>,
    /// An answer in which this matches is an error (`error`).
    pub error: Option<Pattern>,
    /// The proof cursor (README "Proof files"), if the kind has one.
    pub cursor: Option<std::sync::Arc<super::cursor::CursorSpec>>,
    /// What its program (and its cursor's builds) may reach (README "Security model").
    pub confine: super::confine::Rules,
}

/// A regular expression as written in the manifest, and compiled.
#[derive(Clone, Debug)]
pub struct Pattern {
    /// As written.
    pub source: String,
    /// Compiled, multi-line (`^` and `$` match at line ends).
    pub regex: regex_lite::Regex,
}

impl Pattern {
    /// `source` compiled multi-line, or why it is not a valid pattern.
    pub fn new(source: &str) -> Result<Pattern, BadPattern> {
        regex_lite::Regex::new(&format!("(?m){source}"))
            .map(|regex| Pattern {
                source: source.to_owned(),
                regex,
            })
            .map_err(BadPattern)
    }
}

/// Why a [`Pattern`] does not compile.
#[derive(Debug)]
pub struct BadPattern(regex_lite::Error);

impl std::fmt::Display for BadPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a valid regular expression: {}", self.0)
    }
}

impl std::error::Error for BadPattern {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Signal names accepted in `interrupt.signal`.
pub(crate) const SIGNALS: &[(&str, i32)] = &[
    ("SIGINT", libc::SIGINT),
    ("SIGTERM", libc::SIGTERM),
    ("SIGQUIT", libc::SIGQUIT),
    ("SIGHUP", libc::SIGHUP),
    ("SIGUSR1", libc::SIGUSR1),
    ("SIGUSR2", libc::SIGUSR2),
    ("SIGKILL", libc::SIGKILL),
];

/// The name of signal `sig`.
pub(crate) fn signal_name(sig: i32) -> String {
    SIGNALS
        .iter()
        .find(|(_, n)| *n == sig)
        .map_or_else(|| format!("signal {sig}"), |(s, _)| (*s).to_owned())
}

impl SessionKind {
    /// The bytes that end one input.
    pub fn input_end(&self) -> &'static [u8] {
        if self.input_nul {
            b"\0"
        } else {
            b"\n"
        }
    }
}

/// The tool names of kind `name`, with its cursor's when it has one.
pub(crate) fn tool_names(name: &str, cursor: Option<&super::cursor::CursorSpec>) -> Vec<String> {
    let extra = cursor
        .map(super::cursor::CursorSpec::tools)
        .unwrap_or_default();
    ["start", "send", "interrupt", "stop", "restart"]
        .iter()
        .chain(extra.iter())
        .map(|s| format!("{name}_{s}"))
        .chain(std::iter::once("sessions".to_owned()))
        .collect()
}
