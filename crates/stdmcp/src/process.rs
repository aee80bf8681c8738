//! The one runner every child process goes through.
//!
//! [`run`] spawns a program as the leader of its own process group with an
//! explicit environment, feeds its stdin, captures stdout/stderr (bounded,
//! head + tail), enforces a timeout and cancellation (SIGTERM to the group,
//! SIGKILL after a grace period), applies resource [`Limits`], and after the
//! leader exits sweeps the group and everything else the call started (found
//! through the subreaper and an environment marker, see [`marker_instance`]) with
//! SIGKILL, so no process of the call outlives the call. A watchdog
//! (`reaper`) does the same if the server itself dies: a `/bin/sh` child the runner starts
//! with the first program it runs ([`start_watchdog`] starts it earlier), which kills every
//! process group still running, and everything carrying this server's marker
//! ([`marker_instance`]), when the server's end of its pipe closes, then runs the pending
//! `onCancel` commands ([`on_cancel`]) and removes the server's [`private_dir`]. It is part
//! of the runner, not a hook: whoever runs programs through it gets the watchdog too.
//!
//! The program that embeds this should ignore SIGPIPE (Rust binaries do by
//! default) so a child that closes its stdin early yields EPIPE, not a signal.

mod capture;
mod group;
pub mod interactive;
mod leader;
mod limits;
pub mod on_cancel;
mod orphans;
pub use orphans::instance as marker_instance;
pub(crate) mod owned;
pub mod private_dir;
mod procfs;
mod server_process;
mod spawn;
mod spec;
mod watch;
pub use limits::Limits;
pub use server_process::ServerProcess;
pub use spec::{minimal_environment, OutputSink, RunSpec, INHERITED_ENV};

pub use crate::reaper::{
    ensure_started as start_watchdog, missing as watchdog_missing, watchdog_pid,
};
use std::fmt;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cancel::CancelToken;
use crate::reaper;

pub use capture::Captured;
pub(crate) use group::{signal_group, terminate_group};
use group::{wait_child, WaitEnd};
pub(crate) use spawn::{cloexec_inherited_fds, harden, prepare};
use spawn::{command, spawn_error};

/// Longest wait between two checks of the cancel flag and the deadline.
const TICK: Duration = Duration::from_millis(20);
/// How long the output pipes may stay open after the child was reaped (and its group swept).
const READER_GRACE: Duration = Duration::from_millis(250);

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
}

/// Why [`run`] failed.
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
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Spawn { source, .. } => Some(source),
            RunError::Io(e) => Some(e),
        }
    }
}

/// Callback receiving complete output lines.
pub type LineFn = Arc<dyn Fn(Stream, &str) + Send + Sync>;

/// Run `spec` to completion (or cancellation / timeout).
///
/// A token cancelled before the program could be started (a job whose deadline passed
/// before a worker took it) starts nothing: the outcome says it never started
/// ([`Outcome::started`]), timed out or cancelled as the token's reason says.
///
/// `on_line` is called on the calling thread with each complete
/// output line (lossy UTF-8, without the newline, cut to ~1 KiB); a last line
/// without newline is passed at EOF. `on_spawn` is called once with the
/// child's pid right after spawning.
///
/// The child is spawned, fed, read and waited for on the calling thread (one `poll`, see
/// `watch`), so a call wakes one thread of the server, not three. This also matters:
/// `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits,
/// not the process, so the forking thread must outlive the child. (After
/// [`seal_inherited_fds`] a call may be started without that hook, with `posix_spawn`.)
///
/// The first call makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`):
/// descendants of a call whose parent exits are reparented to this process, which
/// reaps them at the end of the call (see [`marker_instance`]). The child's environment is
/// `spec.env` plus `STDMCP_CALL=<marker>`.
///
/// With `spec.line_buffered` the program is started by `stdbuf -oL -eL` (found on
/// the child's `PATH`, else `/usr/bin/stdbuf`); that works for dynamically linked
/// programs that use C stdio, not for static or setuid ones.
pub fn run(
    spec: &RunSpec,
    cancel: &CancelToken,
    on_spawn: &mut dyn FnMut(u32),
    on_line: LineFn,
) -> Result<Outcome, RunError> {
    orphans::become_subreaper();
    // The watchdog before the program: it must be there to see what the program starts.
    reaper::ensure_started();
    let marker = orphans::new_marker();
    let mut cmd = command(spec, &marker)?;
    // A job whose deadline passed (or that was cancelled) before a worker took it: nothing
    // is started.
    if cancel.is_cancelled() {
        return Ok(unstarted(spec, cancel));
    }
    let start = Instant::now();
    // Unregistered at the end, after the child was reaped (on every path below).
    let (mut child, _owned) = owned::spawn(&mut cmd).map_err(|e| spawn_error(spec, e))?;
    let pid = child.id();
    // The child called setpgid(0, 0) before exec, and spawn() returns only
    // after a successful exec, so the group exists now.
    let pgid = pid as libc::pid_t;
    let registration = reaper::track(pgid);
    let hook_fired = Arc::new(AtomicBool::new(false));
    let hook = {
        let fired = Arc::clone(&hook_fired);
        cancel.on_cancel(move || {
            fired.store(true, Ordering::SeqCst);
            signal_group(pgid, libc::SIGTERM);
        })
    };
    // `on_spawn` and `on_line`, the caller's code, run inside the wait: if one panics, the
    // child is killed, reaped and swept as after any error, and then the panic goes on.
    let mut panicked = None;
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        on_spawn(pid);
        let mut watch = watch::Watch::new(spec, &mut child, on_line)?;
        let status = wait_child(&mut child, pgid, spec, cancel, start, &mut watch)?;
        Ok((status, watch))
    }))
    .unwrap_or_else(|panic| {
        panicked = Some(panic);
        Err(io::Error::other("a callback of the call panicked"))
    });
    let waited = waited.map_err(|e: io::Error| {
        // Whatever went wrong, never leave the child running or unreaped.
        signal_group(pgid, libc::SIGKILL);
        let _ = child.wait();
        RunError::Io(e)
    });
    let duration = start.elapsed();
    drop(hook);
    // Sweep: kill whatever is left of the group (background jobs etc.) and
    // whatever left the group but carries the call's marker; reap the orphans.
    // The leader was reaped just above, so its pid could in theory be reused,
    // but a new process would also have to become a group leader with that
    // pid within microseconds for this to hit it.
    orphans::sweep(pgid, &marker, Some(start));
    drop(registration);
    if let Some(panic) = panicked {
        std::panic::resume_unwind(panic);
    }

    let ((status, stop), watch) = waited?;
    let (stdout, stderr) = watch.finish(READER_GRACE);
    let fired = hook_fired.load(Ordering::SeqCst);
    let (timed_out, cancelled) = how_it_ended(stop, fired, cancel);
    Ok(Outcome {
        code: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        duration,
        timed_out,
        cancelled,
        pid,
        started: true,
    })
}

/// Whether a run timed out or was cancelled (neither: it exited), from how its wait ended
/// and whether its cancel hook fired.
fn how_it_ended(stop: WaitEnd, fired: bool, cancel: &CancelToken) -> (bool, bool) {
    // A token cancelled because the call's deadline passed is a timeout, not a cancel: the
    // server's tools get their deadline this way (`ToolDef::timeout`) rather than from
    // `spec.timeout`, so that a call has one deadline.
    let by_deadline = (fired || stop == WaitEnd::Cancelled)
        && cancel.reason() == Some(crate::cancel::CancelReason::Deadline);
    let timed_out = stop == WaitEnd::TimedOut || by_deadline;
    let cancelled =
        !by_deadline && (stop == WaitEnd::Cancelled || (fired && stop != WaitEnd::TimedOut));
    (timed_out, cancelled)
}

/// The outcome of a run whose token was cancelled before its program could be started.
fn unstarted(spec: &RunSpec, cancel: &CancelToken) -> Outcome {
    let timed_out = cancel.reason() == Some(crate::cancel::CancelReason::Deadline);
    Outcome {
        code: None,
        signal: None,
        stdout: Captured::new(spec.stdout_cap),
        stderr: Captured::new(spec.stderr_cap),
        duration: Duration::ZERO,
        timed_out,
        cancelled: !timed_out,
        pid: 0,
        started: false,
    }
}

/// Set by [`seal_inherited_fds`]: no descriptor of this process survives an exec.
static SEALED: AtomicBool = AtomicBool::new(false);

/// Marks every open descriptor from 3 up close-on-exec, and from then on lets [`run`] start
/// programs without its pre-exec hook (`PR_SET_PDEATHSIG` and the close-on-exec sweep) when
/// that is safe, so that std starts them with `posix_spawn`: a child that shares the server's
/// memory until it execs (`CLONE_VM | CLONE_VFORK`), where `fork` copies the page tables and
/// makes every later write of every server thread a copy-on-write fault with a TLB shootdown
/// across CPUs (about half of the server's CPU per call of a `/bin/true` tool, docs/bench.md).
///
/// Call it at the start of `main`, before other threads run. It is for a program whose every
/// later descriptor is opened close-on-exec, as std and this crate open theirs; the hook would
/// otherwise be what keeps a descriptor opened without `O_CLOEXEC` out of tool programs. The
/// `stdmcp` binary calls it. Without the hook a program also lacks `PR_SET_PDEATHSIG`, so the
/// fast path is taken only while the watchdog runs (it kills the call's process group and
/// every process with the call's marker if the server dies), and never for a call with
/// resource [`Limits`], which are applied between fork and exec.
pub fn seal_inherited_fds() {
    cloexec_inherited_fds();
    SEALED.store(true, Ordering::SeqCst);
}

/// Whether process `pid` has ended or is ending: no longer there, a zombie not yet reaped, or
/// on its way out (its one thread exiting, possibly stuck there). A program whose first thread
/// exited while others run shows as a zombie, and has not ended. For a child that must not be
/// given more work, such as a session's program killed between two calls.
pub fn has_ended(pid: u32) -> bool {
    i32::try_from(pid).map_or(true, procfs::has_ended)
}

/// Lets every sweep (the end of a call) also reap the zombie children of this process that
/// no `Child` of the runner waits for: processes a call left in process groups of their own
/// (`setpgid`, a shell's job control) that exited, and were reparented to this subreaper
/// when their parent died. Without it they stay zombies as long as the server runs.
///
/// Call it at the start of `main` in a program that starts children only through the runner
/// ([`run`], [`interactive`], [`ServerProcess`]): a child started otherwise could be reaped
/// under its `Child` handle. The `stdmcp` binary calls it.
pub fn reap_stray_children() {
    owned::REAP_STRAYS.store(true, Ordering::SeqCst);
}
