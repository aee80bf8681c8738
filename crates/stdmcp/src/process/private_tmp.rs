//! A confined run's private `TMPDIR` ([`PrivateTmp`]): a fresh directory (mode 0700) in the
//! server's private directory, made before the program starts, given to no other run, and
//! removed with everything in it after the run's end (its sweep and reap).
//!
//! A run whose ruleset is built for it alone gets `tmp/N`, which its ruleset makes writable;
//! a run started by a spawner gets `tmp/sK/N` from its spawner's pool (`tmp_pool.rs`).

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Numbers the directories made in `tmp/`, so that no name is ever given twice.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// `tmp/` in the server's private directory (made once; `None` if it cannot be made, logged).
pub(super) fn tmp_root() -> Option<&'static Path> {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    if let Some(p) = ROOT.get() {
        return Some(p);
    }
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
    Some(ROOT.get_or_init(|| p))
}

/// A new directory `prefix` + a number in `parent`, mode 0700, made by this call (`mkdir`
/// fails on a name that exists: one a program of the same spawner made first is passed over);
/// `None` if none can be made, logged.
pub(super) fn fresh(parent: &Path, prefix: &str) -> Option<PathBuf> {
    let mut tries = 0;
    loop {
        let path = parent.join(format!("{prefix}{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Some(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 16 => tries += 1,
            Err(e) => {
                log::warn!(
                    "cannot make {} ({e}): the program gets no writable TMPDIR",
                    path.display()
                );
                return None;
            }
        }
    }
}

/// Removes `path` and everything in it (`remove_dir_all` follows no symlink a program left
/// there); an empty directory costs one `rmdir`.
pub(super) fn remove(path: &Path) {
    if std::fs::remove_dir(path).is_ok() {
        return;
    }
    if let Err(e) = std::fs::remove_dir_all(path) {
        log::debug!("removing {}: {e}", path.display());
    }
}

/// Removes a private `TMPDIR` (given its path) when its run has ended.
pub(super) type Remover = Box<dyn FnOnce(PathBuf) + Send>;

/// A run's own temporary directory, made for it; when dropped (after the run's sweep and
/// reap) removed with everything in it, here or by its spawner.
pub(super) struct PrivateTmp {
    pub(super) path: PathBuf,
    /// Who removes it (`None`: the thread that drops it).
    remover: Option<Remover>,
}

impl std::fmt::Debug for PrivateTmp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateTmp")
            .field("path", &self.path)
            .finish()
    }
}

impl PrivateTmp {
    /// `tmp/N`, for a run whose ruleset names it.
    pub(super) fn make() -> Option<PrivateTmp> {
        let path = fresh(tmp_root()?, "")?;
        Some(PrivateTmp {
            path,
            remover: None,
        })
    }

    /// `path`, a fresh directory made for one run, removed by `remover` after it.
    pub(super) fn handed(path: PathBuf, remover: Remover) -> PrivateTmp {
        PrivateTmp {
            path,
            remover: Some(remover),
        }
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let path = std::mem::take(&mut self.path);
        match self.remover.take() {
            Some(remover) => remover(path),
            None => remove(&path),
        }
    }
}
