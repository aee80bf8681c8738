//! A long-lived interactive child (a REPL or proof assistant of a session): its own process
//! group, stdin a private pipe, stdout and stderr on ONE pipe (so the merged order is the
//! program's), PDEATHSIG and the watchdog, killed as a group, always reaped.
//!
//! Spawn it from a thread that lives as long as the child: `PR_SET_PDEATHSIG` fires when
//! the spawning *thread* exits.

use std::ffi::OsString;
use std::io::{self, PipeReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};

use super::{orphans, prepare, signal_group, Limits, RunError, RunSpec};
use crate::reaper;

/// What to run.
#[derive(Clone, Debug)]
pub struct InteractiveSpec {
    /// The program: a path, or a name looked up in `env`'s `PATH`.
    pub program: PathBuf,
    /// Its arguments, passed as they are: no shell.
    pub args: Vec<OsString>,
    /// Working directory; `None` keeps the server's.
    pub cwd: Option<PathBuf>,
    /// The child's ENTIRE environment (nothing is inherited).
    pub env: Vec<(OsString, OsString)>,
    /// Resource limits applied in the child before exec.
    pub limits: Limits,
}

/// A running interactive child. Dropping it kills its group and reaps it.
pub struct Interactive {
    child: Child,
    stdin: Option<ChildStdin>,
    output: Option<PipeReader>,
    _group: reaper::GroupGuard,
    /// The `STDMCP_CALL` marker its processes carry (see [`orphans`]).
    marker: String,
    reaped: bool,
}

impl Interactive {
    /// Starts the program as the leader of a new process group.
    #[allow(clippy::disallowed_methods)] // a spawn point of the runner
    pub fn spawn(spec: &InteractiveSpec) -> Result<Interactive, RunError> {
        let (reader, writer) = io::pipe().map_err(RunError::Io)?;
        let writer2 = writer.try_clone().map_err(RunError::Io)?;
        orphans::become_subreaper();
        let marker = orphans::new_marker();
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .env(orphans::MARKER, &marker)
            .stdin(Stdio::piped())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer2))
            .process_group(0);
        prepare(&mut cmd, spec.cwd.as_deref(), spec.limits);
        let mut child = cmd.spawn().map_err(|e| {
            let mut run = RunSpec::new(&spec.program);
            run.cwd.clone_from(&spec.cwd);
            super::spawn_error(&run, e)
        })?;
        // `cmd` holds the write ends until dropped: drop it so EOF comes with the child.
        drop(cmd);
        let group = reaper::track(child.id() as libc::pid_t);
        Ok(Interactive {
            stdin: child.stdin.take(),
            output: Some(reader),
            child,
            _group: group,
            marker,
            reaped: false,
        })
    }

    /// The child's pid, also its process group id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child's stdin (once).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// The read end of the child's merged stdout and stderr (once).
    pub fn take_output(&mut self) -> Option<PipeReader> {
        self.output.take()
    }

    /// Blocks until the leader exits, then kills what is left of its group. Call it on the
    /// thread that spawned the child.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.child.wait()?;
        // Kill and reap what is left: its group, and whatever left the group but carries
        // the session's marker (daemons, `setsid` children).
        orphans::sweep(self.child.id() as libc::pid_t, &self.marker);
        self.reaped = true;
        Ok(status)
    }
}

impl Drop for Interactive {
    fn drop(&mut self) {
        if !self.reaped {
            signal_group(self.child.id() as libc::pid_t, libc::SIGKILL);
            let _ = self.child.wait();
            orphans::sweep(self.child.id() as libc::pid_t, &self.marker);
        }
    }
}

/// Sends `sig` to the group `pgid` (a session's process group).
pub fn signal(pgid: u32, sig: i32) {
    signal_group(pgid as libc::pid_t, sig);
}

/// "exited with code 1", "killed by SIGKILL (perhaps out of memory)", ….
pub fn describe_exit(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with code {c}"),
        (None, Some(libc::SIGKILL)) => "killed (SIGKILL), perhaps out of memory".into(),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "ended".into(),
    }
}
