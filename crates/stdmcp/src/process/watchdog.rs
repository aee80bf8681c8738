//! The watchdog: a process of its own that kills the process groups of running programs
//! (calls, sessions) if the server dies without ending them (e.g. it is SIGKILLed). While the
//! server lives, each program's owner (`group.rs`) alone signals its group; the watchdog acts
//! only once the server is gone.
//!
//! `PR_SET_PDEATHSIG` only covers a tool's direct child: it is cleared on
//! fork, so grandchildren do not inherit it. The watchdog covers the whole
//! group: it is a `/bin/sh` child (own process group, stdout/stderr null)
//! whose stdin is a pipe whose only write end is held by this process
//! (close-on-exec, so no tool child ever inherits it). The server writes
//! `+PGID` after spawning a program and `-PGID` once its sweep is done (just before its
//! leader, the last process of the group, is reaped).
//! When the pipe reaches EOF — the server exited or died, however — the shell
//! sends SIGKILL to every group still listed, then to every process whose
//! environment carries this server's call marker (`STDMCP_CALL=<instance>.`,
//! see `marker.rs`; found with `grep -z` over every thread's
//! `/proc/*/task/*/environ`, so a process whose first thread exited is found through another,
//! again until none is left), and exits. The marker scan
//! finds what left the process groups (`setsid`, double forks) and was
//! reparented to init when the server died; it looks once more a second later,
//! for a program that was between `posix_spawn` and its exec (no marker yet)
//! when the server died. Last it runs the `onCancel` commands of the
//! calls still in flight, which [`super::on_cancel`] keeps as files in the server's
//! private directory ([`super::private_dir`]), and removes that directory (with the
//! `stdmcp` command's output spool in it). The directory's name reaches the watchdog as a line
//! `d/PATH` on the same pipe, never on its command line (which anyone can read), so no one
//! learns it before it exists.
//!
//! The watchdog is started lazily by the first [`track`] (the runner also asks for it before
//! it starts a program, [`ensure_started`]). If it cannot be started for a passing reason
//! (too many open files, processes or threads; no memory) every later call tries again and,
//! until one succeeds, each call's process group is logged as running without it; any other
//! failure (no `/bin/sh`) is logged once and not retried. A watchdog that died is replaced
//! at most [`MAX_STARTS`] times.
//!
//! No call ever waits for the watchdog: the pipe is non-blocking, and lines the pipe cannot
//! take now (a watchdog stopped or starved while a few thousand calls start and end) wait in a
//! buffer that the next write flushes first. A buffer past [`MAX_BACKLOG`] retires that
//! watchdog (SIGKILL, before its pipe is closed: it kills nothing) and starts another, which is
//! told every group still tracked.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;

use super::marker::instance;
use super::spawn::cloexec_inherited_fds;
use super::{owned, private_dir};
use crate::sync;

/// The watchdog's POSIX sh (dash compatible) program. Groups are kept in a
/// space-delimited string `" 12 345 "`; malformed lines are ignored. `$1` is the
/// server's marker instance; marked processes are found with `grep -z`, or with `tr`
/// and `grep` per process where `grep` has no `-z`.
const SCRIPT: &str = r#"trap '' HUP INT TERM QUIT PIPE
groups=' '
dir=
while IFS= read -r line; do
  case $line in d/*) dir=${line#d}; continue ;; esac
  g=${line#?}
  case $g in ''|*[!0-9]*|0|1) continue ;; esac
  case $line in
    +*) groups="$groups$g " ;;
    -*) case $groups in *" $g "*) groups="${groups%%" $g "*} ${groups#*" $g "}" ;; esac ;;
  esac
done
for g in $groups; do kill -KILL "-$g" 2>/dev/null; done
inst=$1
case $inst in ''|*[!0-9a-f-]*) inst= ;; esac
zok=0
printf 'x\0' | grep -qz x 2>/dev/null && zok=1
marked() {
  if [ "$zok" = 1 ]; then
    grep -lzs -e "^STDMCP_CALL=$inst\." /proc/[0-9]*/task/[0-9]*/environ 2>/dev/null
  else
    for f in /proc/[0-9]*/task/[0-9]*/environ; do
      tr '\0' '\n' 2>/dev/null <"$f" | grep -q -e "^STDMCP_CALL=$inst\." && echo "$f"
    done
  fi
}
round=0
[ -n "$inst" ] || round=50
while [ "$round" -lt 50 ]; do
  round=$((round + 1))
  found=$(marked)
  [ -n "$found" ] || break
  for f in $found; do
    p=${f#/proc/}
    kill -KILL "${p%%/*}" 2>/dev/null
  done
done
# A program started just before the server died may not carry the marker yet (between
# posix_spawn and its exec it shows the server's environment): one more look a second later.
if [ -n "$inst" ]; then
  (
    sleep 1
    for f in $(marked); do
      p=${f#/proc/}
      kill -KILL "${p%%/*}" 2>/dev/null
    done
  ) &
fi
# The private directory (announced on the pipe): only one this user owns, never one planted
# by another. Run the onCancel commands still pending in it, in parallel, then remove it.
case $dir in /*) ;; *) exit 0 ;; esac
[ -d "$dir" ] && [ ! -L "$dir" ] && [ -O "$dir" ] || exit 0
oc=$dir/on-cancel
if [ -d "$oc" ] && [ ! -L "$oc" ] && [ -O "$oc" ]; then
  for f in "$oc"/*; do
    case ${f##*/} in *[!0-9A-Za-z._-]*) continue ;; esac
    [ -f "$f" ] && [ ! -L "$f" ] && [ -O "$f" ] && /bin/sh "$f" &
  done
  wait
fi
rm -rf "$dir"
exit 0
"#;

/// How often a dead watchdog is replaced before giving up.
const MAX_STARTS: u32 = 4;
/// Bytes of lines waiting for a watchdog that does not read its pipe before it is replaced.
const MAX_BACKLOG: usize = 32 << 10;

struct Watchdog {
    child: Child,
    /// Unregistered when the watchdog is dropped (after `retire` reaped it).
    _owned: owned::Owned,
    stdin: ChildStdin,
    /// It was told the private directory's name.
    told_dir: bool,
    /// Lines its pipe could not take yet (the pipe is non-blocking), oldest first.
    backlog: Vec<u8>,
}

struct State {
    watchdog: Option<Watchdog>,
    /// Watchdogs started (each one that died used one of [`MAX_STARTS`]).
    starts: u32,
    /// It could not be started for a reason that does not pass: not tried again.
    given_up: bool,
    /// Groups currently tracked (replayed into a restarted watchdog).
    groups: BTreeSet<i32>,
}

static STATE: Mutex<State> = Mutex::new(State {
    watchdog: None,
    starts: 0,
    given_up: false,
    groups: BTreeSet::new(),
});

/// The watchdog's pid, if it is running (it is started by the first
/// `track`, i.e. the first `process::run`).
pub fn watchdog_pid() -> Option<u32> {
    sync::lock(&STATE).watchdog.as_ref().map(|w| w.child.id())
}

/// Whether calls now run without the watchdog because it could not be started for a passing
/// reason (the next call tries again); false when it runs, and when it was given up for good
/// (no `/bin/sh`: logged once).
pub fn missing() -> bool {
    let st = sync::lock(&STATE);
    st.watchdog.is_none() && !st.given_up
}

/// Start the watchdog now if it is not running yet (and may still be started); returns its pid.
pub fn ensure_started() -> Option<u32> {
    let mut st = sync::lock(&STATE);
    start_if_needed(&mut st);
    tell_dir(&mut st);
    st.watchdog.as_ref().map(|w| w.child.id())
}

/// Registration of one process group with the watchdog; dropping it
/// unregisters the group (do that only after the group was swept).
#[derive(Debug)]
#[must_use = "dropping the registration unregisters the group"]
pub(super) struct Tracked {
    pgid: i32,
}

/// Register process group `pgid` with the watchdog (starting it if needed).
pub(super) fn track(pgid: i32) -> Tracked {
    let mut st = sync::lock(&STATE);
    if pgid > 1 && st.groups.insert(pgid) {
        if st.watchdog.is_some() {
            tell_dir(&mut st);
            send(&mut st, '+', pgid);
        } else {
            start_if_needed(&mut st); // replays all groups, this one included
        }
        if st.watchdog.is_none() && !st.given_up {
            log::warn!(
                "process group {pgid} runs without the watchdog: if the server is killed, \
                 processes of this call that left its process group may survive it"
            );
        }
    }
    Tracked { pgid }
}

/// Tells a running watchdog the private directory's name, once it exists.
fn tell_dir(st: &mut State) {
    let told = st.watchdog.as_ref().is_none_or(|w| w.told_dir);
    if told {
        return;
    }
    if let Some(line) = private_dir::current().and_then(dir_line) {
        if let Some(w) = st.watchdog.as_mut() {
            w.told_dir = true;
        }
        write(st, &line);
    }
}

/// `d/PATH\n` for the watchdog (`None` for a name a line cannot carry).
fn dir_line(dir: &std::path::Path) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let path = dir.as_os_str().as_bytes();
    (path.starts_with(b"/") && !path.contains(&b'\n')).then(|| [b"d", path, b"\n"].concat())
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut st = sync::lock(&STATE);
        if st.groups.remove(&self.pgid) && st.watchdog.is_some() {
            send(&mut st, '-', self.pgid);
        }
    }
}

fn send(st: &mut State, op: char, pgid: i32) {
    write(st, format!("{op}{pgid}\n").as_bytes());
}

fn write(st: &mut State, line: &[u8]) {
    let failed = match st.watchdog.as_mut() {
        Some(w) => {
            w.backlog.extend_from_slice(line);
            flush(w).err()
        }
        None => return,
    };
    if let Some(err) = failed {
        log::warn!("process watchdog is gone ({err}); restarting it");
        retire(st);
        start_if_needed(st);
        return;
    }
    let stuck = st
        .watchdog
        .as_ref()
        .is_some_and(|w| w.backlog.len() > MAX_BACKLOG);
    if stuck {
        log::warn!(
            "process watchdog (pid {:?}) has not read its pipe for {MAX_BACKLOG} bytes \
             (stopped or starved?): replacing it",
            watchdog_pid_of(st)
        );
        retire(st);
        start_if_needed(st);
    }
}

fn watchdog_pid_of(st: &State) -> Option<u32> {
    st.watchdog.as_ref().map(|w| w.child.id())
}

/// Writes as much of the backlog as the pipe takes now, without waiting; an error other than
/// a full pipe means the watchdog is gone.
fn flush(w: &mut Watchdog) -> std::io::Result<()> {
    while !w.backlog.is_empty() {
        match w.stdin.write(&w.backlog) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                w.backlog.drain(..n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Forget a broken or stuck watchdog: SIGKILL it if it still runs (so that it kills nothing:
/// the groups it lists are still running calls), close its pipe, and reap it.
fn retire(st: &mut State) {
    if let Some(mut w) = st.watchdog.take() {
        private_dir::watched(false);
        if let Ok(None) = w.child.try_wait() {
            let _ = w.child.kill();
        }
        drop(w.stdin);
        let _ = w.child.wait();
    }
}

fn start_if_needed(st: &mut State) {
    if st.watchdog.is_some() || st.given_up || st.starts >= MAX_STARTS {
        return;
    }
    // The private directory first, so that the watchdog knows it from its first line.
    let dir = private_dir::get().and_then(dir_line);
    match spawn_watchdog() {
        Ok(mut w) => {
            st.starts += 1;
            let mut replay = Vec::new();
            if let Some(line) = &dir {
                replay.extend_from_slice(line);
                w.told_dir = true;
            }
            for g in &st.groups {
                replay.extend_from_slice(format!("+{g}\n").as_bytes());
            }
            w.backlog = replay;
            if let Err(err) = flush(&mut w) {
                log::warn!("process watchdog died at start ({err}); continuing without it");
                st.watchdog = Some(w);
                retire(st);
                return;
            }
            log::debug!("process watchdog started, pid {}", w.child.id());
            st.watchdog = Some(w);
            private_dir::watched(true);
        }
        Err(err) if passing(&err) => {
            log::warn!("could not start the process watchdog ({err}); the next call tries again");
        }
        Err(err) => {
            st.given_up = true;
            log::warn!(
                "could not start the process watchdog ({err}); tool processes may \
                 outlive the server if it is killed"
            );
        }
    }
}

/// An error that may be gone at the next try: out of descriptors, processes, threads or
/// memory, or interrupted.
fn passing(err: &std::io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(
            libc::EMFILE | libc::ENFILE | libc::EAGAIN | libc::ENOMEM | libc::EINTR | libc::ENOBUFS
        )
    ) || err.kind() == std::io::ErrorKind::Interrupted
}

#[allow(clippy::disallowed_methods)] // a spawn point of the runner
#[allow(unsafe_code)]
fn spawn_watchdog() -> std::io::Result<Watchdog> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(SCRIPT)
        .arg("stdmcp-watchdog")
        .arg(instance())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    // SAFETY: the closure only makes async-signal-safe calls (fcntl /
    // close_range syscall), as required between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            cloexec_inherited_fds();
            Ok(())
        });
    }
    let (mut child, owned) = owned::spawn(&mut cmd, None)?;
    match child.stdin.take() {
        Some(stdin) => {
            // Never wait for the watchdog to read (a call would wait under the global lock).
            if let Err(e) = set_nonblocking(&stdin) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
            Ok(Watchdog {
                child,
                _owned: owned,
                stdin,
                told_dir: false,
                backlog: Vec::new(),
            })
        }
        None => {
            let _ = child.kill();
            let _ = child.wait();
            Err(std::io::Error::other("watchdog has no stdin pipe"))
        }
    }
}

/// Makes the write end of the watchdog's pipe non-blocking (its read end, the watchdog's own
/// open file description, is unchanged).
#[allow(unsafe_code)]
fn set_nonblocking(stdin: &ChildStdin) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = stdin.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process holds open; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests spawn bare children as controls
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    fn gone(pid: u32) -> bool {
        super::super::procfs::has_ended(pid as i32)
    }

    #[test]
    fn script_kills_listed_groups_on_eof() {
        // Two groups: one registered and unregistered again (must survive),
        // one registered (must be killed at EOF).
        let mut keep = Command::new("sleep")
            .arg("1000")
            .process_group(0)
            .spawn()
            .expect("spawn sleep");
        let mut doomed = Command::new("sleep")
            .arg("1000")
            .process_group(0)
            .spawn()
            .expect("spawn sleep");
        let mut sh = Command::new("/bin/sh")
            .arg("-c")
            .arg(SCRIPT)
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        let mut stdin = sh.stdin.take().expect("stdin");
        let text = format!(
            "+{k}\n+garbage\n+1\n+{d}\n-{k}\n-999999\n",
            k = keep.id(),
            d = doomed.id()
        );
        stdin.write_all(text.as_bytes()).expect("write");
        drop(stdin);
        assert!(sh.wait().expect("wait sh").success());
        let status = doomed.wait().expect("wait doomed");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert_eq!(keep.try_wait().expect("try_wait"), None);
        keep.kill().expect("kill keep");
        keep.wait().expect("wait keep");
    }

    /// Runs SCRIPT for instance `inst` with `path` as PATH, closes its stdin, and waits.
    fn run_script(inst: &str, path: &str) {
        let mut sh = Command::new("/bin/sh")
            .arg("-c")
            .arg(SCRIPT)
            .arg("stdmcp-watchdog")
            .arg(inst)
            .env_clear()
            .env("PATH", path)
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        drop(sh.stdin.take());
        assert!(sh.wait().expect("wait sh").success());
    }

    fn marked_sleep(marker: &str) -> std::process::Child {
        Command::new("sleep")
            .arg("1000")
            .env("STDMCP_CALL", marker)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn sleep")
    }

    #[test]
    fn script_kills_marked_processes_on_eof_with_and_without_grep_z() {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::ExitStatusExt;
        let me = std::process::id();
        // A grep without -z, as some systems have: the per-process fallback is used.
        let fake = std::env::temp_dir().join(format!("stdmcp-watchdog-grep-{me}"));
        std::fs::create_dir_all(&fake).expect("mkdir");
        let grep = fake.join("grep");
        std::fs::write(
            &grep,
            "#!/bin/sh\nfor a; do case $a in -*z*) exit 2 ;; esac; done\nexec /usr/bin/grep \"$@\"\n",
        )
        .expect("write fake grep");
        std::fs::set_permissions(&grep, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let fallback_path = format!("{}:/usr/bin:/bin", fake.display());
        for (n, path) in ["/usr/bin:/bin", fallback_path.as_str()]
            .into_iter()
            .enumerate()
        {
            let inst = format!("{me}-fee{n}");
            let mut doomed = marked_sleep(&format!("{inst}.7"));
            let mut other = marked_sleep(&format!("{inst}0.7")); // another instance
            run_script(&inst, path);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let status = loop {
                if let Some(status) = doomed.try_wait().expect("try_wait") {
                    break status;
                }
                if std::time::Instant::now() > deadline {
                    for c in [&mut doomed, &mut other] {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                    panic!("the marked process survived the watchdog (PATH={path})");
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            };
            assert_eq!(status.signal(), Some(libc::SIGKILL), "PATH={path}");
            assert_eq!(other.try_wait().expect("try_wait"), None, "PATH={path}");
            other.kill().expect("kill other");
            other.wait().expect("wait other");
        }
        let _ = std::fs::remove_dir_all(&fake);
    }

    #[test]
    fn watchdog_starts_and_tracks() {
        let pid = ensure_started().expect("watchdog started");
        assert_eq!(watchdog_pid(), Some(pid));
        let g = track(i32::MAX - 7); // harmless: no such group
        drop(g);
        assert_eq!(ensure_started(), Some(pid), "watchdog was replaced");
        assert!(!gone(pid), "watchdog died");
    }
}
