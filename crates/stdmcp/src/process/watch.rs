//! One call's pipes and exit, watched by the thread that spawned it: a single `poll` over the
//! child's stdin (while there is input left to write), its stdout and stderr, and a pidfd that
//! becomes readable when it exits.
//!
//! Before, two or three I/O threads per call read the output and wrote the input while the
//! spawning thread waited for the exit. Under contention every thread woken is a chance for a
//! busy neighbour to take the CPU for a whole time slice (docs/bench.md, command tools): a
//! `/bin/true` call woke five threads of the server where one thread now does it all.
//!
//! Where the kernel has no pidfd (Linux before 5.3) the exit is checked with `try_wait` after
//! every wake-up, and once the pipes are closed the caller waits for it with `wait-timeout`
//! (woken by SIGCHLD).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, ChildStdin};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::capture::{Captured, LineSplitter};
use super::{LineFn, OutputSink, RunSpec, Stream};

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

/// The watched pipes and exit of one child; see the module doc.
pub(super) struct Watch<'a> {
    feed: Option<StdinLeft<'a>>,
    pumps: [Pump; 2],
    pidfd: Option<OwnedFd>,
    /// Where every byte read goes too ([`RunSpec::sink`]).
    sink: Option<Arc<dyn OutputSink>>,
    on_line: LineFn,
    buf: Vec<u8>,
}

impl<'a> Watch<'a> {
    /// Takes `child`'s pipes (and makes its stdin non-blocking) and opens a pidfd for it;
    /// `child` must not have been reaped.
    pub(super) fn new(spec: &'a RunSpec, child: &mut Child, on_line: LineFn) -> io::Result<Self> {
        let feed = match (spec.stdin.as_deref(), child.stdin.take()) {
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
                pump(
                    Stream::Stdout,
                    child.stdout.take().map(OwnedFd::from),
                    spec.stdout_cap,
                ),
                pump(
                    Stream::Stderr,
                    child.stderr.take().map(OwnedFd::from),
                    spec.stderr_cap,
                ),
            ],
            pidfd: open_pidfd(child.id()),
            sink: spec.sink.clone(),
            on_line,
            buf: Vec::new(),
        })
    }

    /// Waits up to `timeout` for the child's pipes or its exit, and serves the pipes that are
    /// ready. Returns whether the child may have exited (then `try_wait` tells): its pidfd is
    /// readable, or there is no pidfd.
    pub(super) fn wait(&mut self, timeout: Duration) -> io::Result<bool> {
        let exit = self.pidfd.as_ref().map(AsRawFd::as_raw_fd);
        let exited = self.poll(exit, timeout)?;
        Ok(exit.is_none() || exited)
    }

    /// Whether stdout or stderr is still open.
    fn output_open(&self) -> bool {
        self.pumps.iter().any(|p| p.pipe.is_some())
    }

    /// Whether [`Watch::wait`] wakes when the child exits: it has a pidfd, or a pipe is still
    /// open (a child's pipes reach EOF when it exits, unless something it started holds them).
    pub(super) fn exit_pollable(&self) -> bool {
        self.pidfd.is_some() || self.feed.is_some() || self.output_open()
    }

    /// After the child was reaped and its group swept: reads the pipes until both reach EOF,
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
            if let Err(e) = self.poll(None, left) {
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

    /// One `poll` over the open pipes (and `exit`, the pidfd), then one read or write on each
    /// pipe that is ready. Returns whether the pidfd was readable: the child has exited.
    #[allow(unsafe_code)]
    fn poll(&mut self, exit: Option<RawFd>, timeout: Duration) -> io::Result<bool> {
        let pollfd = |fd: RawFd, events| libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // Slots: 0 stdin, 1 stdout, 2 stderr, 3 pidfd; a closed one has fd -1 (poll skips it).
        let mut fds = [
            pollfd(
                self.feed.as_ref().map_or(-1, |f| f.pipe.as_raw_fd()),
                libc::POLLOUT,
            ),
            pollfd(raw(&self.pumps[0].pipe), libc::POLLIN),
            pollfd(raw(&self.pumps[1].pipe), libc::POLLIN),
            pollfd(exit.unwrap_or(-1), libc::POLLIN),
        ];
        // Round up: a sub-millisecond rest must not become a busy loop of 0 ms polls.
        let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `fds` is a valid array of pollfd of the length passed.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if r < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::Interrupted => Ok(false),
                _ => Err(err),
            };
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
        Ok(fired(3))
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

/// A pidfd for the process `pid` (a child not reaped yet), where the kernel has them.
#[allow(unsafe_code)]
fn open_pidfd(pid: u32) -> Option<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; the
        // child is not reaped yet, so its pid still names it.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd >= 0 {
            // SAFETY: `fd` is a descriptor the kernel just opened for us alone.
            return Some(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) });
        }
    }
    let _ = pid;
    None
}
