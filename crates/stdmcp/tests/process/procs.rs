//! What the tests read of processes (/proc: state, parent, group, pending signals), how they wait
//! for them to be gone, and how they stop what a failing test would leave behind.

use std::thread;
use std::time::{Duration, Instant};

/// How long a test waits for a process before it fails.
pub(crate) const FAIL_AFTER: Duration = Duration::from_secs(10);

/// Parse the "CHILD GRANDCHILD" line the fixtures print (`tree.sh` prefixes it with
/// "PROGRESS 1 pids " for the server's progress tests).
pub(crate) fn pids(line: &str) -> (u32, u32) {
    let mut it = line
        .trim_start_matches("PROGRESS 1 pids ")
        .split_whitespace()
        .map(|w| w.parse::<u32>().expect("pid"));
    (it.next().expect("child"), it.next().expect("grandchild"))
}

/// (state, ppid, pgrp) from /proc/PID/stat, None if the process is gone.
pub(crate) fn stat(pid: u32) -> Option<(char, u32, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = s.rsplit_once(") ")?;
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Dead: no such process, or only a zombie waiting for (some) parent.
pub(crate) fn is_gone(pid: u32) -> bool {
    !matches!(stat(pid), Some((state, _, _)) if state != 'Z' && state != 'X')
}

pub(crate) fn wait_gone(pid: u32, what: &str) -> Duration {
    let start = Instant::now();
    while !is_gone(pid) {
        if start.elapsed() > FAIL_AFTER {
            panic!("{what} (pid {pid}) still alive after {FAIL_AFTER:?}");
        }
        thread::sleep(Duration::from_micros(200));
    }
    start.elapsed()
}

pub(crate) fn status(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default()
}

/// The process is gone, exiting, or has a signal pending. Pending signals
/// are read first: a dying process clears them just before it is flagged
/// PF_EXITING, which the later read of `stat` then sees.
pub(crate) fn signalled_or_dying(pid: u32) -> bool {
    const PF_EXITING: u64 = 0x4;
    let pending = status(pid).lines().any(|l| {
        (l.starts_with("SigPnd:") || l.starts_with("ShdPnd:"))
            && l.split_whitespace()
                .nth(1)
                .is_some_and(|m| !m.trim_start_matches('0').is_empty())
    });
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let Some((_, rest)) = s.rsplit_once(") ") else {
        return true;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let flags: u64 = f.get(6).and_then(|v| v.parse().ok()).unwrap_or(0);
    pending || matches!(f.first(), Some(&"Z") | Some(&"X")) || flags & PF_EXITING != 0
}

/// All live (non-zombie) processes: (pid, state, ppid, pgrp).
pub(crate) fn processes() -> Vec<(u32, char, u32, u32)> {
    let mut v = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        if let Some((state, ppid, pgrp)) = stat(pid) {
            v.push((pid, state, ppid, pgrp));
        }
    }
    v
}

pub(crate) fn live_group_members(pgid: u32) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|&(_, state, _, pgrp)| pgrp == pgid && state != 'Z' && state != 'X')
        .map(|(pid, ..)| pid)
        .collect()
}

/// SIGKILL delivery is asynchronous: a killed process may still be on its
/// way out for a moment after `run` returned, so wait (bounded).
pub(crate) fn wait_group_empty(pgid: u32) {
    let start = Instant::now();
    loop {
        let left = live_group_members(pgid);
        if left.is_empty() {
            return;
        }
        if start.elapsed() > FAIL_AFTER {
            panic!("group {pgid} still has live members {left:?} after {FAIL_AFTER:?}");
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Kills the listed pids if the test panics, so a failing test does not leave
/// `sleep 1000`s behind (not on success: the pids may have been reused).
pub(crate) struct KillOnPanic(pub(crate) Vec<u32>);

impl Drop for KillOnPanic {
    fn drop(&mut self) {
        if thread::panicking() {
            for &pid in &self.0 {
                kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// A helper process that is SIGKILLed and reaped whenever the test ends.
pub(crate) struct HelperGuard(pub(crate) std::process::Child);

impl Drop for HelperGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn kill(pid: u32, sig: i32) {
    // SAFETY: plain kill(2) on a pid we started.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}
