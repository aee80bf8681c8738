//! One call's pipes, watched by the thread that spawned it and owns it: a single `poll` over the
//! child's stdin (while there is input left to write), its stdout and stderr, and the two
//! descriptors of its owner (`group.rs`): a pidfd that becomes readable when it exits and the
//! owner's wake-up.
//!
//! Before, two or three I/O threads per call read the output and wrote the input while the
//! spawning thread waited for the exit. Under contention every thread woken is a chance for a
//! busy neighbour to take the CPU for a whole time slice (docs/bench.md, command tools): a
//! `/bin/true` call woke five threads of the server where one thread now does it all.
//!
//! Where the kernel has no pidfd (Linux before 5.3) the owner checks for the exit after every
//! wake-up, and at least every tick.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::capture::{Captured, LineSplitter};
use super::outcome::{LineFn, Stream};
use super::spec::{OutputSink, RunSpec};

/// One read takes what a full pipe holds (64 KiB by default; 16 KiB reads took four reads and
/// four polls for it, docs/bench.md, output drain).
const READ_CHUNK: usize = 64 * 1024;

/// The call's input still to be written, on a non-blocking pipe.
struct StdinLeft<'a> {
    pipe: ChildStdin,
    left: &'a [u8],
}

/// One output stream: its pipe while open, what was kept of it, and its line splitter.
struct Pump {
    stream: Stream,
    pipe: Option<File>,
    capture: Captured,
    lines: LineSplitter,
}

/// The watched pipes of one child; see the module doc.
pub(super) struct Watch<'a> {
    feed: Option<StdinLeft<'a>>,
    pumps: [Pump; 2],
    /// Where every byte read goes too ([`RunSpec::sink`]).
    sink: Option<Arc<dyn OutputSink>>,
    on_line: LineFn,
    buf: Vec<u8>,
}

impl<'a> Watch<'a> {
    /// Takes a child's pipes (and makes its stdin non-blocking).
    pub(super) fn new(
        spec: &'a RunSpec,
        (stdin, stdout, stderr): (Option<ChildStdin>, Option<ChildStdout>, Option<ChildStderr>),
        on_line: LineFn,
    ) -> io::Result<Self> {
        let feed = match (spec.stdin.as_deref(), stdin) {
            (Some(left), Some(pipe)) if !left.is_empty() => {
                set_nonblocking(pipe.as_raw_fd())?;
                Some(StdinLeft { pipe, left })
            }
            _ => None, // no input, or none left: the pipe (if any) is closed here, an EOF
        };
        let pump = |stream, pipe: Option<OwnedFd>, cap| Pump {
            stream,
            pipe: pipe.map(File::from),
            capture: Captured::new(cap),
            lines: LineSplitter::default(),
        };
        Ok(Watch {
            feed,
            pumps: [
                pump(Stream::Stdout, stdout.map(OwnedFd::from), spec.stdout_cap),
                pump(Stream::Stderr, stderr.map(OwnedFd::from), spec.stderr_cap),
            ],
            sink: spec.sink.clone(),
            on_line,
            buf: Vec::new(),
        })
    }

    /// Whether stdout or stderr is still open.
    fn output_open(&self) -> bool {
        self.pumps.iter().any(|p| p.pipe.is_some())
    }

    /// After the child was swept and reaped: reads the pipes until both reach EOF,
    /// for up to `grace` (a process that escaped the group may hold them open; what was read
    /// until then is kept), and returns what stdout and stderr kept.
    pub(super) fn finish(mut self, grace: Duration) -> (Captured, Captured) {
        self.feed = None; // nobody reads the input of a program that has exited
        let deadline = Instant::now() + grace;
        while self.output_open() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                log::debug!("output pipes still open after the child exited; not read further");
                break;
            }
            if let Err(e) = self.poll([-1, -1], Some(left)) {
                log::debug!("poll on child pipes: {e}");
                break;
            }
        }
        let [out, err] = self.pumps.map(|mut p| {
            let on_line = &self.on_line;
            p.lines.finish(&|line| on_line(p.stream, line));
            p.capture
        });
        (out, err)
    }

    /// One `poll` over the open pipes and the owner's two descriptors `extra` (-1: none) for
    /// up to `timeout` (`None`: no limit), then one read or write on each pipe that is ready.
    /// Returns which of `extra` are readable.
    pub(super) fn poll(
        &mut self,
        extra: [RawFd; 2],
        timeout: Option<Duration>,
    ) -> io::Result<[bool; 2]> {
        let pollfd = |fd: RawFd, events| libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // Slots: 0 stdin, 1 stdout, 2 stderr, 3 and 4 the owner's; a closed one has fd -1
        // (poll skips it).
        let mut fds = [
            pollfd(
                self.feed.as_ref().map_or(-1, |f| f.pipe.as_raw_fd()),
                libc::POLLOUT,
            ),
            pollfd(raw(&self.pumps[0].pipe), libc::POLLIN),
            pollfd(raw(&self.pumps[1].pipe), libc::POLLIN),
            pollfd(extra[0], libc::POLLIN),
            pollfd(extra[1], libc::POLLIN),
        ];
        if !poll(&mut fds, timeout)? {
            return Ok([false; 2]);
        }
        let fired = |i: usize| fds[i].fd >= 0 && fds[i].revents != 0;
        if fired(0) {
            self.write_input();
        }
        for i in 0..2 {
            if fired(i + 1) {
                self.read_output(i);
            }
        }
        Ok([fired(3), fired(4)])
    }

    /// Writes as much input as the pipe takes; closes it when all is written or it broke.
    fn write_input(&mut self) {
        let Some(feed) = &mut self.feed else { return };
        match feed.pipe.write(feed.left) {
            Ok(n) => feed.left = &feed.left[n..],
            Err(e) if try_again(&e) => {}
            Err(e) => {
                if e.kind() != io::ErrorKind::BrokenPipe {
                    log::debug!("writing child stdin: {e}");
                }
                feed.left = &[];
            }
        }
        if feed.left.is_empty() {
            self.feed = None; // closing the pipe is the program's end of input
        }
    }

    /// One read from output pipe `i`: kept, passed to the sink, split into lines; closed at EOF.
    fn read_output(&mut self, i: usize) {
        let Watch {
            pumps,
            buf,
            sink,
            on_line,
            ..
        } = self;
        let pump = &mut pumps[i];
        let Some(pipe) = &mut pump.pipe else { return };
        if buf.is_empty() {
            // Touched only as far as reads fill it.
            *buf = vec![0u8; READ_CHUNK];
        }
        match pipe.read(buf) {
            Ok(0) => pump.pipe = None,
            Ok(n) => {
                let data = &buf[..n];
                pump.capture.push(data);
                if let Some(s) = sink {
                    s.write(pump.stream, data);
                }
                let stream = pump.stream;
                pump.lines.feed(data, &|line| on_line(stream, line));
            }
            Err(e) if try_again(&e) => {}
            Err(e) => {
                log::debug!("reading child {:?}: {e}", pump.stream);
                pump.pipe = None;
            }
        }
    }
}

/// A read or write on a non-blocking pipe that found nothing to do, or was interrupted:
/// the next `poll` tells when to try again.
fn try_again(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

/// `poll` over `fds` for up to `timeout` (`None`: no limit, rounded up to whole
/// milliseconds); false when interrupted by a signal before anything was ready.
#[allow(unsafe_code)]
pub(super) fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<bool> {
    // Round up: a sub-millisecond rest must not become a busy loop of 0 ms polls.
    let ms = timeout.map_or(-1, |t| {
        t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int
    });
    // SAFETY: `fds` is a valid array of pollfd of the length passed.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if r < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::Interrupted => Ok(false),
            _ => Err(err),
        };
    }
    Ok(true)
}

fn raw(fd: &Option<File>) -> RawFd {
    fd.as_ref().map_or(-1, AsRawFd::as_raw_fd)
}

#[allow(unsafe_code)]
fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own, reading and setting its status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
