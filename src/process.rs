//! The one runner every child process goes through.
//!
//! [`run`] spawns a program as the leader of its own process group with an
//! explicit environment, feeds its stdin, captures stdout/stderr (bounded,
//! head + tail), enforces a timeout and cancellation (SIGTERM to the group,
//! SIGKILL after a grace period), and after the leader exits sweeps the whole
//! group with SIGKILL so no process of the call outlives the call. A watchdog
//! ([`crate::reaper`]) kills registered groups if the server itself dies.
//!
//! The program that embeds this should ignore SIGPIPE (Rust binaries do by
//! default) so a child that closes its stdin early yields EPIPE, not a signal.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

use crate::cancel::CancelToken;
use crate::reaper;

/// Longest wait between two checks of the cancel flag and the deadline.
const TICK: Duration = Duration::from_millis(20);
/// How long pipe readers may take to finish after the child was reaped.
const READER_GRACE: Duration = Duration::from_millis(250);
/// Pipe readers wake this often (ms) to notice that they were abandoned.
const READER_POLL_MS: i32 = 500;
/// Lines passed to `on_line` are cut to this many bytes.
const LINE_MAX: usize = 1024;

/// What to run and how.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    /// The child's ENTIRE environment (nothing is inherited).
    pub env: Vec<(OsString, OsString)>,
    /// `None`: stdin is /dev/null. `Some(bytes)`: a private pipe, written
    /// from a helper thread, then closed.
    pub stdin: Option<Vec<u8>>,
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when cancelling or timing out.
    pub kill_grace: Duration,
    /// Bytes kept of each stream (first half + last half), see [`Captured`].
    pub stdout_cap: usize,
    pub stderr_cap: usize,
}

impl RunSpec {
    /// A spec with no args, empty environment, no stdin, no timeout, a 2 s
    /// kill grace and 64 KiB caps.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        RunSpec {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            stdin: None,
            timeout: None,
            kill_grace: Duration::from_secs(2),
            stdout_cap: 64 * 1024,
            stderr_cap: 64 * 1024,
        }
    }
}

/// Which output stream a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Bounded capture of one stream: the first `cap/2` bytes, a ring of the
/// last `cap - cap/2` bytes, and the total byte count.
#[derive(Clone, Debug, Default)]
pub struct Captured {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
}

impl Captured {
    /// An empty capture keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Captured {
            head: Vec::new(),
            head_cap,
            tail: VecDeque::new(),
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    /// Append bytes.
    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.tail_cap..]);
        } else {
            let excess = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
            self.tail.extend(data);
        }
    }

    /// Bytes the stream produced in total.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// True if bytes were dropped from the middle.
    pub fn truncated(&self) -> bool {
        self.omitted_bytes() > 0
    }

    /// Bytes dropped from the middle.
    pub fn omitted_bytes(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// The kept bytes (head then tail), without any marker.
    pub fn kept_bytes(&self) -> Vec<u8> {
        let mut v = self.head.clone();
        v.extend(self.tail.iter());
        v
    }

    /// Lossy UTF-8 text; when truncated: the head, then a line
    /// `"\n[... N bytes omitted ...]\n"`, then the tail. Multi-byte characters
    /// cut at the seams are dropped rather than shown as U+FFFD.
    pub fn text(&self) -> String {
        if !self.truncated() {
            return String::from_utf8_lossy(&self.kept_bytes()).into_owned();
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        format!(
            "{}\n[... {} bytes omitted ...]\n{}",
            String::from_utf8_lossy(complete_prefix(&self.head)),
            self.omitted_bytes(),
            String::from_utf8_lossy(complete_suffix(&tail)),
        )
    }
}

/// `b` without an incomplete UTF-8 sequence at its end.
fn complete_prefix(b: &[u8]) -> &[u8] {
    let n = b.len();
    for back in 1..=n.min(4) {
        let c = b[n - back];
        if c & 0xC0 == 0x80 {
            continue; // continuation byte
        }
        let need = match c {
            0xF0..=0xF7 => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if need > back { &b[..n - back] } else { b };
    }
    b
}

/// `b` without continuation bytes (of a character cut off) at its start.
fn complete_suffix(b: &[u8]) -> &[u8] {
    let skip = b.iter().take(3).take_while(|&&c| c & 0xC0 == 0x80).count();
    &b[skip..]
}

/// Result of a finished run.
#[derive(Debug)]
pub struct Outcome {
    /// Exit code, if the leader exited normally.
    pub code: Option<i32>,
    /// Terminating signal, if the leader was killed by one.
    pub signal: Option<i32>,
    pub stdout: Captured,
    pub stderr: Captured,
    /// From spawn to reap.
    pub duration: Duration,
    /// The timeout fired.
    pub timed_out: bool,
    /// The cancel token fired while the child ran.
    pub cancelled: bool,
    pub pid: u32,
}

/// Why [`run`] failed.
#[derive(Debug)]
pub enum RunError {
    /// The program could not be started.
    Spawn { program: PathBuf, source: io::Error },
    /// An I/O error while supervising the child (it was killed and reaped).
    Io(io::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Spawn { program, source } => {
                let why = match source.kind() {
                    io::ErrorKind::NotFound => "not found".to_string(),
                    io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    _ => source.to_string(),
                };
                write!(f, "could not start program `{}`: {why}", program.display())?;
                if why != source.to_string() {
                    write!(f, " ({source})")?;
                }
                Ok(())
            }
            RunError::Io(e) => write!(f, "error while running child process: {e}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Spawn { source, .. } => Some(source),
            RunError::Io(e) => Some(e),
        }
    }
}

/// Callback receiving complete output lines.
pub type LineFn = Arc<dyn Fn(Stream, &str) + Send + Sync>;

/// Run `spec` to completion (or cancellation / timeout).
///
/// `on_line` is called from the pipe-reader threads with each complete
/// output line (lossy UTF-8, without the newline, cut to ~1 KiB); a last line
/// without newline is passed at EOF. `on_spawn` is called once with the
/// child's pid right after spawning.
///
/// The child is spawned AND waited for on the calling thread. This matters:
/// `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits,
/// not the process, so the forking thread must outlive the child.
pub fn run(
    spec: &RunSpec,
    cancel: &CancelToken,
    on_spawn: &mut dyn FnMut(u32),
    on_line: LineFn,
) -> Result<Outcome, RunError> {
    let mut cmd = command(spec);
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| spawn_error(spec, e))?;
    let pid = child.id();
    // The child called setpgid(0, 0) before exec, and spawn() returns only
    // after a successful exec, so the group exists now.
    let pgid = pid as libc::pid_t;
    let registration = reaper::track(pgid);
    let hook_fired = Arc::new(AtomicBool::new(false));
    let hook = {
        let fired = Arc::clone(&hook_fired);
        cancel.on_cancel(move || {
            fired.store(true, Ordering::SeqCst);
            signal_group(pgid, libc::SIGTERM);
        })
    };
    on_spawn(pid);

    let waited = start_io(spec, &mut child, on_line).and_then(|readers| {
        let status = wait_child(&mut child, pgid, spec, cancel, start)?;
        Ok((status, readers))
    });
    let waited = waited.map_err(|e| {
        // Whatever went wrong, never leave the child running or unreaped.
        signal_group(pgid, libc::SIGKILL);
        let _ = child.wait();
        RunError::Io(e)
    });
    let duration = start.elapsed();
    drop(hook);
    // Sweep: kill whatever is left of the group (background jobs etc.).
    // The leader was reaped just above, so its pid could in theory be reused,
    // but a new process would also have to become a group leader with that
    // pid within microseconds for this to hit it.
    signal_group(pgid, libc::SIGKILL);
    drop(registration);

    let ((status, stop), readers) = waited?;
    let (stdout, stderr) = readers.finish(READER_GRACE);
    let fired = hook_fired.load(Ordering::SeqCst);
    Ok(Outcome {
        code: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        duration,
        timed_out: stop == Stop::TimedOut,
        cancelled: stop == Stop::Cancelled || (fired && stop != Stop::TimedOut),
        pid,
    })
}

fn command(spec: &RunSpec) -> Command {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and only makes
    // async-signal-safe calls (prctl, getppid, _exit, syscall, fcntl); it
    // allocates nothing and takes no locks.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_death_signal(parent);
            cloexec_inherited_fds();
            Ok(())
        });
    }
    cmd
}

fn spawn_error(spec: &RunSpec, source: io::Error) -> RunError {
    let source = match &spec.cwd {
        Some(cwd) if !cwd.is_dir() => io::Error::new(
            source.kind(),
            format!(
                "working directory {} is not accessible: {source}",
                cwd.display()
            ),
        ),
        _ => source,
    };
    RunError::Spawn {
        program: spec.program.clone(),
        source,
    }
}

/// In the forked child: die with SIGKILL when the parent (thread) dies, and
/// bail out if the parent already died before the prctl took effect.
#[cfg(target_os = "linux")]
fn set_parent_death_signal(parent: libc::pid_t) {
    // SAFETY: prctl/getppid/_exit are async-signal-safe syscalls.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn set_parent_death_signal(_parent: libc::pid_t) {}

/// In the forked child: mark every fd >= 3 close-on-exec (not closed: std's
/// exec-error pipe must survive until exec).
pub(crate) fn cloexec_inherited_fds() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: raw close_range syscall with the CLOEXEC flag; only flips
        // fd flags, async-signal-safe.
        let r = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if r == 0 {
            return;
        }
    }
    for fd in 3..1024 {
        // SAFETY: fcntl on a possibly-closed fd just fails with EBADF.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
}

/// Send `sig` to process group `pgid`; ESRCH (group gone) is fine.
fn signal_group(pgid: libc::pid_t, sig: libc::c_int) {
    if pgid <= 1 {
        return; // never our own group (0) or init's
    }
    // SAFETY: killpg has no memory-safety preconditions.
    let r = unsafe { libc::killpg(pgid, sig) };
    if r != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ESRCH) {
            log::debug!("killpg({pgid}, {sig}): {err}");
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Exited,
    Cancelled,
    TimedOut,
}

/// Wait for the child on this (the spawning) thread, terminating the group on
/// cancel or deadline. Returns after the leader was reaped.
fn wait_child(
    child: &mut Child,
    pgid: libc::pid_t,
    spec: &RunSpec,
    cancel: &CancelToken,
    start: Instant,
) -> io::Result<(ExitStatus, Stop)> {
    let deadline = spec.timeout.map(|t| start + t);
    let stop = loop {
        if cancel.is_cancelled() {
            break Stop::Cancelled;
        }
        let tick = match deadline {
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    break Stop::TimedOut;
                }
                TICK.min(d - now)
            }
            None => TICK,
        };
        if let Some(status) = child.wait_timeout(tick)? {
            return Ok((status, Stop::Exited));
        }
    };
    signal_group(pgid, libc::SIGTERM);
    if let Some(status) = child.wait_timeout(spec.kill_grace)? {
        return Ok((status, stop));
    }
    signal_group(pgid, libc::SIGKILL);
    Ok((child.wait()?, stop))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The running pipe readers of one call.
struct Readers {
    captures: [Arc<Mutex<Captured>>; 2],
    handles: Vec<JoinHandle<()>>,
    done: mpsc::Receiver<()>,
    abandoned: Arc<AtomicBool>,
}

impl Drop for Readers {
    fn drop(&mut self) {
        // Readers not joined: make them stop calling on_line and exit.
        self.abandoned.store(true, Ordering::Release);
    }
}

/// Start the stdin writer and the two output readers.
fn start_io(spec: &RunSpec, child: &mut Child, on_line: LineFn) -> io::Result<Readers> {
    if let (Some(data), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        // Detached: it ends when everything is written or the pipe breaks.
        thread::Builder::new()
            .name("stdmcp-stdin".into())
            .spawn(move || match stdin.write_all(&data) {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                    log::debug!("writing child stdin: {e}")
                }
                _ => {}
            })?;
    }
    let (done_tx, done) = mpsc::channel();
    let mut readers = Readers {
        captures: [
            Arc::new(Mutex::new(Captured::new(spec.stdout_cap))),
            Arc::new(Mutex::new(Captured::new(spec.stderr_cap))),
        ],
        handles: Vec::new(),
        done,
        abandoned: Arc::new(AtomicBool::new(false)),
    };
    let pipes: [(Stream, Option<Box<dyn ReadFd>>); 2] = [
        (
            Stream::Stdout,
            child.stdout.take().map(|p| Box::new(p) as _),
        ),
        (
            Stream::Stderr,
            child.stderr.take().map(|p| Box::new(p) as _),
        ),
    ];
    for (i, (stream, pipe)) in pipes.into_iter().enumerate() {
        let Some(pipe) = pipe else { continue };
        let pump = Pump {
            stream,
            capture: Arc::clone(&readers.captures[i]),
            on_line: Arc::clone(&on_line),
            abandoned: Arc::clone(&readers.abandoned),
            _done: done_tx.clone(),
        };
        let handle = thread::Builder::new()
            .name(format!("stdmcp-{stream:?}").to_lowercase())
            .spawn(move || pump.run(pipe))?;
        readers.handles.push(handle);
    }
    Ok(readers)
}

impl Readers {
    /// Wait up to `grace` for both readers to reach EOF; readers that don't
    /// (a process that escaped the group holds the pipe) are abandoned and
    /// what they captured so far is used.
    fn finish(mut self, grace: Duration) -> (Captured, Captured) {
        let deadline = Instant::now() + grace;
        let all_done = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.done.recv_timeout(left) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Disconnected) => break true,
                Err(RecvTimeoutError::Timeout) => break false,
            }
        };
        if all_done {
            for h in self.handles.drain(..) {
                let _ = h.join();
            }
        } else {
            log::debug!("output pipes still open after the child exited; abandoning readers");
            self.abandoned.store(true, Ordering::Release);
        }
        let [out, err] = &self.captures;
        let take = |c: &Arc<Mutex<Captured>>| std::mem::replace(&mut *lock(c), Captured::new(0));
        (take(out), take(err))
    }
}

trait ReadFd: Read + AsRawFd + Send {}
impl<T: Read + AsRawFd + Send> ReadFd for T {}

/// One pipe reader's state.
struct Pump {
    stream: Stream,
    capture: Arc<Mutex<Captured>>,
    on_line: LineFn,
    abandoned: Arc<AtomicBool>,
    /// Dropped when the thread ends, which tells `finish` it is done.
    _done: mpsc::Sender<()>,
}

impl Pump {
    fn run(self, mut pipe: Box<dyn ReadFd>) {
        let mut buf = vec![0u8; 16 * 1024];
        let mut lines = LineSplitter::default();
        let emit = |line: &str| {
            if !self.abandoned.load(Ordering::Acquire) {
                (self.on_line)(self.stream, line);
            }
        };
        loop {
            if self.abandoned.load(Ordering::Acquire) {
                return;
            }
            match wait_readable(pipe.as_raw_fd(), READER_POLL_MS) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => log::debug!("poll on child pipe: {e}"), // fall back to a blocking read
            }
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    lock(&self.capture).push(&buf[..n]);
                    lines.feed(&buf[..n], &emit);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log::debug!("reading child {:?}: {e}", self.stream);
                    break;
                }
            }
        }
        lines.finish(&emit);
    }
}

/// Wait until `fd` is readable (or hung up) or `timeout_ms` passed.
fn wait_readable(fd: RawFd, timeout_ms: i32) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, count 1.
    let r = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r > 0)
}

/// Splits a byte stream into lines of at most `LINE_MAX` bytes.
#[derive(Default)]
struct LineSplitter {
    buf: Vec<u8>,
    pending: bool,
}

impl LineSplitter {
    fn feed(&mut self, mut data: &[u8], emit: &dyn Fn(&str)) {
        while let Some(i) = data.iter().position(|&b| b == b'\n') {
            self.push(&data[..i]);
            self.flush(emit);
            data = &data[i + 1..];
        }
        self.push(data);
    }

    fn push(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.pending = true;
        let room = LINE_MAX.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&data[..room.min(data.len())]);
    }

    fn flush(&mut self, emit: &dyn Fn(&str)) {
        let mut line: &[u8] = &self.buf;
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        emit(&String::from_utf8_lossy(complete_prefix(line)));
        self.buf.clear();
        self.pending = false;
    }

    fn finish(&mut self, emit: &dyn Fn(&str)) {
        if self.pending {
            self.flush(emit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(cap: usize, chunks: &[&[u8]]) -> Captured {
        let mut c = Captured::new(cap);
        for ch in chunks {
            c.push(ch);
        }
        c
    }

    #[test]
    fn captured_small_output_is_kept_whole() {
        let c = cap(10, &[b"abc", b"def", b"ghij"]);
        assert_eq!(c.total_bytes(), 10);
        assert!(!c.truncated());
        assert_eq!(c.omitted_bytes(), 0);
        assert_eq!(c.text(), "abcdefghij");
    }

    #[test]
    fn captured_keeps_head_and_tail() {
        let c = cap(10, &[b"0123", b"456789", b"ABCDEFGHIJ", b"KLMNOP"]);
        assert_eq!(c.total_bytes(), 26);
        assert!(c.truncated());
        assert_eq!(c.omitted_bytes(), 16);
        assert_eq!(c.kept_bytes(), b"01234LMNOP");
        assert_eq!(c.text(), "01234\n[... 16 bytes omitted ...]\nLMNOP");
        // One big chunk behaves the same as many small ones.
        let d = cap(10, &[b"0123456789ABCDEFGHIJKLMNOP"]);
        assert_eq!(d.text(), c.text());
        let bytes: Vec<&[u8]> = b"0123456789ABCDEFGHIJKLMNOP".chunks(1).collect();
        assert_eq!(cap(10, &bytes).text(), c.text());
    }

    #[test]
    fn captured_odd_and_zero_caps() {
        let c = cap(5, &[b"abcdefgh"]);
        assert_eq!(c.kept_bytes(), b"abfgh");
        let z = cap(0, &[b"abc"]);
        assert_eq!(z.omitted_bytes(), 3);
        assert_eq!(z.text(), "\n[... 3 bytes omitted ...]\n");
    }

    #[test]
    fn captured_text_drops_cut_characters() {
        // "é" is 2 bytes; cap 6 => head 3 bytes "aé" ... tail 3 bytes.
        let c = cap(6, &["aéé-xyzéb".as_bytes()]);
        assert!(c.truncated());
        let t = c.text();
        assert!(!t.contains('\u{fffd}'), "{t:?}");
        assert!(t.starts_with("aé\n[..."), "{t:?}");
        assert!(t.ends_with("]\nb") || t.ends_with("]\néb"), "{t:?}");
        assert_eq!(complete_prefix("aé".as_bytes()), "aé".as_bytes());
        assert_eq!(complete_prefix(&"a€".as_bytes()[..3]), b"a");
        assert_eq!(complete_suffix(&"€b".as_bytes()[1..]), b"b");
    }

    fn split(chunks: &[&[u8]]) -> Vec<String> {
        let out = std::cell::RefCell::new(Vec::new());
        let emit = |l: &str| out.borrow_mut().push(l.to_string());
        let mut s = LineSplitter::default();
        for ch in chunks {
            s.feed(ch, &emit);
        }
        s.finish(&emit);
        out.into_inner()
    }

    #[test]
    fn line_splitter() {
        assert_eq!(
            split(&[b"a\nb", b"c\r\n\n", b"tail"]),
            ["a", "bc", "", "tail"]
        );
        assert_eq!(split(&[b"x\n"]), ["x"]);
        let long = vec![b'z'; 5000];
        let lines = split(&[&long, b"\nnext\n"]);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), LINE_MAX);
        assert_eq!(lines[1], "next");
    }

    #[test]
    fn spawn_error_messages() {
        let e = spawn_error(
            &RunSpec::new("/nope"),
            io::Error::from(io::ErrorKind::NotFound),
        );
        assert!(e
            .to_string()
            .starts_with("could not start program `/nope`: not found"));
        let mut spec = RunSpec::new("true");
        spec.cwd = Some("/definitely/not/a/dir".into());
        let e = spawn_error(&spec, io::Error::from(io::ErrorKind::NotFound));
        assert!(e.to_string().contains("working directory"), "{e}");
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn signal_group_refuses_special_groups() {
        // Must be no-ops (killpg(0) would hit the test harness itself).
        signal_group(0, libc::SIGKILL);
        signal_group(1, libc::SIGKILL);
        signal_group(-5, libc::SIGKILL);
    }
}
