//! The owner of one started program: [`Group`], for a command tool's call ([`super::run`]), a
//! session's program ([`super::interactive`]), an `onCancel` command (run as a call), a
//! portfolio's member (a call of its own) and a served server ([`super::ServerProcess`]).
//!
//! A `Group` is the only thing that signals its program's process group, and it does so on
//! the thread that owns it (the one that spawned the program and waits for it): SIGTERM when
//! asked to stop, SIGKILL when the grace has passed, the signals a session asks for. Other
//! threads only wake it: a cancel hook wakes the owner, which then stops the program
//! ([`Group::waker`]); a session's [`super::interactive::Signaller`] asks it for a signal.
//!
//! Its end ([`Group::end`]) is in this order: the leader's exit is seen without reaping it
//! (its pidfd polls readable, `waitid(WEXITED | WNOWAIT)` confirms), so the leader stays a
//! zombie and its pid, the group id, cannot be given to another process; the sweep
//! (`sweep.rs`) kills what is left of the group and everything that carries the program's
//! marker; the watchdog forgets the group; and only then is the leader reaped. A `Group`
//! dropped before its end kills its group first (SIGKILL), then ends the same way.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::marker::{new_marker, MARKER};
use super::wake::Wake;
use super::watch::{poll, Watch};
use super::{owned, signal, sweep, watchdog};

/// Longest wait between two looks at a program whose exit or wake-up cannot be polled (no
/// pidfd: Linux before 5.3; no eventfd: out of descriptors).
const TICK: Duration = Duration::from_millis(20);

/// What the sweep at a program's end reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    /// A call's: only the pids handed out since it was spawned, while they are few.
    Recent,
    /// A long-lived program's (a session's, a served server): every process.
    All,
}

/// A point of [`Group::end`] a test can look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Moment {
    /// The leader has exited; the sweep is about to start.
    BeforeSweep,
    /// The sweep is done; the leader is about to be reaped.
    Swept,
}

/// One started program, the leader of its own process group, and everything it starts: the
/// one owner of its signals, its sweep and its reap (see the module doc).
pub(super) struct Group {
    child: Child,
    pgid: libc::pid_t,
    marker: String,
    /// When it was spawned, for a sweep that reads only the pids handed out since.
    spawned: Option<Instant>,
    /// Readable once the leader has exited (where the kernel has pidfds).
    pidfd: Option<OwnedFd>,
    wake: Arc<Wake>,
    /// When a stop's SIGKILL is due.
    kill_at: Option<Instant>,
    /// The leader has exited; it is a zombie until [`Group::end`] reaps it.
    exited: bool,
    /// The leader was reaped, and how it ended.
    reaped: Option<ExitStatus>,
    /// Registered with the watchdog until the sweep is done.
    tracked: Option<watchdog::Tracked>,
    /// Registered as a child that a `Child` waits for, until it is reaped.
    owned: Option<owned::Owned>,
    #[cfg(test)]
    observer: Option<Box<dyn FnMut(Moment, libc::pid_t) + Send>>,
}

impl Group {
    /// Spawns `cmd` (its stdio and environment set by the caller) as the leader of a new
    /// process group, with a fresh marker in its environment, registered with the watchdog
    /// (started first if needed, so that it sees what the program starts). Call it on a
    /// thread that lives as long as the program, and own the `Group` there:
    /// `PR_SET_PDEATHSIG` follows the spawning thread. With `ruleset`, the program is spawned
    /// from a thread that enters that Landlock ruleset first (a command without pre-exec hook:
    /// `posix_spawn`, which sets no `PR_SET_PDEATHSIG` either).
    pub(super) fn spawn(
        cmd: &mut Command,
        reach: Reach,
        ruleset: Option<BorrowedFd<'_>>,
    ) -> io::Result<Group> {
        sweep::become_subreaper();
        watchdog::ensure_started();
        let marker = new_marker();
        cmd.env(MARKER, &marker).process_group(0);
        let spawned = Instant::now();
        let (child, owned) = owned::spawn(cmd, ruleset)?;
        // The child called setpgid(0, 0) before exec, and spawn() returns only after a
        // successful exec, so the group exists now.
        let pgid = child.id() as libc::pid_t;
        let tracked = watchdog::track(pgid);
        Ok(Group {
            pidfd: open_pidfd(pgid),
            child,
            pgid,
            marker,
            spawned: (reach == Reach::Recent).then_some(spawned),
            wake: Arc::new(Wake::new()),
            kill_at: None,
            exited: false,
            reaped: None,
            tracked: Some(tracked),
            owned: Some(owned),
            #[cfg(test)]
            observer: None,
        })
    }

    /// The leader's pid, also its process group id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The leader's stdin pipe, if it has one (once).
    pub(super) fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// The leader's stdout pipe, if it has one (once).
    pub(super) fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// The leader's stderr pipe, if it has one (once).
    pub(super) fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// What other threads wake the owner with (a cancel hook) or ask it for a signal with (a
    /// session); they signal nothing themselves.
    pub(super) fn waker(&self) -> Arc<Wake> {
        Arc::clone(&self.wake)
    }

    /// Stops the program: SIGTERM to its group now, SIGKILL once `grace` has passed (sent by
    /// [`Group::wait`]) unless the leader has exited by then.
    pub(super) fn stop(&mut self, grace: Duration) {
        self.signal(libc::SIGTERM);
        self.kill_at = Instant::now().checked_add(grace);
    }

    /// Waits until the leader exits (`true`: it is then an unreaped zombie, for
    /// [`Group::end`]), until `until` passes or until the owner is woken (`false`; then the
    /// caller looks at what woke it, such as its cancel token, and waits again), serving
    /// `io`'s pipes meanwhile. On the way it sends the signals asked for and a stop's SIGKILL
    /// when due.
    pub(super) fn wait(
        &mut self,
        until: Option<Instant>,
        mut io: Option<&mut Watch<'_>>,
    ) -> io::Result<bool> {
        loop {
            if self.exited {
                return Ok(true);
            }
            for sig in self.wake.take_asked() {
                self.signal(sig);
            }
            let now = Instant::now();
            if self.kill_at.is_some_and(|k| now >= k) {
                self.signal(libc::SIGKILL);
                self.kill_at = None;
            }
            if until.is_some_and(|u| now >= u) {
                return Ok(false);
            }
            // Without a pidfd or an eventfd, a look every tick.
            let blind = self.pidfd.is_none() || self.wake.fd().is_none();
            let next = [until, self.kill_at, blind.then(|| now + TICK)]
                .into_iter()
                .flatten()
                .min();
            let timeout = next.map(|n| n.saturating_duration_since(now));
            let extra = [
                self.pidfd.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                self.wake.fd().unwrap_or(-1),
            ];
            let [exit, woken] = match io.as_deref_mut() {
                Some(watch) => watch.poll(extra, timeout)?,
                None => poll_two(extra, timeout)?,
            };
            if woken {
                self.wake.clear();
            }
            if (exit || self.pidfd.is_none()) && self.leader_exited(false)? {
                self.exited = true;
                return Ok(true);
            }
            if woken || blind {
                return Ok(false);
            }
        }
    }

    /// Ends the program for good and returns how its leader ended: SIGKILL to its group if
    /// the leader has not exited, then, while the leader is an unreaped zombie (so its pid,
    /// the group id, is not reused), the sweep of its group and of everything that carries
    /// its marker; then the watchdog forgets the group, and the leader is reaped.
    pub(super) fn end(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.reaped {
            return Ok(status);
        }
        if !self.exited {
            self.signal(libc::SIGKILL);
            self.leader_exited(true)?;
            self.exited = true;
        }
        self.observe(Moment::BeforeSweep);
        sweep::sweep(self.pgid, &self.marker, self.spawned);
        self.observe(Moment::Swept);
        // Nothing of the group is left but its zombie leader: the watchdog forgets the group
        // before the reap, so that it never kills a group id handed out again.
        self.tracked = None;
        self.wake.end();
        let status = self.child.wait()?;
        self.reaped = Some(status);
        // Only now: until the reap, no sweep of another call may take the leader for a stray.
        self.owned = None;
        Ok(status)
    }

    /// Sends `sig` to the group, unless the leader was reaped (then the group id may belong
    /// to another process).
    fn signal(&self, sig: libc::c_int) {
        if self.reaped.is_none() {
            signal::group(self.pgid, sig);
        }
    }

    /// Whether the leader has exited, without reaping it (`waitid` with `WNOWAIT`); with
    /// `block`, waits until it has.
    #[allow(unsafe_code)]
    fn leader_exited(&self, block: bool) -> io::Result<bool> {
        let mut flags = libc::WEXITED | libc::WNOWAIT;
        if !block {
            flags |= libc::WNOHANG;
        }
        loop {
            // SAFETY: an all-zero siginfo_t is valid (plain integers and padding).
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waitid on our own unreaped child, writing into `info`; WNOWAIT leaves
            // it a zombie.
            let r = unsafe { libc::waitid(libc::P_PID, self.pgid as libc::id_t, &mut info, flags) };
            if r == 0 {
                // SAFETY: waitid filled `info` (or left it zeroed: WNOHANG and no exit yet).
                return Ok(unsafe { info.si_pid() } != 0);
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }

    /// Shows `moment` to a test's observer.
    #[cfg(test)]
    fn observe(&mut self, moment: Moment) {
        let pgid = self.pgid;
        if let Some(f) = &mut self.observer {
            f(moment, pgid);
        }
    }

    #[cfg(not(test))]
    fn observe(&mut self, _moment: Moment) {}
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.reaped.is_none() {
            if let Err(e) = self.end() {
                log::debug!("ending process group {}: {e}", self.pgid);
            }
        }
    }
}

/// One `poll` over the two descriptors of a `Group` (`-1`: none) for up to `timeout`
/// (`None`: no limit); returns which of them are readable.
fn poll_two(fds: [RawFd; 2], timeout: Option<Duration>) -> io::Result<[bool; 2]> {
    let mut pollfds = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    poll(&mut pollfds, timeout)?;
    Ok(pollfds.map(|p| p.fd >= 0 && p.revents != 0))
}

/// A pidfd for the process `pid` (a child not reaped yet), where the kernel has them.
#[allow(unsafe_code)]
fn open_pidfd(pid: libc::pid_t) -> Option<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; the
        // child is not reaped yet, so its pid still names it.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd >= 0 {
            // SAFETY: `fd` is a descriptor the kernel just opened for us alone.
            return Some(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) });
        }
    }
    let _ = pid;
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)] // tests start bare shells as groups
mod tests {
    use super::super::procfs::stat;
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    use std::sync::Mutex;

    /// Starts `sh -c script` as a `Group` and reads its first line of output (it is ready).
    fn started(script: &str) -> (Group, String) {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        let mut group = Group::spawn(&mut cmd, Reach::All, None).unwrap();
        let mut line = String::new();
        let out = group.take_stdout().unwrap();
        BufReader::new(out).read_line(&mut line).unwrap();
        (group, line)
    }

    /// The state letter of `pid` in /proc (`Z` for a zombie), or `-` when it is gone.
    fn state(pid: i32) -> char {
        stat(pid).map_or('-', |p| p.state as char)
    }

    /// Whether a signal is pending for `pid` (its thread's or its process's), as /proc shows.
    fn pending(pid: i32) -> bool {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let mask = |key: &str| {
            let hex = status.lines().find_map(|l| l.strip_prefix(key)).unwrap();
            u64::from_str_radix(hex.trim(), 16).unwrap()
        };
        mask("SigPnd:") | mask("ShdPnd:") != 0
    }

    fn wait_exit(group: &mut Group) {
        while !group.wait(None, None).unwrap() {}
    }

    #[test]
    fn the_sweep_runs_while_the_leader_is_an_unreaped_zombie() {
        // The leader leaves a job in its group and one that left the group (setsid, with the
        // marker), prints their pids and exits.
        let (mut group, line) = started("sleep 1000 & a=$!; setsid sleep 1000 & echo $a $!");
        let left: Vec<i32> = line
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        let leader = group.pid() as i32;
        wait_exit(&mut group);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        group.observer = Some(Box::new(move |moment, pgid| {
            // Signal 0: whether the group id still names a group (the zombie leader's).
            let group_there = signal::group(pgid, 0) && stat(pgid).is_some();
            let others: Vec<char> = left.iter().map(|&p| state(p)).collect();
            log.lock()
                .unwrap()
                .push((moment, state(pgid), group_there, others));
        }));
        let status = group.end().unwrap();
        assert_eq!(status.code(), Some(0));
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{seen:?}");
        let (before, after) = (&seen[0], &seen[1]);
        assert_eq!(before.0, Moment::BeforeSweep);
        assert_eq!(
            (before.1, before.2),
            ('Z', true),
            "leader before the sweep: {seen:?}"
        );
        assert!(before.3.iter().all(|&s| s != 'Z' && s != '-'), "{seen:?}");
        assert_eq!(after.0, Moment::Swept);
        assert_eq!(
            (after.1, after.2),
            ('Z', true),
            "leader after the sweep: {seen:?}"
        );
        assert!(
            after.3.iter().all(|&s| s == '-'),
            "swept and reaped: {seen:?}"
        );
        assert!(
            stat(leader).is_none_or(|p| !p.is_dead()),
            "the leader was reaped"
        );
    }

    #[test]
    fn asking_for_a_signal_sends_nothing_until_the_owner_waits() {
        let (mut group, _) = started("echo ready; exec sleep 1000");
        let pid = group.pid() as i32;
        let waker = group.waker();
        let asker = std::thread::spawn(move || waker.ask(libc::SIGTERM));
        asker.join().unwrap();
        // Asked from another thread, and the owner has not looked yet: nothing was sent.
        assert!(!pending(pid) && state(pid) != 'Z', "signalled by the asker");
        wait_exit(&mut group);
        let status = group.end().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM), "sent by the owner");
        // Once reaped, asking reaches nothing.
        group.waker().ask(libc::SIGKILL);
        assert_eq!(group.waker().take_asked().count(), 0);
    }

    #[test]
    fn a_stop_asks_first_then_kills() {
        let (mut polite, _) = started("echo ready; exec sleep 60");
        polite.stop(Duration::from_secs(30));
        wait_exit(&mut polite);
        assert_eq!(polite.end().unwrap().signal(), Some(libc::SIGTERM));

        let (mut deaf, _) = started("trap '' TERM; echo ready; while :; do sleep 1; done");
        deaf.stop(Duration::from_millis(100));
        wait_exit(&mut deaf);
        assert_eq!(deaf.end().unwrap().signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn without_a_pidfd_the_exit_is_seen_at_the_next_tick() {
        // As on a kernel without pidfds (Linux before 5.3): the owner looks every tick.
        let (mut group, _) = started("echo ready; exec sleep 1000");
        group.pidfd = None;
        // The deadline only turns a broken tick into a failure rather than a hang.
        let give_up = Instant::now() + Duration::from_secs(10);
        assert!(!group.wait(Some(give_up), None).unwrap(), "nothing exited");
        assert!(
            Instant::now() < give_up,
            "no tick: the owner slept to its deadline"
        );
        group.stop(Duration::from_secs(30));
        while !group.wait(Some(give_up), None).unwrap() {
            assert!(Instant::now() < give_up, "the exit was never seen");
        }
        assert_eq!(group.end().unwrap().signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn a_group_dropped_running_is_killed_swept_and_reaped() {
        let (group, line) = started("sleep 1000 & echo $!; wait");
        let (leader, job) = (group.pid() as i32, line.trim().parse::<i32>().unwrap());
        drop(group);
        assert_eq!(state(leader), '-', "the leader was reaped");
        assert_eq!(state(job), '-', "its job was killed and reaped");
    }
}
