//! The sweep: finding and killing everything a started program started, even processes that
//! left its process group, while its leader is still an unreaped zombie.
//!
//! Two things make that possible. The runner makes this process a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`), so a descendant whose parent dies is reparented to us rather
//! than to init: the whole tree of a call stays under the server. And every child's
//! environment carries a marker (`marker.rs`), `STDMCP_CALL=<instance>.<call>`, which its
//! descendants inherit. When the leader has exited, its owner (`group.rs`) runs [`sweep`],
//! which kills every descendant of ours that is in the call's process group or carries the
//! call's marker, until none is left, and reaps the ones that were reparented to us (by pid,
//! never `waitpid(-1)`, which would steal the statuses `Child::wait` needs); the owner reaps
//! the leader only after that, so the group id (the leader's pid) cannot be handed to another
//! process while the sweep signals it. What is still dying when the sweep ends is left to the
//! late reaping (`late_reap.rs`). The watchdog (`watchdog.rs`) looks for the instance's marker
//! when the server dies.
//!
//! A process caught between two programs (inside `execve`) shows no environment for a moment:
//! the sweep cannot tell whose it is, so it looks again, after a short pause when nothing else
//! is left to kill, rather than end with it unjudged. An exiting one shows none either, but
//! needs no killing: it is judged as the zombie it will be ([`procfs::marked`]).
//!
//! What escapes: a process that both leaves the call's process group (`setsid`, `setpgid`)
//! and replaces its environment with one without the marker (`env -i`, `execve` with a new
//! environment), a process that cannot be signalled (another user's, setuid), and, when the
//! server is not root, one that left the group and made itself non-dumpable
//! (`PR_SET_DUMPABLE` 0: its environment cannot be read).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

use super::late_reap::{self, reap_one, reap_strays};
use super::marker::MARKER;
use super::procfs::{self, stat, Marked, Stat};
use super::{owned, signal};

/// Kill-and-rescan rounds before giving up on a process that keeps forking.
const ROUNDS: usize = 50;
/// The first pause before a round that only has processes it cannot judge yet (between two
/// programs); it doubles up to [`MAX_UNSURE_PAUSE`].
const UNSURE_PAUSE: Duration = Duration::from_micros(100);
const MAX_UNSURE_PAUSE: Duration = Duration::from_millis(10);
/// How long [`sweep`] waits for killed processes to die so it can reap them.
const REAP_WAIT: Duration = Duration::from_secs(1);

/// Make this process a child subreaper (once; a failure is logged).
#[allow(unsafe_code)]
pub(super) fn become_subreaper() {
    static DONE: Once = Once::new();
    DONE.call_once(|| {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: prctl with integer arguments only.
            let r =
                unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
            if r != 0 {
                log::warn!(
                    "could not become a child subreaper ({}); processes that leave a \
                     call's process group may escape",
                    std::io::Error::last_os_error()
                );
            }
        }
    });
}

/// Process and thread ids handed out per second that no machine outruns (a many-core host
/// churning threads reaches a few hundred thousand).
const MAX_FORKS_PER_SEC: f64 = 1_000_000.0;
/// The widest window of pids read one at a time; a wider one lists `/proc` instead.
const MAX_WINDOW: i32 = 1024;

/// Reads a number from a file such as `/proc/sys/kernel/pid_max`.
fn read_number(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The pids a call's processes can have, when they are known to be few: every process of a
/// call descends from its leader, so it was given a pid after the leader's, and pids are
/// handed out in increasing order until they wrap at `pid_max`. The window is the leader's pid
/// to the last one handed out (`ns_last_pid`), if that is at most [`MAX_WINDOW`] pids, and if
/// the call is too short for the pids to have wrapped and climbed back past the leader's (at
/// [`MAX_FORKS_PER_SEC`], fewer than half of `pid_max` forks since the spawn). Else `None`,
/// and the sweep reads every process. (A process with `CAP_SYS_ADMIN` or
/// `CAP_CHECKPOINT_RESTORE` can choose its children's pids, `clone3` `set_tid`; such a child
/// below the leader's pid is missed by the window, and killed by the watchdog's marker scan
/// when the server exits.) The window may also hold threads (their ids come from
/// the same counter): a thread of the call's process is that process, one of another
/// process is not below this one or does not match the call.
fn pid_window(leader: i32, spawned: Instant) -> Option<std::ops::RangeInclusive<i32>> {
    static PID_MAX: OnceLock<Option<i64>> = OnceLock::new();
    let pid_max = (*PID_MAX.get_or_init(|| read_number("/proc/sys/kernel/pid_max")))?;
    let last = i32::try_from(read_number("/proc/sys/kernel/ns_last_pid")?).ok()?;
    let wrap_free = spawned.elapsed().as_secs_f64() * MAX_FORKS_PER_SEC < pid_max as f64 / 2.0;
    (wrap_free && leader > 1 && last >= leader && last - leader <= MAX_WINDOW)
        .then_some(leader..=last)
}

/// The processes a sweep looks at: those in the [`pid_window`] of a call whose leader was
/// spawned at `spawned`, else all. Never the children a `Child` waits for (the leaders of the
/// programs running, this one's included, and the watchdog): they are no call's processes to
/// kill or reap (one that joined the call's group is killed by the group's signal all the
/// same), and with many programs at once most of a window's reads were theirs.
fn processes(leader: i32, spawned: Option<Instant>) -> Vec<Stat> {
    let pids = match spawned.and_then(|t| pid_window(leader, t)) {
        Some(window) => window.collect(),
        None => all_pids(),
    };
    owned::unowned(pids).into_iter().filter_map(stat).collect()
}

/// Every pid in `/proc`.
fn all_pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// The processes below `root` in the tree (`root` excluded).
fn descendants(root: i32, procs: &[Stat]) -> Vec<Stat> {
    let mut children: BTreeMap<i32, Vec<Stat>> = BTreeMap::new();
    for p in procs {
        children.entry(p.ppid).or_default().push(*p);
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        for c in children.get(&pid).into_iter().flatten() {
            if c.pid != root {
                out.push(*c);
                todo.push(c.pid);
            }
        }
    }
    out
}

/// Kills every process of the call whose leader (process group `pgid`, environment marker
/// `marker`) has exited and is not reaped yet, and reaps the ones reparented to us; the
/// leader itself is left to its owner, which reaps it after this. With `spawned`, the time
/// the leader was spawned, a short call's sweep reads only the pids handed out since
/// ([`pid_window`]) rather than every process of the machine.
///
/// Also reaped: any zombie child of ours in another session. A zombie's environment cannot
/// be read, so this is how the middle process of a double fork (`fork`, `setsid`, `fork`,
/// exit), which exits on its own, is found. None of the runner's children is in another
/// session (process group leaders cannot call `setsid`), so this never takes an exit
/// status a `Child` waits for; a program embedding stdmcp that starts children of its own
/// in a new session must not rely on waiting for them once it uses the runner.
pub(super) fn sweep(pgid: libc::pid_t, marker: &str, spawned: Option<Instant>) {
    let me = std::process::id() as i32;
    let call = Call {
        pgid,
        me,
        // Our session id reads 0 when its leader is outside our PID namespace (a container);
        // children that stayed in our session read 0 as well, so the comparison still holds.
        my_sid: stat(me).map(|p| p.sid),
        needle: format!("{MARKER}={marker}").into_bytes(),
    };
    let mut found = Found::default();
    let mut pause = UNSURE_PAUSE;
    for _ in 0..ROUNDS {
        // The leader is a zombie still in the group: the group id is ours until it is reaped.
        signal::group(pgid, libc::SIGKILL);
        let live = found.round(&call, processes(pgid, spawned));
        if live == 0 && found.unsure.is_empty() {
            break;
        }
        if live == 0 {
            // Only processes between two programs: give them a moment.
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_UNSURE_PAUSE);
        }
    }
    if !found.unsure.is_empty() {
        log::warn!(
            "processes {:?} could not be told to be of the call or not (replacing their \
             program all along); they were not killed",
            found.unsure
        );
    }
    let mut waiting = reap(found.call, Instant::now() + REAP_WAIT);
    waiting.extend(found.dying);
    reap_strays(&mut found.strays);
    late_reap::keep(waiting, found.strays);
}

/// What a sweep found so far (pid -> start time).
#[derive(Default)]
struct Found {
    /// The call's processes, killed or dead: reaped by the sweep.
    call: BTreeMap<i32, u64>,
    /// Zombie children of ours that are not the call's by the rules of [`Call::judge`]:
    /// reaped at the end unless a `Child` waits for them (`owned`).
    strays: BTreeMap<i32, u64>,
    /// The call's, on their way out: left to the late reaping.
    dying: BTreeMap<i32, u64>,
    /// Those that could not be judged in the last round (between two programs).
    unsure: Vec<i32>,
}

impl Found {
    /// Judges every descendant of ours among `procs` and kills the call's live ones;
    /// returns how many it killed.
    fn round(&mut self, call: &Call, procs: Vec<Stat>) -> usize {
        let mut live = 0;
        self.unsure.clear();
        for p in descendants(call.me, &procs) {
            match call.judge(&p) {
                Verdict::Kill => {
                    self.call.insert(p.pid, p.start);
                    live += 1;
                    signal::process(p.pid, libc::SIGKILL);
                }
                Verdict::Reap => {
                    self.call.insert(p.pid, p.start);
                }
                Verdict::Stray if owned::REAP_STRAYS.load(Ordering::Relaxed) => {
                    self.strays.insert(p.pid, p.start);
                }
                // The program does not let the runner reap strays (`reap_stray_children`).
                Verdict::Stray => {}
                Verdict::Dying => {
                    self.dying.insert(p.pid, p.start);
                }
                Verdict::Unsure => self.unsure.push(p.pid),
                Verdict::Other => {}
            }
        }
        live
    }
}

/// What a sweep does with one descendant of ours.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// The call's, alive: killed.
    Kill,
    /// The call's, dead: reaped.
    Reap,
    /// Dead or exiting, our child, not known to be the call's: reaped once dead unless a
    /// `Child` owns it (at the end of the sweep, or later by the reaping thread).
    Stray,
    /// Exiting, the call's: reaped once dead, by the thread that reaps what a sweep leaves.
    Dying,
    /// Cannot be told now (between two programs): looked at again.
    Unsure,
    /// Not the call's.
    Other,
}

/// The call a sweep is for.
struct Call {
    pgid: libc::pid_t,
    me: i32,
    my_sid: Option<i32>,
    /// `STDMCP_CALL=<marker>`, a whole entry of the environment.
    needle: Vec<u8>,
}

impl Call {
    fn judge(&self, p: &Stat) -> Verdict {
        if p.pid == self.pgid {
            // The leader (its pid is the group id): an unreaped zombie its owner reaps after
            // the sweep, never the sweep.
            return Verdict::Other;
        }
        if p.is_dead() {
            // A zombie's environment cannot be read: in the call's group, or our child in
            // another session (the middle of a double fork), it is the call's.
            return self.judge_ending(p, Verdict::Reap);
        }
        if p.is_exiting() {
            // It needs no killing, and its environment may be gone with its memory: judged
            // as the zombie it is about to be. The call's group is waited for, as the killed
            // are; anything else is not: it may be stuck on its way out for long, and every
            // later sweep would wait for it again.
            return if p.pgid == self.pgid {
                Verdict::Reap
            } else {
                self.judge_ending(p, Verdict::Dying)
            };
        }
        if p.pgid == self.pgid {
            return Verdict::Kill;
        }
        match procfs::marked(p, &self.needle) {
            Marked::Yes => Verdict::Kill,
            Marked::No => Verdict::Other,
            Marked::Unsure => Verdict::Unsure,
            // All its threads are exiting (its first one exited earlier).
            Marked::Exiting => self.judge_ending(p, Verdict::Dying),
        }
    }

    /// A process that is dead or exiting, whose environment cannot be read: `reap` when it is
    /// the call's (in its group, or our child in another session), else a stray if it is our
    /// child.
    fn judge_ending(&self, p: &Stat, reap: Verdict) -> Verdict {
        let other_session = self.my_sid.is_some_and(|s| p.sid != s);
        if p.pgid == self.pgid || (p.ppid == self.me && other_session) {
            reap
        } else if p.ppid == self.me {
            Verdict::Stray
        } else {
            Verdict::Other
        }
    }
}

/// Reap the processes of `found` (pid -> start time) that are or become our zombie children;
/// returns those still alive at `deadline` (stuck in the kernel, say).
fn reap(mut found: BTreeMap<i32, u64>, deadline: Instant) -> BTreeMap<i32, u64> {
    let mut pause = Duration::from_micros(200);
    loop {
        let dying: BTreeSet<i32> = found.keys().copied().collect();
        found.retain(|&pid, &mut start| !reap_one(pid, start, &dying));
        if found.is_empty() || Instant::now() >= deadline {
            return found;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::super::late_reap::tests::{bare_sleep, kill};
    use super::*;

    #[test]
    #[allow(clippy::disallowed_methods)] // bare children, to see where their pids fall
    fn the_pid_window_holds_what_a_recent_leader_started_and_closes_for_long_calls() {
        let spawned = Instant::now();
        let leader = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let later = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let (lp, cp) = (leader.id() as i32, later.id() as i32);
        let window = pid_window(lp, spawned);
        // Too long ago for pids not to have wrapped (at 1,000,000 ids a second): no window.
        let long_ago = Instant::now().checked_sub(Duration::from_secs(100));
        let closed = long_ago.map(|t| pid_window(lp, t));
        for mut c in [leader, later] {
            let _ = c.kill();
            let _ = c.wait();
        }
        // None only if over 1024 pids were handed out between (other tests forking).
        if let Some(w) = window {
            assert!(w.contains(&lp) && w.contains(&cp), "{w:?} {lp} {cp}");
        }
        if let Some(closed) = closed {
            assert_eq!(closed, None);
        }
    }

    #[test]
    fn an_exiting_process_is_judged_as_the_zombie_it_will_be_not_looked_at_again() {
        // A zombie's stat reads as that of a process stuck on its way out (memory gone, not a
        // zombie yet) once its state says running and its flags exiting. Its environment
        // cannot be read (empty, or ESRCH on recent kernels): its flags alone decide.
        let (mut child, pid, _) = bare_sleep();
        kill(pid);
        let deadline = Instant::now() + Duration::from_secs(20);
        let zombie = loop {
            match stat(pid) {
                Some(p) if p.is_dead() => break p,
                _ => assert!(Instant::now() < deadline, "{pid} never died"),
            }
            std::thread::yield_now();
        };
        let exiting = Stat {
            state: b'R',
            flags: 0x4,
            ..zombie
        };
        let me = std::process::id() as i32;
        let sid = zombie.sid;
        let call = |pgid, my_sid| Call {
            pgid,
            me,
            my_sid: Some(my_sid),
            needle: b"STDMCP_CALL=nobody".to_vec(),
        };
        let verdicts = [
            // In the call's group: reaped, not killed (nor counted as alive).
            call(zombie.pgid, sid).judge(&exiting),
            // Our child in another session: the call's, reaped without waiting for it.
            call(-1, sid + 1).judge(&exiting),
            // Our child in our session: a stray.
            call(-1, sid).judge(&exiting),
            // Someone else's child: not the call's.
            call(-1, sid + 1).judge(&Stat { ppid: 1, ..exiting }),
        ];
        let _ = child.wait();
        use Verdict::*;
        assert_eq!(verdicts, [Reap, Dying, Stray, Other], "{exiting:?}");
    }

    #[test]
    fn a_process_has_ended_once_it_is_a_zombie_or_no_longer_there() {
        let (mut child, pid, _) = bare_sleep();
        assert!(!procfs::has_ended(pid), "a sleeping child");
        assert!(
            !procfs::has_ended(std::process::id() as i32),
            "this process"
        );
        kill(pid);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !stat(pid).is_some_and(|p| p.is_dead()) {
            assert!(Instant::now() < deadline, "{pid} killed, never a zombie");
            std::thread::yield_now();
        }
        assert!(procfs::has_ended(pid), "a zombie not reaped yet");
        let _ = child.wait();
        // No process has a pid above `pid_max` (at most 2^22): one that is not there has ended.
        assert!(procfs::has_ended(i32::MAX), "no such process");
    }

    #[test]
    fn descendants_follow_parents() {
        let proc = |pid, ppid| Stat {
            pid,
            state: b'S',
            ppid,
            pgid: pid,
            sid: 1,
            flags: 0,
            start: 1,
            threads: 1,
            env_start: 1,
            env_end: 2,
        };
        let all = [proc(10, 1), proc(11, 10), proc(12, 11), proc(13, 1)];
        let d: Vec<i32> = descendants(10, &all).iter().map(|p| p.pid).collect();
        assert_eq!(d, [11, 12]);
    }
}
