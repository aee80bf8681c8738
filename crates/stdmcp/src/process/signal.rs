//! The two system calls that send a started program's processes a signal. Only a program's
//! owner, [`super::group::Group`], calls them: for its process group, and through the sweep
//! it runs (`sweep.rs`) for the processes that left the group. (The watchdog, a shell of its
//! own, kills with `kill` when the server is gone.)

use std::io;

/// Sends `sig` to process group `pgid`; ESRCH (group gone) is fine. Returns whether the
/// signal was delivered or the group was already gone: false for a refused group (our own,
/// 0, or init's, 1, or a negative id) and for any other killpg error.
#[allow(unsafe_code)]
pub(super) fn group(pgid: libc::pid_t, sig: libc::c_int) -> bool {
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

/// Sends `sig` to the one process `pid` (one the sweep found, by pid and start time).
#[allow(unsafe_code)]
pub(super) fn process(pid: libc::pid_t, sig: libc::c_int) {
    if pid <= 1 {
        return;
    }
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid, sig) };
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(group(pgid, 0), "a live group of our own child is signalled");
        for special in [0, 1, -1, -5, -pgid] {
            assert!(!group(special, 0), "group {special} must be refused");
        }
        assert!(group(pgid, libc::SIGKILL));
        child.wait().expect("reap sleep");
        assert!(group(pgid, 0), "a gone group is fine (ESRCH)");
    }
}
