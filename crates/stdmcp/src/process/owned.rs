//! The children of this process that a `Child` handle waits for: every program the runner
//! starts (calls, sessions, served servers: each owned by a `Group`) and the watchdog. A sweep
//! ([`super::sweep::sweep`]) reaps any other zombie child it meets (one reparented to this
//! subreaper, say a process a call put in a process group of its own, which exited before
//! the call ended), and never these: reaping one would steal the status its `Child` waits
//! for, and let its pid be reused under the handle.
//!
//! Only in a program that starts children through the runner alone, which says so with
//! [`super::reap_stray_children`] (the `stdmcp` binary does): a child of its own, which
//! the sweep cannot tell from a stray, would lose its exit status otherwise.
//!
//! A child is registered from before it exists: [`spawn`] holds a shared lock from before
//! the `fork` until its pid is in the set, and a sweep that reaps strays holds that lock
//! exclusively, so it never meets a child that is not registered yet.

use crate::sync;
use std::collections::BTreeSet;
use std::io;
use std::os::fd::BorrowedFd;
use std::process::{Child, Command};
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, MutexGuard, RwLock, RwLockWriteGuard};

static OWNED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
/// Set by [`super::reap_stray_children`].
pub(super) static REAP_STRAYS: AtomicBool = AtomicBool::new(false);
static SPAWNING: RwLock<()> = RwLock::new(());

fn owned() -> MutexGuard<'static, BTreeSet<i32>> {
    sync::lock(&OWNED)
}

/// A registered child; dropping it unregisters the pid (after the child was reaped).
#[derive(Debug)]
pub(super) struct Owned(i32);

impl Drop for Owned {
    fn drop(&mut self) {
        owned().remove(&self.0);
    }
}

/// Spawns `cmd` as an owned child; with `ruleset`, from a thread that first enters it
/// ([`super::ruleset::spawn_restricted`]).
#[allow(clippy::disallowed_methods)] // the one place the runner's children are spawned
pub(super) fn spawn(
    cmd: &mut Command,
    ruleset: Option<BorrowedFd<'_>>,
) -> io::Result<(Child, Owned)> {
    let _spawning = sync::read(&SPAWNING);
    let child = match ruleset {
        Some(fd) => super::ruleset::spawn_restricted(cmd, fd)?,
        None => cmd.spawn()?,
    };
    let pid = child.id() as i32;
    owned().insert(pid);
    Ok((child, Owned(pid)))
}

/// While held, no child is being spawned, and [`is_owned`] is the whole truth.
pub(super) fn no_spawns() -> RwLockWriteGuard<'static, ()> {
    sync::write(&SPAWNING)
}

/// Whether a `Child` waits for `pid`. True is the truth at any time (a pid is registered until
/// its `Child` reaped it); false only while [`no_spawns`] is held (a child may exit before its
/// spawn registered it).
pub(super) fn is_owned(pid: i32) -> bool {
    owned().contains(&pid)
}

/// `pids` without those a `Child` waits for (see [`is_owned`]: one that is being spawned may be
/// left in).
pub(super) fn unowned(mut pids: Vec<i32>) -> Vec<i32> {
    let owned = owned();
    pids.retain(|p| !owned.contains(p));
    pids
}
