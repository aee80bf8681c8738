//! Landlock rulesets ([`super::confine`]): the places a run's rules name ([`places`]), the
//! ruleset made of them ([`build`]: each place opened `O_PATH`, the ruleset's descriptor
//! made, both close-on-exec), and how a thread enters one ([`restrict`]): the child between
//! fork and exec, a thread made for one `posix_spawn` ([`spawn_restricted`]), or a spawner
//! thread once for all the runs it starts (`spawner.rs`).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::OnceLock;

use super::confine::{self, Confinement, Network};

/// What a place a ruleset names is open to (see [`super::confine`]'s table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Rights {
    /// Read files, list directories, execute.
    ReadExec,
    /// Read files, list directories.
    Read,
    /// Read and write files, `ioctl` (the devices of [`confine::DEVICES`]).
    Device,
    /// Every file-system right.
    Write,
}

/// The places `c`'s rules name by path, beyond the system's, for a run of `program`: its own
/// directory (as named and as it really is), then `read_exec`, `read` and `write`; not the
/// held places nor the private `TMPDIR`.
pub(super) fn places(c: &Confinement, program: &Path) -> Vec<(PathBuf, Rights)> {
    program_dirs(program)
        .into_iter()
        .chain(c.read_exec.iter().cloned())
        .map(|p| (p, Rights::ReadExec))
        .chain(c.read.iter().map(|p| (p.clone(), Rights::Read)))
        .chain(c.write.iter().map(|p| (p.clone(), Rights::Write)))
        .collect()
}

/// The ruleset of `c` for a run of `program` on its own, with its private `tmp`: the places
/// of [`places`] that are there (a place that is not, no `/lib32` or a readable tree not
/// built yet, gives nothing), `tmp` and the held places writable.
pub(super) fn build_for(
    c: &Confinement,
    abi: u32,
    program: &Path,
    tmp: Option<&Path>,
) -> Result<OwnedFd, String> {
    let named = places(c, program)
        .into_iter()
        .chain(tmp.map(|t| (t.to_path_buf(), Rights::Write)));
    let mut opened: Vec<(OwnedFd, Rights)> = Vec::new();
    for (path, rights) in named {
        match open_path(&path) {
            Ok(fd) => opened.push((fd, rights)),
            Err(_) => log::debug!("confinement: {} is not there", path.display()),
        }
    }
    let rules = opened
        .iter()
        .map(|(fd, r)| (fd.as_fd(), *r))
        .chain(c.write_held.iter().map(|h| (h.as_fd(), Rights::Write)));
    build(abi, &c.network, rules)
}

/// The ruleset for Landlock ABI `abi` (1 to [`confine::NEWEST_ABI`]): the system's places,
/// then `rules`, and TCP as `network` says.
#[cfg(target_os = "linux")]
pub(super) fn build<'a>(
    abi: u32,
    network: &Network,
    rules: impl IntoIterator<Item = (BorrowedFd<'a>, Rights)>,
) -> Result<OwnedFd, String> {
    use landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope, ABI,
    };
    // A fixed ABI, never above the one this was tested with: the same rights on every newer
    // kernel (ABI::from is the crate's way to name one).
    let v = ABI::from(i32::try_from(abi).unwrap_or(0));
    let all = AccessFs::from_all(v);
    let read_exec = AccessFs::from_read(v);
    let access = |r: Rights| match r {
        Rights::ReadExec => read_exec,
        Rights::Read => read_exec & !AccessFs::Execute,
        Rights::Device => {
            all & (AccessFs::ReadFile
                | AccessFs::WriteFile
                | AccessFs::Truncate
                | AccessFs::IoctlDev)
        }
        Rights::Write => all,
    };
    let e = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(e)?;
    let net = AccessNet::from_all(v);
    let limit_net = *network != Network::Any && abi >= 4;
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
    let system = system_places().iter().map(|(fd, r)| (fd.as_fd(), *r));
    for (fd, rights) in system.chain(rules) {
        created = created
            .add_rule(landlock::PathBeneath::new(fd, access(rights)))
            .map_err(e)?;
    }
    if let (true, Network::Ports(ports)) = (limit_net, network) {
        for &port in ports {
            created = created.add_rule(NetPort::new(port, net)).map_err(e)?;
        }
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| "the kernel made no ruleset".to_owned())
}

#[cfg(not(target_os = "linux"))]
pub(super) fn build<'a>(
    _: u32,
    _: &Network,
    _: impl IntoIterator<Item = (BorrowedFd<'a>, Rights)>,
) -> Result<OwnedFd, String> {
    Err("Landlock is Linux only".into())
}

/// [`confine::SYSTEM_READ_EXEC`], [`confine::SYSTEM_READ`] and [`confine::DEVICES`] (those
/// that exist), opened `O_PATH` once: every ruleset's first rules.
fn system_places() -> &'static [(OwnedFd, Rights)] {
    static PLACES: OnceLock<Vec<(OwnedFd, Rights)>> = OnceLock::new();
    PLACES.get_or_init(|| {
        let kinds = [
            (&confine::SYSTEM_READ_EXEC[..], Rights::ReadExec),
            (&confine::SYSTEM_READ[..], Rights::Read),
            (&confine::DEVICES[..], Rights::Device),
        ];
        kinds
            .into_iter()
            .flat_map(|(paths, kind)| paths.iter().map(move |p| (p, kind)))
            .filter_map(|(p, kind)| open_path(Path::new(p)).ok().map(|fd| (fd, kind)))
            .collect()
    })
}

/// `path` opened `O_PATH` (nothing is opened for reading: no device driver sees it).
pub(super) fn open_path(path: &Path) -> io::Result<OwnedFd> {
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
/// it runs between fork and exec, in the thread of [`spawn_restricted`], and in a spawner.
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
    use super::super::confine::{Mode, Part};
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
        let abi = confine::kernel().used;
        let ruleset = build_for(&c, abi, Path::new("/bin/cat"), None).unwrap();
        let mut cmd = Command::new("/bin/cat");
        cmd.arg(base.join("outside/secret"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = spawn_restricted(&mut cmd, ruleset.as_fd()).unwrap();
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
