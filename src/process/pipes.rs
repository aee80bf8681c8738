//! The stdin writer and the stdout/stderr readers of one call, on threads of a pool of their
//! own (`stdmcp-io`): idle threads are reused, as the server's workers are, because starting
//! two or three threads per call was a tenth of what a `/bin/true` tool cost (docs/bench.md).

use std::io::{self, Read, Write};
use std::os::unix::io::{AsRawFd, RawFd};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::pool::Pool;

use super::capture::{Captured, LineSplitter};
use super::{LineFn, RunSpec, Stream};

/// Pipe readers wake this often (ms) to notice that they were abandoned.
const READER_POLL_MS: i32 = 500;
/// How long an idle I/O thread waits for its next pipe before it exits.
const IO_KEEP_ALIVE: Duration = Duration::from_secs(10);
/// An I/O thread's stack: its buffer is on the heap; `on_line` serialises a progress message.
const IO_STACK: usize = 256 * 1024;

/// The I/O threads: as many as pipes are open (a pipe left unread would stall its program).
fn io_pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool::new("stdmcp-io", usize::MAX, IO_KEEP_ALIVE, IO_STACK))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The running pipe readers of one call.
pub(super) struct Readers {
    captures: [Arc<Mutex<Captured>>; 2],
    /// Disconnected when both readers have ended (each holds a sender).
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
pub(super) fn start_io(spec: &RunSpec, child: &mut Child, on_line: LineFn) -> io::Result<Readers> {
    if let (Some(data), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        // Not waited for: it ends when everything is written or the pipe breaks.
        // A thread that cannot start is an error of the call (its program is then killed):
        // going on would hand the program an early end of input, or lose its output.
        io_pool().try_submit(Box::new(move || match stdin.write_all(&data) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                log::debug!("writing child stdin: {e}")
            }
            _ => {}
        }))?;
    }
    let (done_tx, done) = mpsc::channel();
    let readers = Readers {
        captures: [
            Arc::new(Mutex::new(Captured::new(spec.stdout_cap))),
            Arc::new(Mutex::new(Captured::new(spec.stderr_cap))),
        ],
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
            spool: spec.spool.clone(),
            abandoned: Arc::clone(&readers.abandoned),
            _done: done_tx.clone(),
        };
        io_pool().try_submit(Box::new(move || pump.run(pipe)))?;
    }
    Ok(readers)
}

impl Readers {
    /// Wait up to `grace` for both readers to reach EOF; readers that don't
    /// (a process that escaped the group holds the pipe) are abandoned and
    /// what they captured so far is used.
    pub(super) fn finish(self, grace: Duration) -> (Captured, Captured) {
        let deadline = Instant::now() + grace;
        let all_done = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.done.recv_timeout(left) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Disconnected) => break true,
                Err(RecvTimeoutError::Timeout) => break false,
            }
        };
        if !all_done {
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
    /// The call's entry in the output spool: every byte read goes there too.
    spool: Option<crate::spool::Entry>,
    abandoned: Arc<AtomicBool>,
    /// Dropped when the thread ends, which tells `finish` it is done.
    _done: mpsc::Sender<()>,
}

impl Pump {
    fn run(self, mut pipe: Box<dyn ReadFd>) {
        // A pipe holds 64 KiB by default: one read takes all that is buffered (16 KiB reads
        // took four reads and four polls for it; docs/bench.md, output drain). The pages are
        // touched only as far as a read fills them.
        let mut buf = vec![0u8; 64 * 1024];
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
                    if let Some(s) = &self.spool {
                        s.write(self.stream, &buf[..n]);
                    }
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
#[allow(unsafe_code)]
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
