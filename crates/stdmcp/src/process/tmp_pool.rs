//! The private `TMPDIR`s of the runs a spawner starts ([`super::spawner`]): each run gets a
//! directory of its own, `tmp/sK/N`, inside its spawner's `tmp/sK` ([`Pool`]), which the
//! spawner's ruleset makes writable, so that the spawner's domain is built once for all its
//! runs.
//!
//! A directory left empty and unchanged by its run (mode 0700, this user's, no entry) goes back
//! to the pool for a later run of the same spawner; any other is removed with everything in it.
//! The pool's directories are reachable by every program of the spawner's domain all along
//! (the domain can write in `tmp/sK`), so a fresh directory for each run would keep nothing
//! from a program of that domain that outlived its call, and making and removing one cost a
//! tenth to a fifth of a `/bin/true` call here (docs/bench.md, "Confinement"). A run with a
//! ruleset of its own, whose domain is its own, gets a fresh `tmp/N` instead (`private_tmp.rs`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::private_tmp::{fresh, remove, tmp_root, PrivateTmp};

/// How many empty directories a pool keeps for later runs.
const KEPT: usize = 64;

/// A spawner's `tmp/sK`: where its runs' `TMPDIR`s are made, and those kept for later runs.
/// Removed with everything in it when the spawner and all its runs have ended (by whichever
/// thread of the server drops it last: never the spawner's, which may not remove it).
pub(super) struct Pool {
    parent: PathBuf,
    kept: Mutex<Vec<PathBuf>>,
}

impl Pool {
    /// A new `tmp/sK` (`None` if it cannot be made, logged).
    pub(super) fn make() -> Option<Arc<Pool>> {
        let parent = fresh(tmp_root()?, "s")?;
        Some(Arc::new(Pool {
            parent,
            kept: Mutex::new(Vec::new()),
        }))
    }

    /// `tmp/sK`.
    pub(super) fn parent(&self) -> &Path {
        &self.parent
    }

    /// A `TMPDIR` for one run: an empty one kept, or a new one; after the run, kept again if
    /// still empty and unchanged, else removed.
    pub(super) fn take(self: &Arc<Pool>) -> Option<PrivateTmp> {
        let kept = crate::sync::lock(&self.kept).pop();
        let path = match kept {
            Some(p) => p,
            None => fresh(&self.parent, "")?,
        };
        let pool = Arc::clone(self);
        Some(PrivateTmp::handed(
            path,
            Box::new(move |path| pool.give_back(path)),
        ))
    }

    /// `path` once its run has ended: kept if empty and as it was made, else removed.
    fn give_back(&self, path: PathBuf) {
        if pristine(&path) {
            let mut kept = crate::sync::lock(&self.kept);
            if kept.len() < KEPT {
                kept.push(path);
                return;
            }
        }
        remove(&path);
    }
}

/// `path` is a directory of this user's, mode 0700, with nothing in it (not a symlink: the
/// metadata is the link's own).
fn pristine(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| {
        m.is_dir() && m.mode() & 0o7777 == 0o700 && m.uid() == crate::beneath::effective_uid()
    }) && std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

impl Drop for Pool {
    fn drop(&mut self) {
        // remove_dir_all follows no symlink a program left there.
        if let Err(e) = std::fs::remove_dir_all(&self.parent) {
            log::debug!("removing {}: {e}", self.parent.display());
        }
    }
}
