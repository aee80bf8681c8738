//! What a run yields: its [`Outcome`] (or a [`RunError`]), and the output [`Stream`]s its
//! lines come from.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::capture::Captured;

/// Which output stream a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Result of a finished run.
#[derive(Debug)]
pub struct Outcome {
    /// Exit code, if the leader exited normally.
    pub code: Option<i32>,
    /// Terminating signal, if the leader was killed by one.
    pub signal: Option<i32>,
    /// What it wrote to stdout (head and tail beyond the cap).
    pub stdout: Captured,
    /// What it wrote to stderr (head and tail beyond the cap).
    pub stderr: Captured,
    /// From spawn to reap.
    pub duration: Duration,
    /// The deadline passed: `spec.timeout`, or the token was cancelled with
    /// [`CancelReason::Deadline`](crate::cancel::CancelReason::Deadline).
    pub timed_out: bool,
    /// The cancel token fired while the child ran (or before it could start), for another
    /// reason than a deadline.
    pub cancelled: bool,
    /// The leader's process id (also its process group id); 0 when it never started.
    pub pid: u32,
    /// The program was started; false when the token was cancelled (its deadline passed,
    /// or the client cancelled) before it could be, and nothing was run.
    pub started: bool,
    /// What the kernel enforced of the run's [`Confinement`](super::confine::Confinement)
    /// (`None`: the spec asked for none).
    pub confined: Option<super::confine::Report>,
}

/// Why [`run`](super::run) failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// The program could not be started.
    Spawn {
        /// The program that could not be started.
        program: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An I/O error while supervising the child (it was killed and reaped).
    Io(io::Error),
    /// The program was not started: its confinement is required
    /// ([`Mode::Require`](super::confine::Mode::Require)) and cannot be enforced in full.
    Confinement {
        /// The program that was not started.
        program: PathBuf,
        /// What could not be enforced, and why.
        why: String,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Spawn { program, source } => {
                let why = match source.kind() {
                    io::ErrorKind::NotFound => "not found".to_string(),
                    io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    _ => source.to_string(),
                };
                write!(f, "could not start program `{}`: {why}", program.display())?;
                if why != source.to_string() {
                    write!(f, " ({source})")?;
                }
                Ok(())
            }
            RunError::Io(e) => write!(f, "error while running child process: {e}"),
            RunError::Confinement { program, why } => write!(
                f,
                "`{}` was not started: its confinement is required (confine: require), and {why}",
                program.display()
            ),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Spawn { source, .. } => Some(source),
            RunError::Io(e) => Some(e),
            RunError::Confinement { .. } => None,
        }
    }
}

/// Callback receiving complete output lines.
pub type LineFn = Arc<dyn Fn(Stream, &str) + Send + Sync>;
