//! Files beneath a root, opened through directory descriptors: what the server itself reads
//! (log files, kept outputs) is what was checked, whatever is renamed meanwhile.
//!
//! A path check (the `stdmcp` command's `manifest::confine`, or [`std::fs::canonicalize`] and a
//! prefix test) resolves a name to a real place inside its root,
//! but a second `open` of the same name may land elsewhere: whoever can rename entries inside
//! the root (a sandboxed program allowed to write only there) can put a symlink or a FIFO in
//! the name's place between the check and the open. So the server opens nothing by name:
//!
//! * [`Dir::open`] opens a root the server was configured with (or created itself), once.
//! * [`Dir::file`] opens a regular file beneath it by a relative path of plain components:
//!   with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` where the
//!   kernel has it (Linux 5.6), else by a walk that opens one component at a time with
//!   `openat(O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC)` from the root's descriptor. The last
//!   component is opened `O_PATH | O_NOFOLLOW` first, which runs no driver's `open` and
//!   blocks on nothing, and `fstat`ed: anything but a regular file (a FIFO, a device, a
//!   socket, a symlink, a directory) is refused without ever being opened. The regular file is
//!   then opened for reading through `/proc/self/fd/N` (the inode checked, not its name),
//!   `O_NONBLOCK | O_NOCTTY`, and `fstat`ed again. The caller reads only through the [`File`]
//!   it gets, and the [`std::fs::Metadata`] is that file's.
//!
//!   Without `/proc` the file is opened by its name a second time (`O_NOFOLLOW | O_NONBLOCK
//!   | O_NOCTTY`) and refused unless it is the inode checked. Between the two opens a
//!   FIFO swapped in cannot block (`O_NONBLOCK`) nor a terminal become the server's controlling
//!   tty (`O_NOCTTY`); a device node swapped in would have its driver's `open` run once (some
//!   have side effects: a tape rewinds, a watchdog arms) before it is refused. Putting one
//!   there takes `mknod` (privileged) or a hard link to a device node, which
//!   `fs.protected_hardlinks` refuses to anyone who does not own it.
//! * [`Dir::dir`] opens a directory the same way; [`Dir::names`] lists one through its own
//!   descriptor (`fdopendir`), never by path, at most [`MAX_NAMES`] names (the rest counted:
//!   [`Names::left_out`]). A child started in a [`Dir`] ([`crate::process::RunSpec::cwd_dir`])
//!   enters it by its descriptor (`fchdir` between fork and exec), or by [`Dir::proc_path`]
//!   where it is started with `posix_spawn`.
//! * [`Dir::create`] creates a new file beneath it (`O_CREAT | O_EXCL | O_NOFOLLOW`: never
//!   through a symlink, never an existing file).
//! * [`Dir::replace`] replaces a regular file beneath the root atomically: a new file is
//!   written next to it (`openat(O_CREAT | O_EXCL | O_NOFOLLOW)` through the directory's
//!   descriptor), `fsync`ed, renamed over the old one with `renameat`, and the directory is
//!   `fsync`ed. A reader sees the old contents or the new, never a mix, and a symlink put in
//!   the name's place is replaced, never followed. The new file keeps the old one's
//!   permission bits.
//!
//! Paths given to these functions are relative, made of plain components only (`.` is
//! skipped; `..`, an absolute path or an empty component is refused): they name the place a
//! check already resolved (its symlinks followed, see [`beneath`]), so any symlink met on the
//! way was put there after the check, and refusing it is the point. Nothing here ever goes
//! above the root's descriptor.
//!
//! A caller's name goes through the path check first, then the place it resolved is opened
//! beneath the root (the `log` tool, the proof files' cursor):
//!
//! ```no_run
//! use std::path::Path;
//! use stdmcp::beneath::{beneath, Dir};
//!
//! let root = Path::new("/srv/proofs"); // canonical, as the manifest's roots are
//! let place = root.join("thy/fooScript.sml").canonicalize()?; // the path check
//! let rel = beneath(root, &place).ok_or("outside")?;
//! let dir = Dir::open(root)?;
//! let (file, meta) = dir.file(rel)?; // a regular file, read only through `file`
//! dir.replace(rel, b"new contents", 0o644)?; // readers see old or new, never a mix
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Linux only (`O_PATH`, `openat2`, `/proc/self/fd`), like the runner.
//!
//! Reading through the descriptor is the caller's business; the server's reads are bounded
//! and stop between buffers when the call is cancelled or its deadline passes (the `stdmcp`
//! command's `spool::Stop`).

use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Metadata};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

/// Most names [`Dir::names`] returns.
pub const MAX_NAMES: usize = 65_536;

/// The names of a directory, as [`Dir::names`] reads them.
#[derive(Debug, Default)]
pub struct Names {
    /// At most [`MAX_NAMES`] names (not `.` and `..`), unsorted.
    pub names: Vec<OsString>,
    /// How many more names the directory held: counted, not kept.
    pub left_out: usize,
}

/// `openat2` is missing (ENOSYS, or refused by a seccomp filter): walk instead.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// An open directory: a root, or a directory found beneath one.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

/// The path `path` relative to `root`, when `path` lies inside it (both resolved already, as
/// a path check gives them): what [`Dir`]'s methods take.
pub fn beneath<'a>(root: &Path, path: &'a Path) -> Option<&'a Path> {
    path.strip_prefix(root).ok()
}

fn refused(kind: io::ErrorKind, what: &Path, why: &str) -> io::Error {
    io::Error::new(kind, format!("{}: {why}", what.display()))
}

/// The plain components of `rel`, as C strings.
fn components(rel: &Path) -> io::Result<Vec<CString>> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(n) => out.push(
                CString::new(n.as_bytes())
                    .map_err(|_| refused(io::ErrorKind::InvalidInput, rel, "contains NUL"))?,
            ),
            _ => {
                return Err(refused(
                    io::ErrorKind::InvalidInput,
                    rel,
                    "not a plain relative path (no `..`, not absolute)",
                ))
            }
        }
    }
    Ok(out)
}

/// A clearer error for what a swapped-in entry makes the kernel say.
fn explain(e: io::Error, rel: &Path) -> io::Error {
    match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::EXDEV) => refused(
            io::ErrorKind::PermissionDenied,
            rel,
            "a symbolic link is in the way (refused: only the checked place is opened)",
        ),
        Some(libc::ENOTDIR) => refused(io::ErrorKind::NotADirectory, rel, "not a directory"),
        Some(libc::ENOENT) => refused(io::ErrorKind::NotFound, rel, "does not exist"),
        _ => refused(e.kind(), rel, &e.to_string()),
    }
}

impl std::os::fd::AsRawFd for Dir {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Dir {
    /// Opens the directory `path` itself, a place the server was configured with or created
    /// (symlinks in `path` are followed: it is not a caller's name).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| refused(io::ErrorKind::InvalidInput, path, "contains NUL"))?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NONBLOCK;
        openat(libc::AT_FDCWD, &c, flags).map(|fd| Dir { fd })
    }

    /// Opens the directory `path`, which must be the current user's, not a symlink, and
    /// closed to everyone else (mode `0700` or stricter): a private directory of the server.
    pub fn open_private(path: &Path) -> io::Result<Dir> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| refused(io::ErrorKind::InvalidInput, path, "contains NUL"))?;
        let flags = libc::O_RDONLY
            | libc::O_DIRECTORY
            | libc::O_NOFOLLOW
            | libc::O_CLOEXEC
            | libc::O_NONBLOCK;
        let dir = Dir {
            fd: openat(libc::AT_FDCWD, &c, flags).map_err(|e| explain(e, path))?,
        };
        let m = dir.metadata()?;
        if m.uid() != effective_uid() || m.mode() & 0o077 != 0 {
            return Err(refused(
                io::ErrorKind::PermissionDenied,
                path,
                "not a private directory of this user (owner or mode changed)",
            ));
        }
        Ok(dir)
    }

    /// The directory's own metadata (`fstat`).
    pub fn metadata(&self) -> io::Result<Metadata> {
        self.dup_file()?.metadata()
    }

    fn dup_file(&self) -> io::Result<File> {
        Ok(File::from(self.fd.try_clone()?))
    }

    /// Opens `rel` beneath this directory: every component a real directory, the last one
    /// opened with `last` (plus `O_NOFOLLOW | O_CLOEXEC`).
    fn open_beneath(&self, rel: &Path, last: libc::c_int) -> io::Result<OwnedFd> {
        let parts = components(rel)?;
        let last = last | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        if parts.is_empty() {
            // The directory itself, opened anew (its own offset, its own flags).
            return openat(self.fd.as_raw_fd(), c".", last).map_err(|e| explain(e, rel));
        }
        if !NO_OPENAT2.load(Ordering::Relaxed) && !tests_walk() {
            let joined = parts
                .iter()
                .map(|c| c.as_bytes())
                .collect::<Vec<_>>()
                .join(&b'/');
            let c = CString::new(joined)
                .map_err(|_| refused(io::ErrorKind::InvalidInput, rel, "contains NUL"))?;
            match openat2(self.fd.as_raw_fd(), &c, last) {
                Ok(fd) => return Ok(fd),
                Err(e) if openat2_missing(&e) => NO_OPENAT2.store(true, Ordering::Relaxed),
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {}
                Err(e) => return Err(explain(e, rel)),
            }
        }
        self.walk(&parts, last).map_err(|e| explain(e, rel))
    }

    /// The walk: one `openat` per component, each directory held by its descriptor.
    fn walk(&self, parts: &[CString], last: libc::c_int) -> io::Result<OwnedFd> {
        let step = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let mut held: Option<OwnedFd> = None;
        for (i, part) in parts.iter().enumerate() {
            let at = held.as_ref().unwrap_or(&self.fd).as_raw_fd();
            let flags = if i + 1 == parts.len() { last } else { step };
            held = Some(openat(at, part, flags).map_err(|e| {
                // `O_NOFOLLOW | O_DIRECTORY` says ENOTDIR for a symlink: say what it was.
                let link = e.raw_os_error() == Some(libc::ENOTDIR)
                    && openat(at, part, libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
                        .and_then(|fd| File::from(fd).metadata())
                        .is_ok_and(|m| m.is_symlink());
                match link {
                    true => io::Error::from_raw_os_error(libc::ELOOP),
                    false => e,
                }
            })?);
        }
        held.ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    /// Opens the regular file `rel` beneath this directory for reading, with its metadata.
    /// Anything else there (a symlink on the way or at the end, a FIFO, a device, a socket,
    /// a directory) is refused without blocking.
    ///
    /// The entry is first opened `O_PATH` (which opens nothing: no device driver, no FIFO
    /// sees it) and `fstat`ed; only a regular file is then opened for reading, through
    /// `/proc/self/fd/N` (the very inode checked, no name looked up again). Without `/proc`
    /// it is opened by its name again (`O_NONBLOCK | O_NOCTTY`) and refused unless it is the
    /// same inode, still a regular file: see the module docs for what that leaves.
    pub fn file(&self, rel: &Path) -> io::Result<(File, Metadata)> {
        let not_regular = |m: &Metadata| {
            let why = match m.is_symlink() {
                true => "a symbolic link is in the way (refused: only the checked place is opened)",
                false => "not a regular file",
            };
            refused(io::ErrorKind::InvalidInput, rel, why)
        };
        let path = File::from(self.open_beneath(rel, libc::O_PATH)?);
        let checked = path.metadata()?;
        if !checked.is_file() {
            return Err(not_regular(&checked));
        }
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        let proc = CString::new(format!("/proc/self/fd/{}", path.as_raw_fd()))
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let file = match openat(libc::AT_FDCWD, &proc, flags) {
            Ok(fd) => File::from(fd),
            // No `/proc` (an empty root, a chroot): by name again, checked below.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                File::from(self.open_beneath(rel, flags)?)
            }
            Err(e) => return Err(explain(e, rel)),
        };
        let m = file.metadata()?;
        if !m.is_file() || (m.dev(), m.ino()) != (checked.dev(), checked.ino()) {
            return Err(refused(
                io::ErrorKind::InvalidInput,
                rel,
                "replaced while it was opened (refused: only the checked file is read)",
            ));
        }
        Ok((file, m))
    }

    /// Opens the directory `rel` beneath this one (`.` or an empty path: this one, anew).
    pub fn dir(&self, rel: &Path) -> io::Result<Dir> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NONBLOCK;
        Ok(Dir {
            fd: self.open_beneath(rel, flags)?,
        })
    }

    /// Opens `rel` beneath this directory `O_PATH`, whatever it is (nothing is opened for
    /// reading or writing: no device driver, no FIFO sees it): a handle on the very place
    /// checked, such as a Landlock rule takes. A symlink at the end is the symlink itself.
    pub fn place(&self, rel: &Path) -> io::Result<OwnedFd> {
        self.open_beneath(rel, libc::O_PATH)
    }

    /// A path naming this very directory while it is open (`/proc/self/fd/N`), to start a
    /// child in where no code can run between fork and exec (`posix_spawn`): the child's
    /// `chdir` (where the descriptor is inherited and `/proc/self` is the child) follows it to
    /// the directory opened, whatever was renamed since. `None` without `/proc` (an empty
    /// root, a chroot): then the runner enters the directory with `fchdir` between fork and
    /// exec instead (see [`crate::process::RunSpec::cwd_dir`]).
    pub fn proc_path(&self) -> Option<std::path::PathBuf> {
        let p = std::path::PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()));
        p.is_dir().then_some(p)
    }

    /// The names in this directory (not `.` and `..`), unsorted, at most [`MAX_NAMES`], and
    /// how many more it held ([`Names::left_out`]: the rest is counted, never kept); read
    /// through a descriptor of its own.
    pub fn names(&self) -> io::Result<Names> {
        self.names_at_most(MAX_NAMES)
    }

    fn names_at_most(&self, max: usize) -> io::Result<Names> {
        let fd = openat(
            self.fd.as_raw_fd(),
            c".",
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )?;
        let (names, left_out) = read_names(fd, max)?;
        Ok(Names { names, left_out })
    }

    /// The directory `rel` is in (beneath this one, opened) and its last name (as a C string too).
    fn parent_of<'r>(&self, rel: &'r Path) -> io::Result<(Dir, &'r OsStr, CString)> {
        let name = rel
            .file_name()
            .ok_or_else(|| refused(io::ErrorKind::InvalidInput, rel, "names no file"))?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        let dir = self.dir(parent)?;
        let c_name = CString::new(name.as_bytes())
            .map_err(|_| refused(io::ErrorKind::InvalidInput, rel, "contains NUL"))?;
        Ok((dir, name, c_name))
    }

    /// Creates the new file `rel` beneath this directory, for appending, with `mode` (less
    /// the umask): refused if anything (a symlink, a FIFO) already has the name.
    pub fn create(&self, rel: &Path, mode: u32) -> io::Result<File> {
        let (dir, _, c_name) = self.parent_of(rel)?;
        let flags = libc::O_WRONLY
            | libc::O_APPEND
            | libc::O_CREAT
            | libc::O_EXCL
            | libc::O_NOFOLLOW
            | libc::O_CLOEXEC;
        openat_mode(dir.fd.as_raw_fd(), &c_name, flags, mode).map(File::from)
    }

    /// Replaces the regular file `rel` beneath this directory (or creates it) with `data`,
    /// atomically: a temporary file in the same directory, written, `fsync`ed, renamed over
    /// `rel` (`renameat`), then the directory `fsync`ed. An existing `rel` that is not a
    /// regular file (a directory, a FIFO) is refused; a symlink there is replaced, not
    /// followed. The new file keeps the permission bits of the file it replaces; a new file
    /// (or one in a symlink's place) has `mode` (less the umask). Once the rename is done the
    /// replace has succeeded: a failed `fsync` of the directory after it is logged, not
    /// returned.
    pub fn replace(&self, rel: &Path, data: &[u8], mode: u32) -> io::Result<()> {
        let (dir, name, c_name) = self.parent_of(rel)?;
        // An existing regular file keeps its permission bits (set on the descriptor, so the
        // umask does not narrow them); a new file or a replaced symlink gets `mode`.
        let mut kept = None;
        if let Some(m) = stat_nofollow(dir.fd.as_raw_fd(), &c_name)? {
            if m.is_file() {
                kept = Some(m.mode() & 0o7777);
            } else if !m.is_symlink() {
                return Err(refused(
                    io::ErrorKind::InvalidInput,
                    rel,
                    "not a regular file",
                ));
            }
        }
        let (tmp, mut file) = dir.create_temp(name, mode)?;
        let written = kept
            .map_or(Ok(()), |m| {
                file.set_permissions(std::fs::Permissions::from_mode(m))
            })
            .and_then(|()| file.write_all(data))
            .and_then(|()| file.sync_all())
            .and_then(|()| rename(dir.fd.as_raw_fd(), &tmp, &c_name));
        if let Err(e) = written {
            unlink(dir.fd.as_raw_fd(), &tmp);
            return Err(refused(e.kind(), rel, &e.to_string()));
        }
        // Replaced: the new contents are what the name gives from now on. A failed `fsync` of
        // the directory only means the rename may not survive a crash of the machine, which
        // the caller cannot undo; it is logged, not reported as a failed replace.
        if let Err(e) = dir.sync() {
            log::warn!(
                "{}: replaced, but syncing its directory failed (the change may not survive a crash): {e}",
                rel.display()
            );
        }
        Ok(())
    }

    /// `fsync` of the directory itself.
    fn sync(&self) -> io::Result<()> {
        #[cfg(test)]
        if FAIL_DIR_SYNC.with(std::cell::Cell::get) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        self.dup_file()?.sync_all()
    }

    /// Creates `.NAME.XXXXXXXX.tmp` (random, exclusive, never through a symlink).
    fn create_temp(&self, name: &OsStr, mode: u32) -> io::Result<(CString, File)> {
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        loop {
            let mut r = [0u8; 6];
            crate::random::fill(&mut r)?;
            let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
            let mut tmp = b".".to_vec();
            tmp.extend_from_slice(name.as_bytes());
            tmp.extend_from_slice(format!(".{hex}.tmp").as_bytes());
            let tmp =
                CString::new(tmp).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            match openat_mode(self.fd.as_raw_fd(), &tmp, flags, mode) {
                Ok(fd) => return Ok((tmp, File::from(fd))),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Tests set it to take the walk where the kernel has `openat2`.
    static WALK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
thread_local! {
    /// Tests set it to make the directory's `fsync` fail after a replace's rename.
    static FAIL_DIR_SYNC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn tests_walk() -> bool {
    WALK.with(std::cell::Cell::get)
}

#[cfg(not(test))]
fn tests_walk() -> bool {
    false
}

mod sys;
pub(crate) use sys::effective_uid;
use sys::{
    openat, openat2, openat2_missing, openat_mode, read_names, rename, stat_nofollow, unlink,
};

#[cfg(test)]
mod tests;
