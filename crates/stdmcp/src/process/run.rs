//! The runner of a call: [`run`] starts a program, feeds and reads it, stops it when the call
//! is cancelled or its deadline passes, and ends it (its [`Group`] sweeps and reaps it).

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::capture::Captured;
use super::group::{Group, Reach};
use super::outcome::{LineFn, Outcome, RunError};
use super::ruleset::prepare;
use super::spawn::{command, program_path, spawn_error, Start};
use super::spec::RunSpec;
use super::watch::Watch;
use super::watchdog;
use crate::cancel::{CancelReason, CancelToken};

/// How long the output pipes may stay open after the child was reaped (and its group swept).
const READER_GRACE: Duration = Duration::from_millis(250);

/// Why the wait for a leader ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WaitEnd {
    Exited,
    Cancelled,
    TimedOut,
}

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
/// The child is spawned, fed, read, stopped and waited for on the calling thread (one
/// `poll`, see `watch`), so a call wakes one thread of the server, not three. A cancel of
/// `cancel` only wakes that thread, which then sends the program's group SIGTERM, and SIGKILL
/// after `spec.kill_grace`. This also matters: `PR_SET_PDEATHSIG` fires when the *thread*
/// that forked the child exits, not the process, so the forking thread must outlive the
/// child. (After [`seal_inherited_fds`](super::seal_inherited_fds) a call may be started
/// without that hook, with `posix_spawn`.)
///
/// The first call makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`):
/// descendants of a call whose parent exits are reparented to this process, which
/// reaps them at the end of the call (see [`marker_instance`](super::marker_instance)). The
/// child's environment is `spec.env` plus `STDMCP_CALL=<marker>`.
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
    // The watchdog before the program: it must be there to see what the program starts.
    let watched = watchdog::ensure_started().is_some();
    // A job whose deadline passed (or that was cancelled) before a worker took it: nothing
    // is started.
    if cancel.is_cancelled() {
        return Ok(unstarted(spec, cancel));
    }
    // The confinement's ruleset and private TMPDIR, made in this process before the spawn.
    let mut confined = prepare(spec.confine.as_ref(), &program_path(spec))?;
    let (mut cmd, how) = command(spec, watched, &confined)?;
    let start = Instant::now();
    let on_thread = confined.ruleset().filter(|_| how == Start::Fast);
    let spawned = Group::spawn(&mut cmd, Reach::Recent, on_thread);
    confined.spawned();
    drop(cmd);
    let mut group = spawned.map_err(|e| spawn_error(spec, e))?;
    let pid = group.pid();
    // The cancel hook only wakes this thread, which stops the program itself.
    let hook_fired = Arc::new(AtomicBool::new(false));
    let hook = {
        let (fired, wake) = (Arc::clone(&hook_fired), group.waker());
        cancel.on_cancel(move || {
            fired.store(true, Ordering::SeqCst);
            wake.wake();
        })
    };
    // `on_spawn` and `on_line`, the caller's code, run inside the wait: if one panics, the
    // child is killed, swept and reaped as after any error, and then the panic goes on.
    let mut panicked = None;
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        on_spawn(pid);
        let pipes = (group.take_stdin(), group.take_stdout(), group.take_stderr());
        let mut watch = Watch::new(spec, pipes, on_line)?;
        let stop = supervise(&mut group, spec, cancel, start, &mut watch)?;
        Ok((stop, watch))
    }))
    .unwrap_or_else(|panic| {
        panicked = Some(panic);
        Err(io::Error::other("a callback of the call panicked"))
    });
    let duration = start.elapsed();
    drop(hook);
    // Whatever went wrong, the group is killed (if its leader still runs), swept (what is
    // left of the group, and whatever left it but carries the call's marker) and reaped.
    let ended = group.end();
    // Nothing of the call is left: its private TMPDIR goes.
    drop(confined.tmp.take());
    if let Some(panic) = panicked {
        std::panic::resume_unwind(panic);
    }
    let (stop, watch) = waited.map_err(RunError::Io)?;
    let status = ended.map_err(RunError::Io)?;
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
        confined: confined.report,
    })
}

impl RunSpec {
    /// Runs it to the end (or until `cancel` fires), with no callbacks; see [`run`] for
    /// everything the runner guarantees.
    pub fn run(&self, cancel: &CancelToken) -> Result<Outcome, RunError> {
        run(self, cancel, &mut |_| {}, Arc::new(|_, _| {}))
    }
}

/// Waits for the leader's exit (not reaping it), serving its pipes; stops its group when
/// `cancel` fires or the deadline passes. Returns how the wait ended.
fn supervise(
    group: &mut Group,
    spec: &RunSpec,
    cancel: &CancelToken,
    start: Instant,
    watch: &mut Watch<'_>,
) -> io::Result<WaitEnd> {
    // An overflowing deadline or grace is none.
    let deadline = spec.timeout.and_then(|t| start.checked_add(t));
    let mut stop = WaitEnd::Exited;
    loop {
        if stop == WaitEnd::Exited {
            if cancel.is_cancelled() {
                stop = WaitEnd::Cancelled;
            } else if deadline.is_some_and(|d| Instant::now() >= d) {
                stop = WaitEnd::TimedOut;
            }
            if stop != WaitEnd::Exited {
                group.stop(spec.kill_grace);
            }
        }
        let until = deadline.filter(|_| stop == WaitEnd::Exited);
        if group.wait(until, Some(watch))? {
            return Ok(stop);
        }
    }
}

/// Whether a run timed out or was cancelled (neither: it exited), from how its wait ended
/// and whether its cancel hook fired.
fn how_it_ended(stop: WaitEnd, fired: bool, cancel: &CancelToken) -> (bool, bool) {
    // A token cancelled because the call's deadline passed is a timeout, not a cancel: the
    // server's tools get their deadline this way (`ToolDef::timeout`) rather than from
    // `spec.timeout`, so that a call has one deadline.
    let by_deadline =
        (fired || stop == WaitEnd::Cancelled) && cancel.reason() == Some(CancelReason::Deadline);
    let timed_out = stop == WaitEnd::TimedOut || by_deadline;
    let cancelled =
        !by_deadline && (stop == WaitEnd::Cancelled || (fired && stop != WaitEnd::TimedOut));
    (timed_out, cancelled)
}

/// The outcome of a run whose token was cancelled before its program could be started.
fn unstarted(spec: &RunSpec, cancel: &CancelToken) -> Outcome {
    let timed_out = cancel.reason() == Some(CancelReason::Deadline);
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
        confined: None,
    }
}
