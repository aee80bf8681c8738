//! A long-lived child that leads its own process group: what [`super::Interactive`] and
//! [`super::ServerProcess`] share. It carries a fresh call marker (see `orphans`), is
//! registered with the watchdog, and is always reaped: after it exits, [`Leader::wait`]
//! sweeps what is left of its group and whatever carries its marker; a leader dropped before
//! that is killed with its group first.

use std::io;
use std::process::{Child, Command, ExitStatus};

use super::{orphans, signal_group};
use crate::reaper;

/// A running group leader. Dropping it kills its group, reaps it and sweeps.
pub(super) struct Leader {
    pub child: Child,
    _group: reaper::GroupGuard,
    /// Unregistered after `Drop::drop` reaped the child.
    _owned: super::owned::Owned,
    marker: String,
    reaped: bool,
}

impl Leader {
    /// Spawns `cmd` (its stdio set by the caller) as the leader of a new process group,
    /// with a fresh marker in its environment. Call it on a thread that lives as long as the
    /// child: `PR_SET_PDEATHSIG` follows the spawning thread.
    pub(super) fn spawn(cmd: &mut Command) -> io::Result<Leader> {
        use std::os::unix::process::CommandExt;
        orphans::become_subreaper();
        crate::reaper::ensure_started();
        let marker = orphans::new_marker();
        cmd.env(orphans::MARKER, &marker).process_group(0);
        let (child, owned) = super::owned::spawn(cmd)?;
        let group = reaper::track(child.id() as libc::pid_t);
        Ok(Leader {
            child,
            _group: group,
            _owned: owned,
            marker,
            reaped: false,
        })
    }

    /// The leader's pid, also its process group id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn pgid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// Blocks until the leader exits, then kills and reaps what is left.
    pub(super) fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.child.wait()?;
        self.sweep();
        Ok(status)
    }

    /// After the leader was reaped: whatever is left of its group, and whatever left the
    /// group but carries the marker (daemons, `setsid` children), is killed and reaped.
    pub(super) fn sweep(&mut self) {
        if !self.reaped {
            // Long-lived (a session, a server): every process is read.
            orphans::sweep(self.pgid(), &self.marker, None);
            self.reaped = true;
        }
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        if !self.reaped {
            signal_group(self.pgid(), libc::SIGKILL);
            let _ = self.child.wait();
            self.sweep();
        }
    }
}
