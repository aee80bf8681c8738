//! Signalling a child's process group and waiting for its leader.

use std::io;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

use super::{watch, RunSpec, TICK};
use crate::cancel::CancelToken;

/// Ends process group `pgid`, led by `child`: SIGTERM, up to `grace` for the leader to exit,
/// then SIGKILL; reaps the leader and returns how it ended.
pub(crate) fn terminate_group(
    child: &mut Child,
    pgid: libc::pid_t,
    grace: Duration,
) -> io::Result<ExitStatus> {
    signal_group(pgid, libc::SIGTERM);
    if let Ok(Some(status)) = child.wait_timeout(grace) {
        return Ok(status);
    }
    signal_group(pgid, libc::SIGKILL);
    child.wait()
}

/// Send `sig` to process group `pgid`; ESRCH (group gone) is fine. Returns whether the
/// signal was delivered or the group was already gone: false for a refused group (our own,
/// 0, or init's, 1, or a negative id) and for any other killpg error.
#[allow(unsafe_code)]
pub(crate) fn signal_group(pgid: libc::pid_t, sig: libc::c_int) -> bool {
    if pgid <= 1 {
        return false; // never our own group (0), init's (1), or a negative id (a process)
    }
    // SAFETY: killpg has no memory-safety preconditions.
    let r = unsafe { libc::killpg(pgid, sig) };
    if r != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ESRCH) {
            log::debug!("killpg({pgid}, {sig}): {err}");
            return false;
        }
    }
    true
}

/// Why the wait for a leader ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WaitEnd {
    Exited,
    Cancelled,
    TimedOut,
}

/// Wait for the child on this (the spawning) thread, reading its output and writing its
/// input meanwhile (`watch`); on cancel or deadline SIGTERM to the group, then SIGKILL after
/// `spec.kill_grace`. Returns after the leader was reaped.
pub(super) fn wait_child(
    child: &mut Child,
    pgid: libc::pid_t,
    spec: &RunSpec,
    cancel: &CancelToken,
    start: Instant,
    watch: &mut watch::Watch<'_>,
) -> io::Result<(ExitStatus, WaitEnd)> {
    // An overflowing deadline or grace is none.
    let deadline = spec.timeout.and_then(|t| start.checked_add(t));
    let mut stop = WaitEnd::Exited;
    let mut kill_at = None;
    loop {
        let now = Instant::now();
        if stop == WaitEnd::Exited {
            if cancel.is_cancelled() {
                stop = WaitEnd::Cancelled;
            } else if deadline.is_some_and(|d| now >= d) {
                stop = WaitEnd::TimedOut;
            }
            if stop != WaitEnd::Exited {
                signal_group(pgid, libc::SIGTERM);
                kill_at = now.checked_add(spec.kill_grace);
            }
        }
        if kill_at.is_some_and(|k| now >= k) {
            signal_group(pgid, libc::SIGKILL);
            kill_at = None;
        }
        let next = [deadline.filter(|_| stop == WaitEnd::Exited), kill_at]
            .into_iter()
            .flatten()
            .fold(now + TICK, Instant::min);
        let wait = next.saturating_duration_since(now);
        if !watch.exit_pollable() {
            // No pidfd and every pipe closed: nothing would wake a poll at the exit.
            if let Some(status) = child.wait_timeout(wait)? {
                return Ok((status, stop));
            }
            continue;
        }
        if watch.wait(wait)? {
            if let Some(status) = child.try_wait()? {
                return Ok((status, stop));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{Command, Stdio};

    #[test]
    #[allow(clippy::disallowed_methods)] // a bare child in a group of its own, as a control
    fn signal_group_refuses_special_groups() {
        use std::os::unix::process::CommandExt;
        // Signal 0 checks deliverability without delivering anything, so a broken guard
        // fails this test without signalling the test harness (killpg(0) is our own group).
        let mut child = std::process::Command::new("sleep")
            .arg("1000")
            .process_group(0)
            .spawn()
            .expect("spawn sleep");
        let pgid = child.id() as libc::pid_t;
        assert!(
            signal_group(pgid, 0),
            "a live group of our own child is signalled"
        );
        for special in [0, 1, -1, -5, -pgid] {
            assert!(!signal_group(special, 0), "group {special} must be refused");
        }
        assert!(signal_group(pgid, libc::SIGKILL));
        child.wait().expect("reap sleep");
        assert!(signal_group(pgid, 0), "a gone group is fine (ESRCH)");
    }

    /// Starts `sh -c script` as a group leader and waits for its first line (it is ready).
    #[allow(clippy::disallowed_methods)] // a bare group leader to terminate
    fn leader(script: &str) -> Child {
        use std::io::BufRead;
        let mut child = Command::new("/bin/sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        let out = child.stdout.take().unwrap();
        io::BufReader::new(out).read_line(&mut line).unwrap();
        child
    }

    #[test]
    fn terminate_group_asks_first_then_kills() {
        let mut polite = leader("echo ready; exec sleep 60");
        let pgid = polite.id() as libc::pid_t;
        let status = terminate_group(&mut polite, pgid, Duration::from_secs(30)).unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM));

        let mut deaf = leader("trap '' TERM; echo ready; while :; do sleep 1; done");
        let pgid = deaf.id() as libc::pid_t;
        let status = terminate_group(&mut deaf, pgid, Duration::from_millis(100)).unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }
}
