//! Late reaping: the processes a sweep (`sweep.rs`) could not reap because they had not died
//! when it ended (killed, or on their way out) are reaped as soon as they die, by one thread of
//! the process, `stdmcp-reap`, started the first time there is one, whether or not another
//! call comes. The thread polls them (every 10 ms at first, then less often, at least every
//! second) while any is left, and sleeps while none is. It only reaps: it sends no signal.
//!
//! Also here: how one process is reaped by pid ([`reap_one`]), and the strays (our zombie
//! children that no `Child` waits for, [`reap_strays`]), for the sweep and for this thread.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::owned;
use super::procfs::stat;
use crate::sync;

/// True when `pid` (started at `start`) is settled: reaped now, gone, a new process, or a
/// zombie whose parent is another process that lives on (it reaps it). False while it is
/// alive, or a zombie of a parent in `dying` (it will be reparented to us).
#[allow(unsafe_code)]
pub(super) fn reap_one(pid: i32, start: u64, dying: &BTreeSet<i32>) -> bool {
    let Some(p) = stat(pid) else {
        return true;
    };
    if p.start != start {
        return true;
    }
    if !p.is_dead() {
        return false;
    }
    if p.ppid != std::process::id() as i32 {
        return !dying.contains(&p.ppid);
    }
    // SAFETY: waitpid on one pid we checked to be our zombie child, started when we saw it
    // (a zombie keeps its pid, so it cannot be reused before this). It is not one a `Child`
    // owns: the sweep collects only processes of a call other than its leader.
    let r = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
    r == pid || r < 0
}

/// Reaps the strays (pid -> start time) that are dead and that no `Child` waits for; keeps
/// those still on their way out.
pub(super) fn reap_strays(strays: &mut BTreeMap<i32, u64>) {
    if strays.is_empty() {
        return;
    }
    let _no_spawns = owned::no_spawns();
    let none = BTreeSet::new();
    strays.retain(|&pid, &mut start| !owned::is_owned(pid) && !reap_one(pid, start, &none));
}

/// Pid -> start time of each process left to reap.
struct Left {
    /// The calls' (killed, or exiting in a call's group or another session).
    calls: BTreeMap<i32, u64>,
    /// Strays: our children not known to be a call's, reaped unless a `Child` owns them.
    strays: BTreeMap<i32, u64>,
}

impl Left {
    fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.strays.is_empty()
    }

    /// Reaps what has died; keeps the rest.
    fn look(&mut self) {
        let dying: BTreeSet<i32> = self.calls.keys().copied().collect();
        self.calls
            .retain(|&pid, &mut start| !reap_one(pid, start, &dying));
        reap_strays(&mut self.strays);
    }
}

static LEFT: Mutex<Left> = Mutex::new(Left {
    calls: BTreeMap::new(),
    strays: BTreeMap::new(),
});
static MORE: Condvar = Condvar::new();
static STARTED: AtomicBool = AtomicBool::new(false);

fn left() -> MutexGuard<'static, Left> {
    sync::lock(&LEFT)
}

/// Hands over the calls' processes and the strays (pid -> start time) still to reap.
pub(super) fn keep(calls: BTreeMap<i32, u64>, strays: BTreeMap<i32, u64>) {
    let mut left = left();
    if calls.is_empty() && strays.is_empty() && left.is_empty() {
        return;
    }
    left.calls.extend(calls);
    left.strays.extend(strays);
    // Without the thread (it could not be started), each sweep takes one look.
    left.look();
    let empty = left.is_empty();
    drop(left);
    if !empty {
        start();
        MORE.notify_one();
    }
}

fn start() {
    if STARTED.swap(true, Ordering::SeqCst) {
        return;
    }
    let started = std::thread::Builder::new()
        .name("stdmcp-reap".into())
        .stack_size(64 * 1024)
        .spawn(run);
    if let Err(e) = started {
        log::warn!(
            "cannot start the thread that reaps ended processes ({e}): they are \
             reaped at the end of a later call"
        );
        STARTED.store(false, Ordering::SeqCst);
    }
}

fn run() {
    const FIRST: Duration = Duration::from_millis(10);
    let mut pause = FIRST;
    let mut left = left();
    loop {
        if left.is_empty() {
            pause = FIRST;
            left = sync::wait(&MORE, left);
            continue;
        }
        left = sync::wait_timeout(&MORE, left, pause).0;
        left.look();
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// Processes still to reap.
#[cfg(test)]
fn count() -> usize {
    let left = left();
    left.calls.len() + left.strays.len()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::time::Instant;

    /// A bare `sleep` child (no runner's `Child` owns it), its pid and start time.
    #[allow(clippy::disallowed_methods)] // a bare child, to leave to the reaping thread
    pub(in crate::process) fn bare_sleep() -> (std::process::Child, i32, u64) {
        let child = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .expect("sleep");
        let pid = child.id() as i32;
        let start = stat(pid).expect("stat").start;
        (child, pid, start)
    }

    #[allow(unsafe_code)]
    pub(in crate::process) fn kill(pid: i32) {
        // SAFETY: kill has no memory-safety preconditions; the child is the test's.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }

    /// Waits until `pid` (started at `start`) is reaped: gone from /proc, not a zombie.
    fn wait_reaped(pid: i32, start: u64) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while stat(pid).is_some_and(|p| p.start == start) {
            assert!(Instant::now() < deadline, "{pid} was never reaped");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_process_that_outlived_its_sweep_is_reaped_without_another_sweep() {
        let (child, pid, start) = bare_sleep();
        // Alive when its sweep ended (stuck in the kernel, say): kept for later.
        keep(BTreeMap::from([(pid, start)]), BTreeMap::new());
        assert!(count() >= 1);
        kill(pid);
        // No other sweep: the thread reaps it.
        wait_reaped(pid, start);
        drop(child);
    }

    #[test]
    fn a_stray_on_its_way_out_is_reaped_once_dead_without_another_sweep() {
        let (child, pid, start) = bare_sleep();
        kill(pid);
        // A sweep met it exiting, not yet dead, and no `Child` is registered for it (this one
        // is bare): handed over as a stray.
        keep(BTreeMap::new(), BTreeMap::from([(pid, start)]));
        wait_reaped(pid, start);
        drop(child);
    }
}
