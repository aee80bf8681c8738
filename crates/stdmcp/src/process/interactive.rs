//! A long-lived interactive child (a REPL or proof assistant of a session): its own process
//! group, stdin a private pipe, stdout and stderr on ONE pipe (so the merged order is the
//! program's), PDEATHSIG and the watchdog, killed as a group, always reaped.
//!
//! Spawn it from a thread that lives as long as the child, and wait for it there
//! ([`Interactive::wait`]): `PR_SET_PDEATHSIG` fires when the spawning *thread* exits, and that
//! thread owns the child (its `Group`): it alone signals the child's group, when another
//! thread asks it to through a [`Signaller`] (an interrupt, a kill), and it sweeps and reaps.

use std::ffi::OsString;
use std::io::{self, PipeReader};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::Arc;

use super::confine::{Confinement, Report};
use super::group::{Group, Reach};
use super::limits::Limits;
use super::outcome::RunError;
use super::ruleset::{prepare, PrivateTmp};
use super::spawn::{confine, prepare as hooks, spawn_error};
use super::spec::RunSpec;
use super::wake::Wake;
use crate::beneath::Dir;

/// What to run: [`InteractiveSpec::new`], then the fields to change.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct InteractiveSpec {
    /// The program: a path, or a name looked up in `env`'s `PATH`.
    pub program: PathBuf,
    /// Its arguments, passed as they are: no shell.
    pub args: Vec<OsString>,
    /// Working directory; `None` keeps the server's.
    pub cwd: Option<PathBuf>,
    /// The working directory held open, as [`RunSpec::cwd_dir`]: the child starts in it.
    pub cwd_dir: Option<Arc<Dir>>,
    /// The child's ENTIRE environment (nothing is inherited).
    pub env: Vec<(OsString, OsString)>,
    /// Resource limits applied in the child before exec.
    pub limits: Limits,
    /// What the program may reach, enforced by the kernel (Landlock); `None`: not confined.
    pub confine: Option<Confinement>,
}

impl InteractiveSpec {
    /// `program` with no arguments, in the server's working directory, with an empty
    /// environment and no limits.
    pub fn new(program: impl Into<PathBuf>) -> InteractiveSpec {
        InteractiveSpec {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            cwd_dir: None,
            env: Vec::new(),
            limits: Limits::default(),
            confine: None,
        }
    }
}

/// A running interactive child. Dropping it kills its group, sweeps and reaps it.
pub struct Interactive {
    group: Group,
    stdin: Option<ChildStdin>,
    output: Option<PipeReader>,
    /// What the kernel enforces of the spec's confinement.
    confined: Option<Report>,
    /// The program's private TMPDIR, removed after its end (dropped after `group`).
    tmp: Option<PrivateTmp>,
}

impl Interactive {
    /// Starts the program as the leader of a new process group.
    #[allow(clippy::disallowed_methods)] // a spawn point of the runner
    pub fn spawn(spec: &InteractiveSpec) -> Result<Interactive, RunError> {
        let mut confined = prepare(spec.confine.as_ref(), &spec.program)?;
        let (reader, writer) = io::pipe().map_err(RunError::Io)?;
        let writer2 = writer.try_clone().map_err(RunError::Io)?;
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer2));
        if let Some(tmp) = &confined.tmp {
            cmd.env("TMPDIR", &tmp.path);
        }
        hooks(
            &mut cmd,
            spec.cwd.as_deref(),
            spec.cwd_dir.as_deref(),
            spec.limits,
        );
        confine(&mut cmd, &confined);
        let spawned = Group::spawn(&mut cmd, Reach::All, None);
        confined.spawned();
        let mut group = spawned.map_err(|e| {
            let mut run = RunSpec::new(&spec.program);
            run.cwd.clone_from(&spec.cwd);
            spawn_error(&run, e)
        })?;
        // `cmd` holds the write ends until dropped: drop it so EOF comes with the child.
        drop(cmd);
        Ok(Interactive {
            stdin: group.take_stdin(),
            output: Some(reader),
            group,
            confined: confined.report,
            tmp: confined.tmp,
        })
    }

    /// What the kernel enforces of the spec's confinement (`None`: it asked for none).
    pub fn confined(&self) -> Option<&Report> {
        self.confined.as_ref()
    }

    /// The child's pid, also its process group id.
    pub fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// What other threads ask this child's owner for a signal with.
    pub fn signaller(&self) -> Signaller {
        Signaller(self.group.waker())
    }

    /// The child's stdin (once).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// The read end of the child's merged stdout and stderr (once).
    pub fn take_output(&mut self) -> Option<PipeReader> {
        self.output.take()
    }

    /// Blocks until the leader exits, sending the signals its [`Signaller`]s ask for
    /// meanwhile; then kills what is left of its group and everything that carries its marker
    /// (the leader still unreaped), and reaps the leader. Call it on the thread that spawned
    /// the child.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        while !self.group.wait(None, None)? {}
        let status = self.group.end();
        drop(self.tmp.take());
        status
    }
}

/// Asks the owner of an [`Interactive`] child (the thread in [`Interactive::wait`]) to send a
/// signal to the child's process group; cheap to clone, for any thread. The owner sends it at
/// once (it is woken); nothing is sent once the child was reaped, so a signal never reaches a
/// process group whose id was handed to another process since.
#[derive(Clone, Debug)]
pub struct Signaller(Arc<Wake>);

impl Signaller {
    /// Asks for `sig` (an interrupt, SIGKILL…) to the child's process group.
    pub fn send(&self, sig: i32) {
        self.0.ask(sig);
    }
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
