//! What to run: [`RunSpec`], built field by field or with its builder methods, and the
//! minimal environment every child starts from.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::confine::Confinement;
use super::limits::Limits;
use super::outcome::Stream;
use super::private_dir;
use crate::beneath::Dir;

/// Variables of the server's environment every child gets (when set): enough to find programs
/// and pick a locale, nothing that carries credentials.
pub const INHERITED_ENV: [&str; 9] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];

/// The minimal environment a child gets: [`INHERITED_ENV`] and `pass_env` where this process
/// has them, then `fixed`, then `env` (later entries win).
pub fn minimal_environment<'a>(
    pass_env: &[String],
    fixed: impl IntoIterator<Item = (&'a str, &'a str)>,
    env: &BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    let mut out: BTreeMap<OsString, OsString> = BTreeMap::new();
    for k in INHERITED_ENV
        .iter()
        .copied()
        .chain(pass_env.iter().map(String::as_str))
    {
        if let Some(v) = std::env::var_os(k) {
            out.insert(k.into(), v);
        }
    }
    // A relative TMPDIR would name another directory in the child's working directory: the
    // child gets the one the server uses, made absolute once.
    let tmpdir = OsStr::new("TMPDIR");
    if out
        .get(tmpdir)
        .is_some_and(|v| !std::path::Path::new(v).is_absolute())
    {
        out.insert(tmpdir.into(), private_dir::temp_root().into());
    }
    let fixed = fixed.into_iter().map(|(k, v)| (k.into(), v.into()));
    out.extend(fixed);
    out.extend(env.iter().map(|(k, v)| (k.into(), v.into())));
    out.into_iter().collect()
}

/// Where a run's complete output goes as it arrives, besides the capped capture in its
/// [`Outcome`](super::Outcome): a file, a log, the `stdmcp` command's output spool.
///
/// The runner calls [`OutputSink::write`] on the thread that runs the program, with each chunk
/// as it is read, so a slow sink slows the reading of the program's output: keep it short.
pub trait OutputSink: Send + Sync + std::fmt::Debug {
    /// Takes `data`, just read from the program's stream `stream`.
    fn write(&self, stream: Stream, data: &[u8]);
}

/// What to run and how: start with [`RunSpec::new`] and its builder methods, or set the
/// fields of the spec it returns.
///
/// ```no_run
/// use std::time::Duration;
/// use stdmcp::process::RunSpec;
/// use stdmcp::CancelToken;
///
/// let outcome = RunSpec::new("z3")
///     .args(["-smt2", "problem.smt2"])
///     .timeout(Duration::from_secs(60))
///     .run(&CancelToken::new())
///     .expect("z3 started");
/// println!("{}", outcome.stdout.text());
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunSpec {
    /// The program: a path, or a name looked up in `env`'s `PATH`.
    pub program: PathBuf,
    /// Its arguments (argv\[1..\]), passed as they are: no shell.
    pub args: Vec<OsString>,
    /// Working directory; `None` keeps the server's.
    pub cwd: Option<PathBuf>,
    /// The working directory held open (`cwd` checked and opened beneath its root): when
    /// set, the child starts in this very directory, whatever `cwd` names by then: it enters
    /// it with `fchdir` between fork and exec, or, started with `posix_spawn` (no code runs
    /// there), by [`Dir::proc_path`]; without `/proc` such a call is forked instead. `cwd`
    /// then only words the errors.
    pub cwd_dir: Option<Arc<Dir>>,
    /// The child's ENTIRE environment (nothing else is inherited).
    pub env: Vec<(OsString, OsString)>,
    /// `None`: stdin is /dev/null. `Some(bytes)`: a private pipe, written
    /// from a helper thread, then closed.
    pub stdin: Option<Vec<u8>>,
    /// A deadline from the start: the group is terminated when it passes and the outcome
    /// says `timed_out`. Server tools leave it `None` and use `ToolDef::timeout`.
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when cancelling or timing out.
    pub kill_grace: Duration,
    /// Bytes kept of stdout (first half + last half), see [`Captured`](super::Captured).
    pub stdout_cap: usize,
    /// Bytes kept of stderr, as for stdout.
    pub stderr_cap: usize,
    /// Resource limits applied in the child before exec.
    pub limits: Limits,
    /// Run the program under `stdbuf -oL -eL` so that glibc stdio flushes each line even
    /// though stdout is a pipe (see [`run`](super::run)).
    pub line_buffered: bool,
    /// Where the complete output goes as it arrives, if anywhere.
    pub sink: Option<Arc<dyn OutputSink>>,
    /// What the program may reach, enforced by the kernel (Landlock); `None`: not confined.
    pub confine: Option<Confinement>,
}

impl RunSpec {
    /// A spec with no args, the minimal environment manifest tools get ([`INHERITED_ENV`]
    /// where set), no stdin, no timeout, a 2 s kill grace and 64 KiB caps.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        RunSpec {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            cwd_dir: None,
            env: minimal_environment(&[], [], &BTreeMap::new()),
            stdin: None,
            timeout: None,
            kill_grace: Duration::from_secs(2),
            stdout_cap: 64 * 1024,
            stderr_cap: 64 * 1024,
            limits: Limits::default(),
            line_buffered: false,
            sink: None,
            confine: None,
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Runs in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Sets one environment variable (replacing an earlier value).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        let key = key.as_ref();
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.as_ref().into()));
        self
    }

    /// Also passes `key` from this process's environment, if set.
    pub fn pass_env(self, key: impl AsRef<OsStr>) -> Self {
        match std::env::var_os(key.as_ref()) {
            Some(v) => self.env(key, v),
            None => self,
        }
    }

    /// Starts from an empty environment instead of the minimal one.
    pub fn env_clear(mut self) -> Self {
        self.env.clear();
        self
    }

    /// Writes `bytes` to the program's stdin through a private pipe, then closes it.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Terminates the group when `timeout` has passed since the start.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Time between SIGTERM and SIGKILL.
    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }

    /// Bytes kept of each stream (head and tail beyond it).
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.stdout_cap = bytes;
        self.stderr_cap = bytes;
        self
    }

    /// Resource limits applied before exec.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Confines the program (and everything it starts) to `c`.
    pub fn confine(mut self, c: Confinement) -> Self {
        self.confine = Some(c);
        self
    }

    /// Passes the complete output, as it arrives, to `sink` too.
    pub fn sink(mut self, sink: Arc<dyn OutputSink>) -> Self {
        self.sink = Some(sink);
        self
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cancel::CancelToken;

    #[test]
    fn the_environment_starts_minimal_and_the_builder_edits_it() {
        let spec = RunSpec::new("env");
        for (k, _) in &spec.env {
            assert!(INHERITED_ENV.iter().any(|i| OsStr::new(i) == k), "{k:?}");
        }
        let spec = spec.env("A", "1").env("A", "2").env_clear().env("B", "3");
        assert_eq!(spec.env, vec![("B".into(), "3".into())]);
    }

    #[test]
    fn the_builder_runs_a_program() {
        let o = RunSpec::new("/bin/sh")
            .args(["-c", "printf %s \"$X\"; cat"])
            .env("X", "x")
            .stdin("in")
            .timeout(Duration::from_secs(30))
            .run(&CancelToken::new())
            .unwrap();
        assert_eq!((o.code, o.stdout.text().as_str()), (Some(0), "xin"));
    }
}
