//! How the runner's children are started: the command a [`RunSpec`] makes, and what every
//! child gets between fork and exec (its working directory, resource limits, death with the
//! spawning thread, none of the server's descriptors).

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use super::limits::Limits;
use super::outcome::RunError;
use super::ruleset::{restrict, Prepared};
use super::spec::RunSpec;
use crate::beneath::Dir;

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
///
/// [`run`]: super::run
pub fn seal_inherited_fds() {
    cloexec_inherited_fds();
    SEALED.store(true, Ordering::SeqCst);
}

/// How a command is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Start {
    /// With `posix_spawn`: no code runs between fork and exec (a ruleset is entered by the
    /// spawning thread, [`super::ruleset::spawn_restricted`]).
    Fast,
    /// With `fork`, through the pre-exec hooks of [`prepare`].
    Forked,
}

/// The command that starts `spec`'s program (its process group and marker are set by the
/// `Group` that spawns it), and how it is to be started; `watched`: the watchdog runs;
/// `confined`: the run's prepared confinement (its `TMPDIR`, its ruleset).
#[allow(clippy::disallowed_methods)] // a spawn point of the runner
pub(super) fn command(
    spec: &RunSpec,
    watched: bool,
    confined: &Prepared,
) -> Result<(Command, Start), RunError> {
    let mut cmd = if spec.line_buffered {
        let mut cmd = Command::new(find_stdbuf(spec)?);
        cmd.args(["-oL", "-eL", "--"]).arg(resolve_program(spec)?);
        cmd
    } else {
        Command::new(&spec.program)
    };
    cmd.args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(tmp) = &confined.tmp {
        cmd.env("TMPDIR", &tmp.path);
    }
    let held = spec.cwd_dir.as_deref();
    // posix_spawn cannot `fchdir`: a held working directory is named by `/proc/self/fd/N`
    // there (the child's `chdir` follows it to the directory opened); without `/proc` the
    // call takes the fork path, whose hook enters the directory by its descriptor.
    let fast_cwd = match held {
        Some(dir) => dir.proc_path(),
        None => spec.cwd.clone(),
    };
    if spawn_without_hook(spec.limits, watched) && (held.is_none() || fast_cwd.is_some()) {
        if let Some(cwd) = &fast_cwd {
            cmd.current_dir(cwd);
        }
        return Ok((cmd, Start::Fast));
    }
    prepare(&mut cmd, spec.cwd.as_deref(), held, spec.limits);
    confine(&mut cmd, confined);
    Ok((cmd, Start::Forked))
}

/// The program the command of `spec` starts: `stdbuf` for a line-buffered one, else the
/// program as the child would find it (for the confinement's "its own directory").
pub(super) fn program_path(spec: &RunSpec) -> PathBuf {
    if spec.line_buffered {
        return find_stdbuf(spec).unwrap_or_else(|_| spec.program.clone());
    }
    resolve_program(spec).unwrap_or_else(|_| spec.program.clone())
}

/// Enters the prepared ruleset between fork and exec, after every other hook (the working
/// directory, the limits), if there is one.
#[allow(unsafe_code)]
pub(super) fn confine(cmd: &mut Command, confined: &Prepared) {
    if let Some(fd) = confined.ruleset() {
        let fd = fd.as_raw_fd();
        // SAFETY: `restrict` makes two async-signal-safe system calls (prctl,
        // landlock_restrict_self) and allocates nothing. `fd` is the ruleset's descriptor,
        // open until the spawn returns (`Prepared::spawned` closes it after).
        unsafe {
            cmd.pre_exec(move || restrict(fd));
        }
    }
}

/// Whether a call may start its program without the pre-exec hook (see
/// [`seal_inherited_fds`]): the descriptors are sealed, the call has no limits, and the
/// watchdog runs (`watched`).
fn spawn_without_hook(limits: Limits, watched: bool) -> bool {
    SEALED.load(Ordering::SeqCst) && limits.is_empty() && watched
}

/// The child's `PATH` (from `spec.env`), searched for `name` like `execvp` would.
fn on_child_path(spec: &RunSpec, name: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = spec.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v)?;
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The program's path as the child would find it (so that a missing program is a spawn
/// error, not `stdbuf`'s exit code 127).
fn resolve_program(spec: &RunSpec) -> Result<PathBuf, RunError> {
    if spec.program.components().count() > 1 || spec.program.is_absolute() {
        return Ok(spec.program.clone());
    }
    on_child_path(spec, spec.program.as_os_str()).ok_or_else(|| RunError::Spawn {
        program: spec.program.clone(),
        source: io::Error::from(io::ErrorKind::NotFound),
    })
}

fn find_stdbuf(spec: &RunSpec) -> Result<PathBuf, RunError> {
    let fallback = PathBuf::from("/usr/bin/stdbuf");
    match on_child_path(spec, "stdbuf".as_ref()) {
        Some(p) => Ok(p),
        None if fallback.is_file() => Ok(fallback),
        None => Err(RunError::Spawn {
            program: "stdbuf".into(),
            source: io::Error::new(
                io::ErrorKind::NotFound,
                "line-buffered output needs stdbuf (GNU coreutils)",
            ),
        }),
    }
}

/// What every child the runner starts with a spec gets: its working directory, [`harden`],
/// and its resource limits applied between fork and exec. A held working directory (`held`)
/// is entered by its descriptor (`fchdir` between fork and exec: no path, no `/proc`), so the
/// child starts in the directory that was checked whatever its name leads to by then; else
/// the child `chdir`s to `cwd`.
#[allow(unsafe_code)]
pub(super) fn prepare(cmd: &mut Command, cwd: Option<&Path>, held: Option<&Dir>, limits: Limits) {
    harden(cmd);
    match (held, cwd) {
        (Some(dir), _) => {
            let fd = dir.as_raw_fd();
            // SAFETY: the closure runs between fork and exec and only calls fchdir (an
            // async-signal-safe syscall) and reads errno; it allocates nothing. `fd` is the
            // held directory's descriptor, open in the child until exec (`Dir` lives in the
            // spec, borrowed for the spawn).
            unsafe {
                cmd.pre_exec(move || match libc::fchdir(fd) {
                    0 => Ok(()),
                    _ => Err(io::Error::last_os_error()),
                });
            }
        }
        (None, Some(cwd)) => {
            cmd.current_dir(cwd);
        }
        (None, None) => {}
    }
    if !limits.is_empty() {
        // SAFETY: `Limits::apply` only makes async-signal-safe calls (getrlimit,
        // setrlimit, setpriority) and allocates nothing.
        unsafe {
            cmd.pre_exec(move || limits.apply());
        }
    }
}

/// What every child gets between fork and exec: death with the spawning thread
/// (`PR_SET_PDEATHSIG`) and none of the server's file descriptors.
#[allow(unsafe_code)]
pub(super) fn harden(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and only makes
    // async-signal-safe calls (prctl, getppid, _exit, syscall, fcntl); it
    // allocates nothing and takes no locks.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_death_signal(parent);
            cloexec_inherited_fds();
            Ok(())
        });
    }
}

pub(super) fn spawn_error(spec: &RunSpec, source: io::Error) -> RunError {
    let source = match &spec.cwd {
        Some(cwd) if !cwd.is_dir() => io::Error::new(
            source.kind(),
            format!(
                "working directory {} is not accessible: {source}",
                cwd.display()
            ),
        ),
        _ => source,
    };
    RunError::Spawn {
        program: spec.program.clone(),
        source,
    }
}

/// In the forked child: die with SIGKILL when the parent (thread) dies, and
/// bail out if the parent already died before the prctl took effect.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_parent_death_signal(parent: libc::pid_t) {
    // SAFETY: prctl/getppid/_exit are async-signal-safe syscalls.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn set_parent_death_signal(_parent: libc::pid_t) {}

/// Marks every fd >= 3 close-on-exec (not closed: in a forked child, std's exec-error pipe
/// must survive until exec). Async-signal-safe.
#[allow(unsafe_code)]
pub(super) fn cloexec_inherited_fds() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: raw close_range syscall with the CLOEXEC flag; only flips
        // fd flags, async-signal-safe.
        let r = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if r == 0 {
            return;
        }
    }
    for fd in 3..1024 {
        // SAFETY: fcntl on a possibly-closed fd just fails with EBADF.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn spawn_error_messages() {
        let e = spawn_error(
            &RunSpec::new("/nope"),
            io::Error::from(io::ErrorKind::NotFound),
        );
        assert!(e
            .to_string()
            .starts_with("could not start program `/nope`: not found"));
        let mut spec = RunSpec::new("true");
        spec.cwd = Some("/definitely/not/a/dir".into());
        let e = spawn_error(&spec, io::Error::from(io::ErrorKind::NotFound));
        assert!(e.to_string().contains("working directory"), "{e}");
        assert!(std::error::Error::source(&e).is_some());
    }
}
