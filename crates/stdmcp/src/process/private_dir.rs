//! The server's private directory: where the pending `onCancel` commands ([`super::on_cancel`])
//! live, as `on-cancel/` inside it, and what else the server keeps for itself (the `stdmcp`
//! command's output spool, as `spool/`).
//!
//! Its name cannot be guessed, and no other user can have made it first: it is
//! `$TMPDIR/stdmcp-<24 hex digits from getrandom>`, created with mode 0700 by `mkdir` (which
//! fails if the name exists: then another name is drawn, as `mkdtemp` does). The name is
//! published nowhere (not on a command line, not in an environment): the watchdog
//! (`watchdog.rs`) learns it through its private stdin pipe, and removes the directory
//! (after running what `on-cancel/` holds) when the server is gone. Whoever lists a shared
//! `/tmp` sees the directory once it exists, and can do nothing with it.
//!
//! `TMPDIR` is read once, at start ([`tmpdir`]): an empty one counts as unset (`/tmp`), and a
//! relative one is made absolute (against the working directory then): the watchdog runs in
//! `/`, and an empty name would otherwise mean the server's working directory. The binary
//! then keeps the private directory out of the manifest's roots ([`keep_out_of`]): a program
//! allowed to write in a root could otherwise put a file in `on-cancel/` that the watchdog
//! runs after the server is killed.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// How many names are drawn before giving up (each is taken only if someone made it first).
const ATTEMPTS: usize = 16;
/// Where private directories go when `TMPDIR` is unset, empty, or inside a root.
const FALLBACK: &str = "/tmp";

/// `$TMPDIR` as the server was started with, read once: unset or empty is `/tmp`, a relative
/// one is made absolute.
pub fn tmpdir() -> &'static Path {
    static GIVEN: OnceLock<PathBuf> = OnceLock::new();
    GIVEN.get_or_init(|| absolute(given(std::env::var_os("TMPDIR"))))
}

/// The value of `TMPDIR` as a directory: an empty one is unset.
fn given(var: Option<std::ffi::OsString>) -> PathBuf {
    match var {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from(FALLBACK),
    }
}

static ROOT: OnceLock<PathBuf> = OnceLock::new();

/// Where the private directory is made: [`tmpdir`], unless [`keep_out_of`] moved it to `/tmp`.
pub(super) fn temp_root() -> &'static Path {
    ROOT.get_or_init(|| tmpdir().to_owned())
}

/// Keeps the private directory out of `roots` (the manifest's roots and the places its
/// confined programs may write, canonical): a `TMPDIR` inside one of them is not used for it,
/// `/tmp` is, or the user's cache directory (logged). Called by the binary before it
/// serves; a library user that never calls it gets [`tmpdir`].
pub fn keep_out_of<'a>(roots: impl IntoIterator<Item = &'a Path>) {
    let roots: Vec<&Path> = roots.into_iter().collect();
    let chosen = outside(tmpdir(), &roots);
    if ROOT.get_or_init(|| chosen.clone()) != &chosen {
        log::warn!(
            "the private directory's place was chosen before the roots were known: {}",
            temp_root().display()
        );
    }
}

/// `tmp`, or the first of `/tmp` and the user's cache directory ([`cache_dir`]) that lies in
/// none of `roots`, when `tmp` lies inside one of them.
fn outside(tmp: &Path, roots: &[&Path]) -> PathBuf {
    let within = |dir: &Path| {
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
        roots
            .iter()
            .find(|r| dir.starts_with(r))
            .map(|r| r.display().to_string())
    };
    let Some(root) = within(tmp) else {
        return tmp.to_owned();
    };
    for alt in [Some(PathBuf::from(FALLBACK)), cache_dir()]
        .into_iter()
        .flatten()
    {
        if within(&alt).is_none() {
            log::warn!(
                "TMPDIR {} is inside the root {root} (a root or a place programs may write): the \
                 server's private directory (output spool, onCancel commands) is made in {} \
                 instead, out of their reach",
                tmp.display(),
                alt.display()
            );
            return alt;
        }
    }
    log::warn!(
        "TMPDIR {} is inside the root {root}, and so are {FALLBACK} and the cache directory: the \
         server's private directory is made in TMPDIR all the same, where a program allowed \
         to write there could put onCancel commands that the watchdog runs",
        tmp.display()
    );
    tmp.to_owned()
}

/// `$XDG_CACHE_HOME/stdmcp` (or `~/.cache/stdmcp`), made (mode 0700) if needed: the last
/// place for the private directory when `TMPDIR` and `/tmp` are both places programs may
/// write (a root, a confined program's `writable` entry).
fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    let dir = base.join("stdmcp");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .ok()?;
    Some(dir)
}

/// `dir` made absolute against the working directory (as it is, if that cannot be read).
fn absolute(dir: PathBuf) -> PathBuf {
    if dir.is_absolute() {
        return dir;
    }
    match std::env::current_dir() {
        Ok(cwd) => cwd.join(dir),
        Err(e) => {
            log::warn!(
                "TMPDIR {} is relative and the working directory unknown ({e})",
                dir.display()
            );
            dir
        }
    }
}

static DIR: OnceLock<PathBuf> = OnceLock::new();
/// Held while a directory is being made, so that two threads make one.
static MAKING: Mutex<()> = Mutex::new(());

/// The private directory, made on first use; `None` if it cannot be made (logged; the
/// next use tries again).
pub(super) fn get() -> Option<&'static Path> {
    try_get().ok()
}

/// The private directory, made on first use, or why it cannot be made now (logged; the next
/// use tries again: a full disk or a lack of descriptors may be over by then, [`passing`]).
pub fn try_get() -> io::Result<&'static Path> {
    if let Some(d) = DIR.get() {
        return Ok(d);
    }
    let _making = crate::sync::lock(&MAKING);
    if let Some(d) = DIR.get() {
        return Ok(d);
    }
    match make(temp_root()) {
        Ok(d) => Ok(DIR.get_or_init(|| d)),
        Err(e) => {
            log::warn!(
                "cannot create a private directory in {} ({e}): cut outputs are not kept and \
                 onCancel commands do not run if the server is killed{}",
                temp_root().display(),
                if passing(&e) {
                    " (a later call tries again)"
                } else {
                    ""
                }
            );
            Err(e)
        }
    }
}

/// An error in making a directory or file that may be gone at the next try: the disk or the
/// user's quota is full, or the process or the system is out of descriptors.
pub fn passing(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC | libc::EDQUOT | libc::EMFILE | libc::ENFILE | libc::ENOMEM)
    )
}

/// The private directory if it was made already (never makes it).
pub(super) fn current() -> Option<&'static Path> {
    DIR.get().map(PathBuf::as_path)
}

/// `name` inside the private directory (made if needed).
pub(super) fn sub(name: &str) -> Option<PathBuf> {
    get().map(|d| d.join(name))
}

/// Set while a watchdog runs (by `watchdog.rs`): it removes the directory once the server is
/// gone, so [`release`] leaves it.
static WATCHED: AtomicBool = AtomicBool::new(false);

/// Says whether a watchdog runs now (see [`release`]).
pub(super) fn watched(yes: bool) {
    WATCHED.store(yes, Ordering::SeqCst);
}

/// When serving ends: removes the private directory, unless the watchdog runs (it removes
/// the directory once the server is gone, after running what `on-cancel/` still holds).
pub fn release() {
    if let Some(d) = current() {
        if !WATCHED.load(Ordering::SeqCst) {
            if let Err(e) = std::fs::remove_dir_all(d) {
                log::debug!("removing {}: {e}", d.display());
            }
        }
    }
}

/// Makes a fresh `stdmcp-<random>` directory in `root`, mode 0700, drawing another name when
/// one exists already.
pub(super) fn make(root: &Path) -> io::Result<PathBuf> {
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let mut bytes = [0u8; 12];
        crate::random::fill(&mut bytes)?;
        let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let dir = root.join(format!("stdmcp-{name}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                log::warn!(
                    "{} exists already (made by someone else?): drawing another name",
                    dir.display()
                );
                last = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no name left")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn fresh_private_and_unpredictable() {
        let root = std::env::temp_dir().join(format!("stdmcp-private-test-{}", std::process::id()));
        std::fs::create_dir_all(&root).expect("mkdir");
        let a = make(&root).expect("make");
        let b = make(&root).expect("make");
        assert_ne!(a, b);
        let mode = std::fs::metadata(&a).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let name = a.file_name().expect("name").to_string_lossy().into_owned();
        assert_eq!(name.len(), "stdmcp-".len() + 24, "{name}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn an_empty_tmpdir_is_unset_not_the_working_directory() {
        assert_eq!(given(Some("".into())), Path::new("/tmp"));
        assert_eq!(given(None), Path::new("/tmp"));
        assert_eq!(given(Some("/var/t".into())), Path::new("/var/t"));
    }

    #[test]
    fn a_tmpdir_inside_a_root_is_not_used() {
        let root = std::env::temp_dir().join(format!("stdmcp-private-root-{}", std::process::id()));
        let inside = root.join("tmp");
        std::fs::create_dir_all(&inside).expect("mkdir");
        let canon = std::fs::canonicalize(&root).expect("canonical");
        assert_eq!(outside(&inside, &[&canon]), Path::new("/tmp"));
        assert_eq!(outside(&root, &[&canon]), Path::new("/tmp"));
        assert_eq!(outside(&inside, &[Path::new("/nowhere")]), inside);
        // /tmp writable too: the cache directory.
        let cache = cache_dir().expect("a cache directory");
        assert_eq!(outside(&inside, &[&canon, Path::new("/tmp")]), cache);
        // Everything inside a root: TMPDIR stays (and the log says why it is not safe).
        assert_eq!(outside(&inside, &[&canon, Path::new("/")]), inside);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_relative_tmpdir_is_made_absolute() {
        let abs = absolute(PathBuf::from("some/tmp"));
        assert!(abs.is_absolute());
        assert!(abs.ends_with("some/tmp"));
    }
}
