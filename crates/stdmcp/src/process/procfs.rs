//! What `/proc` says about one process: its `stat` line, and whether its environment carries
//! a call's marker.
//!
//! Both change under the reader. A process replacing its program (`execve`) reports an empty
//! environment between the new address space and the new program's stack: that does not tell
//! whose it is, so [`marked`] answers [`Marked::Unsure`] and the sweep looks again. An exiting
//! one has no environment to read either (empty, or an error on recent kernels) once its
//! memory is gone and before it is a zombie, possibly for long (stuck in the kernel on its way
//! out); it needs no killing, and its flags say it is exiting ([`Stat::is_exiting`]), so the
//! sweep does not look at it again. A process whose first thread exited while others run
//! shows as a zombie (`Z`) though it is alive ([`Stat::is_dead`] counts its threads) and has
//! no environment of its own to read: [`marked`] reads it through one of its live threads.

/// One line of `/proc/PID/stat`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stat {
    pub(super) pid: i32,
    pub(super) state: u8,
    pub(super) ppid: i32,
    pub(super) pgid: i32,
    pub(super) sid: i32,
    /// The kernel's flags of its (first) thread (`PF_*`).
    pub(super) flags: u64,
    pub(super) start: u64,
    /// Threads of the process (its first one included while the process lives).
    pub(super) threads: i64,
    /// Where its environment starts and ends in its memory: 0 while an `execve` builds the
    /// new program's stack and once the memory is gone (0 too on kernels before 3.5).
    pub(super) env_start: u64,
    pub(super) env_end: u64,
}

impl Stat {
    /// Dead: a zombie (or being reaped) with no thread left running. A process whose first
    /// thread exited while others run also shows `Z`, and lives.
    pub(super) fn is_dead(&self) -> bool {
        matches!(self.state, b'Z' | b'X') && self.threads <= 1
    }

    /// On its way out: its one thread is exiting (`PF_EXITING`), it is not a zombie yet.
    pub(super) fn is_exiting(&self) -> bool {
        self.thread_exiting() && self.threads <= 1 && !self.is_dead()
    }

    /// Its (first) thread is exiting.
    fn thread_exiting(&self) -> bool {
        self.flags & PF_EXITING != 0
    }
}

/// Whether process `pid` has ended or is ending: no longer there, a zombie, or on its way out.
pub(super) fn has_ended(pid: i32) -> bool {
    stat(pid).is_none_or(|p| p.is_dead() || p.is_exiting())
}

/// The task flag of a thread that is exiting (`include/linux/sched.h`; stable since 2.6).
const PF_EXITING: u64 = 0x4;

/// Reads `/proc/PID/stat`. A sweep reads this file for every pid of the call's window, or of
/// every process of the machine, so this is most of what it costs (docs/bench.md).
pub(super) fn stat(pid: i32) -> Option<Stat> {
    read_stat(&format!("/proc/{pid}/stat"), pid)
}

/// Reads the `stat` file at `path` (of process or thread `pid`) into a buffer on the stack:
/// one `read` (the kernel writes the whole line at once), no allocation. The command name is
/// read lossily: a process whose name is not UTF-8 is not skipped.
fn read_stat(path: &str, pid: i32) -> Option<Stat> {
    use std::io::Read;
    // The line is well under 1 KiB: a 16-byte name and 52 numbers.
    let mut buf = [0u8; 2048];
    let mut f = std::fs::File::open(path).ok()?;
    let mut n = 0;
    while n < buf.len() && !buf[..n].ends_with(b"\n") {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    parse_stat(pid, &String::from_utf8_lossy(&buf[..n]))
}

/// Parse a `/proc/PID/stat` line; the command name may hold spaces and parentheses. Field
/// numbers are those of proc(5), counted from 1 (the pid).
fn parse_stat(pid: i32, text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(") ")?;
    // `rest` starts at field 3, the state.
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| f.get(n - 3).copied();
    let optional = |n: usize| field(n).and_then(|v| v.parse().ok()).unwrap_or(0);
    Some(Stat {
        pid,
        state: *field(3)?.as_bytes().first()?,
        ppid: field(4)?.parse().ok()?,
        pgid: field(5)?.parse().ok()?,
        sid: field(6)?.parse().ok()?,
        flags: optional(9),
        threads: field(20)?.parse().ok()?,
        start: field(22)?.parse().ok()?,
        env_start: optional(50),
        env_end: optional(51),
    })
}

/// What a process's environment says about a call's marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Marked {
    Yes,
    No,
    /// Cannot be told now (the process is replacing its program): look again.
    Unsure,
    /// Cannot be told, and needs no telling: every thread of the process is exiting.
    Exiting,
}

/// Whether process `p` (its stat just read) has `needle` (`NAME=value`) as a whole entry of
/// its environment. A process that cannot be read (gone, another user's, non-dumpable) is
/// `No`; an empty environment is `No` only when `p`'s stat says the program really has none
/// (`env -i`). A process whose first thread has no memory left (it exited while others run)
/// is read through its other threads: its `environ` fails with `ESRCH` (recent kernels) or
/// reads empty (older ones).
pub(super) fn marked(p: &Stat, needle: &[u8]) -> Marked {
    match std::fs::read(format!("/proc/{}/environ", p.pid)) {
        Ok(env) if !env.is_empty() => carries(&env, needle),
        Ok(_) if p.env_end != 0 && p.env_start == p.env_end => Marked::No,
        Ok(_) if p.threads > 1 => marked_through_threads(p.pid, needle),
        Ok(_) => Marked::Unsure,
        Err(e) if p.threads > 1 && has_no_memory(&e) => marked_through_threads(p.pid, needle),
        Err(_) => Marked::No,
    }
}

/// The error of reading the environment of a thread with no memory (exited or exiting).
fn has_no_memory(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ESRCH)
}

fn carries(env: &[u8], needle: &[u8]) -> Marked {
    if env.split(|&b| b == 0).any(|entry| entry == needle) {
        Marked::Yes
    } else {
        Marked::No
    }
}

/// The environment of a process whose first thread exited, read through another thread (they
/// share it). When none has one to show and every other thread is exiting, the process is.
/// When no other thread is left, or one has no environment yet is not exiting (the process
/// is replacing its program: `execve` ends the other threads first), look again.
fn marked_through_threads(pid: i32, needle: &[u8]) -> Marked {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Marked::No; // gone
    };
    let (mut seen, mut all_exiting) = (false, true);
    for task in tasks.flatten() {
        let name = task.file_name();
        let Some(tid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if tid == pid {
            continue;
        }
        match std::fs::read(task.path().join("environ")) {
            Ok(env) if !env.is_empty() => return carries(&env, needle),
            Ok(_) => {}
            Err(e) if has_no_memory(&e) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue, // gone
            Err(_) => return Marked::No, // not ours to read, as for a single thread
        }
        let thread = read_stat(&format!("/proc/{pid}/task/{tid}/stat"), tid);
        seen = true;
        all_exiting &= thread.is_some_and(|t| t.thread_exiting());
    }
    if seen && all_exiting {
        Marked::Exiting
    } else {
        Marked::Unsure
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_reads_this_process() {
        let me = std::process::id() as i32;
        let p = stat(me).expect("own stat");
        assert_eq!(p.pid, me);
        // The session id is 0 inside a PID namespace whose session leader is outside it.
        assert!(p.start > 0 && p.sid >= 0);
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // a bare child with an odd name, to read its stat
    fn stat_reads_a_process_whose_name_is_not_utf8() {
        use std::os::unix::ffi::OsStrExt;
        // The kernel names a process after the file name it was executed by: a symbolic
        // link to `sleep` whose name has a byte that is not UTF-8 gives such a name (a link,
        // not a copy: writing an executable races with other tests' forks, ETXTBSY). The
        // sweep must still see it (it once read the line as UTF-8 and skipped it).
        let dir = std::env::temp_dir().join(format!("stdmcp-orphans-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let exe = dir.join(std::ffi::OsStr::from_bytes(b"sl\xffp"));
        std::os::unix::fs::symlink("/bin/sleep", &exe).expect("link to sleep");
        let mut child = std::process::Command::new(&exe)
            .arg("30")
            .spawn()
            .expect("start sleep by the link");
        let pid = child.id() as i32;
        let seen = stat(pid);
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_file(&exe);
        let _ = std::fs::remove_dir(&dir);
        let p = seen.expect("the stat of a process whose name is not UTF-8");
        assert_eq!((p.pid, p.ppid), (pid, std::process::id() as i32));
    }

    #[test]
    fn stat_reads_a_session_id_of_zero_in_a_container() {
        // Containers (CI) run us in a session whose leader is outside our PID namespace.
        let line = "7 (a) b) S 1 7 0 0 -1 4194308 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0";
        let p = parse_stat(7, line).expect("parsed");
        assert_eq!((p.pid, p.ppid, p.pgid, p.sid, p.start), (7, 1, 7, 0, 42));
        // Field 9, the flags: this one is exiting (PF_EXITING, 0x4).
        assert_eq!(p.flags, 0x40_0004);
        assert!(p.is_exiting());
    }

    #[test]
    fn stat_reads_threads_and_where_the_environment_is() {
        let me = stat(std::process::id() as i32).expect("own stat");
        assert!(me.threads >= 1, "{me:?}");
        assert!(me.env_start != 0 && me.env_end > me.env_start, "{me:?}");
        assert!(!me.is_dead());
        let mut zombie = me;
        zombie.state = b'Z';
        zombie.threads = 1;
        assert!(zombie.is_dead());
        // Its first thread exited, another runs.
        zombie.threads = 2;
        assert!(!zombie.is_dead());
    }

    #[test]
    fn this_process_is_read_as_marked_by_its_own_variables() {
        let me = stat(std::process::id() as i32).expect("own stat");
        let env = std::fs::read(format!("/proc/{}/environ", me.pid)).expect("own environ");
        let first = env.split(|&b| b == 0).next().expect("an entry").to_vec();
        assert_eq!(marked(&me, &first), Marked::Yes);
        // A prefix of an entry is not the entry.
        assert_eq!(marked(&me, &first[..first.len() - 1]), Marked::No);
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // a bare child with no environment at all
    fn an_empty_environment_is_no_marker_and_not_a_program_being_replaced() {
        let mut child = std::process::Command::new("/bin/sleep")
            .arg("30")
            .env_clear()
            .spawn()
            .expect("sleep with no environment");
        let pid = child.id() as i32;
        // Until its exec has built the new stack, the child is rightly unsure; not after.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let seen = loop {
            let p = stat(pid).expect("child stat");
            match marked(&p, b"STDMCP_CALL=x") {
                Marked::Unsure if std::time::Instant::now() < deadline => {
                    std::thread::yield_now();
                }
                m => break m,
            }
        };
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(seen, Marked::No);
    }
}
