//! Waiting for a child's exit with a timeout: a pidfd where the kernel has one (Linux 5.3+),
//! else the `wait-timeout` crate.
//!
//! `wait-timeout` wakes on SIGCHLD through one self-pipe that every waiting thread polls:
//! each child's exit wakes all of them, and each then calls `waitpid` for every child in its
//! map; it also creates a socket pair for every wait. With 16 command tools in flight that
//! is hundreds of system calls per exit (docs/bench.md, command tools). A pidfd becomes
//! readable when its own process exits, so each waiting thread wakes for its child only.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, ExitStatus};
use std::time::Duration;

use wait_timeout::ChildExt;

/// Waits for one child; see the module doc.
pub(super) struct ExitWait {
    pidfd: Option<OwnedFd>,
}

impl ExitWait {
    /// A pidfd for `child` (which must not have been reaped), or the fallback.
    #[allow(unsafe_code)]
    pub(super) fn new(child: &Child) -> ExitWait {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1;
            // the child is not reaped yet, so its pid still names it.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::pid_t, 0) };
            if fd >= 0 {
                // SAFETY: `fd` is a descriptor the kernel just opened for us alone.
                let pidfd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
                return ExitWait { pidfd: Some(pidfd) };
            }
        }
        let _ = child;
        ExitWait { pidfd: None }
    }

    /// The child's exit status if it exited within `dur` (it is then reaped), else None.
    #[allow(unsafe_code)]
    pub(super) fn wait(&self, child: &mut Child, dur: Duration) -> io::Result<Option<ExitStatus>> {
        let Some(fd) = &self.pidfd else {
            return child.wait_timeout(dur);
        };
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        // Round up: a sub-millisecond rest must not become a busy loop of 0 ms polls.
        let ms = dur.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, count 1.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
        child.try_wait()
    }
}
