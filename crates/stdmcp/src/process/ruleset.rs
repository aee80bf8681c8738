//! The Landlock ruleset of one run ([`super::confine`]): built in the parent before the spawn
//! ([`prepare`]: the places opened `O_PATH`, the ruleset's descriptor made, both close-on-exec),
//! entered by the child ([`restrict`], between fork and exec) or by the thread that spawns it
//! ([`spawn_restricted`], for `posix_spawn`), and closed in the parent once the child exists.
//! Also the run's private `TMPDIR` ([`PrivateTmp`]), removed after the run's end.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::confine::{self, Confinement, Mode, Network, Report};
use super::outcome::RunError;

/// What a run's confinement needs at its spawn, and what it leaves until its end.
#[derive(Debug, Default)]
pub(super) struct Prepared {
    /// The ruleset to enter (`None`: nothing to enforce).
    ruleset: Option<OwnedFd>,
    /// What is enforced (`None`: the run has no confinement at all).
    pub(super) report: Option<Report>,
    /// The run's private `TMPDIR`, removed when this is dropped.
    pub(super) tmp: Option<PrivateTmp>,
}

impl Prepared {
    /// The ruleset's descriptor, until [`Prepared::spawned`].
    pub(super) fn ruleset(&self) -> Option<BorrowedFd<'_>> {
        self.ruleset.as_ref().map(AsFd::as_fd)
    }

    /// The child exists (or could not be made): the ruleset's descriptor is closed.
    pub(super) fn spawned(&mut self) {
        self.ruleset = None;
    }
}

/// Prepares the confinement `c` (none: nothing) of a run of `program`: its private `TMPDIR`
/// and its ruleset. A [`Mode::Require`] whose rules the kernel cannot enforce in full is
/// refused ([`RunError::Confinement`]); with [`Mode::On`] what cannot be enforced is in the
/// report.
pub(super) fn prepare(c: Option<&Confinement>, program: &Path) -> Result<Prepared, RunError> {
    let Some(c) = c else {
        return Ok(Prepared::default());
    };
    let abi = confine::kernel().used;
    let mut report = Report::of(c, abi);
    let refuse = |report: &Report| RunError::Confinement {
        program: program.to_owned(),
        why: report.shortfall(),
    };
    if c.mode == Mode::Require && !report.missing.is_empty() {
        return Err(refuse(&report));
    }
    let tmp = match c.private_tmp && c.mode != Mode::Off {
        true => PrivateTmp::make(),
        false => None,
    };
    let ruleset = match (c.mode, abi) {
        (Mode::Off, _) | (_, 0) => None,
        _ => match build(c, abi, program, tmp.as_ref().map(|t| t.path.as_path())) {
            Ok(fd) => Some(fd),
            Err(e) => {
                log::warn!("confinement of {}: {e}", program.display());
                report.missing = c.asked();
                report.problem = Some(e);
                if c.mode == Mode::Require {
                    return Err(refuse(&report));
                }
                None
            }
        },
    };
    Ok(Prepared {
        ruleset,
        report: Some(report),
        tmp,
    })
}

/// Empty private `TMPDIR`s left by runs that ended, for the next runs.
static SPARE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
/// How many are kept.
const MAX_SPARE: usize = 64;

/// A run's own temporary directory, `tmp/N` in the server's private directory (mode 0700),
/// made for it or left empty by an earlier run; when dropped (after the run's sweep and
/// reap) removed with everything in it, or kept for the next run if still empty.
#[derive(Debug)]
pub(super) struct PrivateTmp {
    pub(super) path: PathBuf,
}

impl PrivateTmp {
    fn make() -> Option<PrivateTmp> {
        use std::os::unix::fs::DirBuilderExt;
        static NEXT: AtomicU64 = AtomicU64::new(1);
        static PARENT: OnceLock<PathBuf> = OnceLock::new();
        let parent = match PARENT.get() {
            Some(p) => p,
            None => {
                let p = super::private_dir::sub("tmp")?;
                match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => {
                        log::warn!(
                            "cannot make {} ({e}): programs get no writable TMPDIR",
                            p.display()
                        );
                        return None;
                    }
                }
                PARENT.get_or_init(|| p)
            }
        };
        if let Some(path) = crate::sync::lock(&SPARE).pop() {
            return Some(PrivateTmp { path });
        }
        let path = parent.join(NEXT.fetch_add(1, Ordering::Relaxed).to_string());
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => Some(PrivateTmp { path }),
            Err(e) => {
                log::warn!(
                    "cannot make {} ({e}): the program gets no writable TMPDIR",
                    path.display()
                );
                None
            }
        }
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        // Left as it was made (empty, a directory of this user's, mode 0700): kept for the
        // next run, as fresh as a new one (making and removing a directory cost a tenth of
        // a short call). Else removed with everything in it (remove_dir_all follows no
        // symlink a program left there).
        let pristine = std::fs::symlink_metadata(&self.path).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.mode() & 0o7777 == 0o700 && m.uid() == crate::beneath::effective_uid()
        }) && std::fs::read_dir(&self.path).is_ok_and(|mut d| d.next().is_none());
        if pristine {
            let mut spare = crate::sync::lock(&SPARE);
            if spare.len() < MAX_SPARE {
                spare.push(std::mem::take(&mut self.path));
                return;
            }
        }
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            log::debug!("removing {}: {e}", self.path.display());
        }
    }
}

/// The ruleset of `c` for Landlock ABI `abi` (1 to [`confine::NEWEST_ABI`]), with
/// `program`'s own directory and the private `tmp`.
#[cfg(target_os = "linux")]
fn build(c: &Confinement, abi: u32, program: &Path, tmp: Option<&Path>) -> Result<OwnedFd, String> {
    use landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope, ABI,
    };
    // A fixed ABI, never above the one this was tested with: the same rights on every newer
    // kernel (ABI::from is the crate's way to name one).
    let v = ABI::from(i32::try_from(abi).unwrap_or(0));
    let all = AccessFs::from_all(v);
    let read_exec = AccessFs::from_read(v);
    let read = read_exec & !AccessFs::Execute;
    let device =
        all & (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev);
    let e = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(e)?;
    let net = AccessNet::from_all(v);
    let limit_net = c.network != Network::Any && abi >= 4;
    if limit_net {
        ruleset = ruleset.handle_access(net).map_err(e)?;
    }
    if abi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(v)).map_err(e)?;
    }
    // Rules narrower than asked where a place cannot take them (a file: no directory rights).
    let mut created = ruleset
        .create()
        .map_err(e)?
        .set_compatibility(CompatLevel::BestEffort);
    // The system's places, opened once for the server's life.
    for (fd, kind) in system_places() {
        let access = match kind {
            System::ReadExec => read_exec,
            System::Read => read,
            System::Device => device,
        };
        created = created
            .add_rule(landlock::PathBeneath::new(fd.as_fd(), access))
            .map_err(e)?;
    }
    let named = program_dirs(program)
        .into_iter()
        .chain(c.read_exec.iter().cloned())
        .map(|p| (p, read_exec))
        .chain(c.read.iter().map(|p| (p.clone(), read)))
        .chain(
            c.write
                .iter()
                .cloned()
                .chain(tmp.map(Path::to_path_buf))
                .map(|p| (p, all)),
        );
    for (path, access) in named {
        // A place that is not there (no /lib32, a readable tree not built yet) gives nothing.
        let Ok(fd) = open_path(&path) else {
            log::debug!("confinement: {} is not there", path.display());
            continue;
        };
        created = created
            .add_rule(landlock::PathBeneath::new(fd, access))
            .map_err(e)?;
    }
    for held in &c.write_held {
        created = created
            .add_rule(landlock::PathBeneath::new(held.as_fd(), all))
            .map_err(e)?;
    }
    if let (true, Network::Ports(ports)) = (limit_net, &c.network) {
        for &port in ports {
            created = created.add_rule(NetPort::new(port, net)).map_err(e)?;
        }
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| "the kernel made no ruleset".to_owned())
}

#[cfg(not(target_os = "linux"))]
fn build(_: &Confinement, _: u32, _: &Path, _: Option<&Path>) -> Result<OwnedFd, String> {
    Err("Landlock is Linux only".into())
}

/// What a place of the system's is open to.
#[derive(Clone, Copy)]
enum System {
    ReadExec,
    Read,
    Device,
}

/// [`confine::SYSTEM_READ_EXEC`], [`confine::SYSTEM_READ`] and [`confine::DEVICES`] (those
/// that exist), opened `O_PATH` once: every ruleset's first rules.
fn system_places() -> &'static [(OwnedFd, System)] {
    static PLACES: OnceLock<Vec<(OwnedFd, System)>> = OnceLock::new();
    PLACES.get_or_init(|| {
        let kinds = [
            (&confine::SYSTEM_READ_EXEC[..], System::ReadExec),
            (&confine::SYSTEM_READ[..], System::Read),
            (&confine::DEVICES[..], System::Device),
        ];
        kinds
            .into_iter()
            .flat_map(|(paths, kind)| paths.iter().map(move |p| (p, kind)))
            .filter_map(|(p, kind)| open_path(Path::new(p)).ok().map(|fd| (fd, kind)))
            .collect()
    })
}

/// `path` opened `O_PATH` (nothing is opened for reading: no device driver sees it).
fn open_path(path: &Path) -> io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(path)
        .map(OwnedFd::from)
}

/// The directory of `program` as named and as it really is (a symlink's target's).
fn program_dirs(program: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = program
        .parent()
        .map(Path::to_path_buf)
        .into_iter()
        .collect();
    if let Some(real) = std::fs::canonicalize(program)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        if !dirs.contains(&real) {
            dirs.push(real);
        }
    }
    dirs.retain(|d| d.is_absolute());
    dirs
}

/// Enters the ruleset `fd`: `PR_SET_NO_NEW_PRIVS` (so no setuid program regains what the
/// domain takes), then `landlock_restrict_self`. Only these two async-signal-safe system calls:
/// it runs between fork and exec, and in the thread of [`spawn_restricted`].
#[allow(unsafe_code)]
pub(super) fn restrict(fd: RawFd) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with integer arguments; changes only this thread's flags.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: landlock_restrict_self takes a ruleset descriptor and flags (0); it allocates
        // nothing in this process and only restricts the calling thread.
        if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = fd;
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Spawns `cmd` (no pre-exec hook: `posix_spawn`) from a new thread that first enters the
/// ruleset `fd`: the child inherits the domain from the thread that made it, and the thread
/// ends with the spawn (a domain cannot be left).
pub(super) fn spawn_restricted(cmd: &mut Command, fd: BorrowedFd<'_>) -> io::Result<Child> {
    let raw = fd.as_raw_fd();
    std::thread::scope(|s| {
        let thread = std::thread::Builder::new()
            .name("stdmcp-confine".into())
            .stack_size(256 * 1024)
            .spawn_scoped(s, || {
                restrict(raw)?;
                cmd.spawn()
            })?;
        thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the confining thread panicked")))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)] // tests start bare shells
mod tests {
    use super::super::confine::Part;
    use super::*;
    use crate::cancel::CancelToken;
    use crate::process::RunSpec;

    /// A fresh directory with a marker file `secret` in `outside/` and an empty `inside/`.
    fn place(name: &str) -> PathBuf {
        let base =
            std::env::temp_dir().join(format!("stdmcp-ruleset-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::create_dir_all(base.join("inside")).unwrap();
        std::fs::write(base.join("outside/secret"), "MARKER").unwrap();
        base
    }

    fn sh(script: &str, c: Option<Confinement>) -> crate::process::Outcome {
        let mut spec = RunSpec::new("/bin/sh").args(["-c", script]);
        spec.confine = c;
        spec.run(&CancelToken::new()).unwrap()
    }

    #[test]
    fn a_confined_program_reads_and_writes_only_what_it_is_given() {
        if confine::kernel().used < 1 {
            eprintln!("SKIPPED: no Landlock in this kernel");
            return;
        }
        let base = place("fork");
        let mut c = Confinement::new(Mode::On);
        c.write.push(base.join("inside"));
        let script = format!(
            "cat {b}/outside/secret; echo w > {b}/inside/f && echo wrote; echo t > \"$TMPDIR/t\" && echo tmp",
            b = base.display()
        );
        let o = sh(&script, Some(c.clone()));
        let (out, err) = (o.stdout.text(), o.stderr.text());
        assert!(!out.contains("MARKER"), "{out}");
        assert!(err.contains("Permission denied"), "{err}");
        assert!(out.contains("wrote") && out.contains("tmp"), "{out} {err}");
        let report = o.confined.unwrap();
        assert!(report.confined() || !report.missing.contains(&Part::Filesystem));
        // Off: the same script reads the marker.
        c.mode = Mode::Off;
        let o = sh(&script, Some(c));
        assert!(o.stdout.text().contains("MARKER"));
        assert!(!o.confined.unwrap().confined());
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn the_spawning_thread_passes_its_domain_to_a_posix_spawned_child() {
        if confine::kernel().used < 1 {
            eprintln!("SKIPPED: no Landlock in this kernel");
            return;
        }
        let base = place("thread");
        let c = Confinement::new(Mode::On);
        let prepared = prepare(Some(&c), Path::new("/bin/cat")).unwrap();
        let mut cmd = Command::new("/bin/cat");
        cmd.arg(base.join("outside/secret"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = spawn_restricted(&mut cmd, prepared.ruleset().unwrap()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"));
        // This thread was not restricted.
        assert_eq!(
            std::fs::read_to_string(base.join("outside/secret")).unwrap(),
            "MARKER"
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
