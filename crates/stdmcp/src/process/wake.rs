//! How other threads reach the owner of a started program ([`super::group::Group`]) without
//! signalling anything themselves: a cancel hook wakes it ([`Wake::wake`]), a session asks it
//! for a signal ([`Wake::ask`]). The owner polls the wake-up descriptor (an eventfd) with the
//! program's pipes and pidfd, and then sends the signals asked for, itself, while the
//! program's leader is not reaped: a signal can never reach a process group whose id was
//! handed to another process since.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The wake-up of one program's owner; shared (an `Arc`) with whoever may wake it.
#[derive(Debug)]
pub(super) struct Wake {
    /// Readable once woken, until the owner reads it. `None` when it could not be made (out
    /// of descriptors): the owner then looks every `TICK`.
    fd: Option<OwnedFd>,
    /// Bit `n` set: signal `n` was asked for and not sent yet.
    asked: AtomicU64,
    /// The program was reaped: nothing asked is sent any more.
    ended: AtomicBool,
}

impl Wake {
    /// A new wake-up (an eventfd, close-on-exec and non-blocking).
    pub(super) fn new() -> Wake {
        Wake {
            fd: eventfd(),
            asked: AtomicU64::new(0),
            ended: AtomicBool::new(false),
        }
    }

    /// Wakes the owner (from any thread; never blocks).
    #[allow(unsafe_code)]
    pub(super) fn wake(&self) {
        if let Some(fd) = &self.fd {
            let one: u64 = 1;
            // SAFETY: writes the 8 bytes of `one` to an eventfd we own. A full counter
            // (EAGAIN) means the owner is woken already.
            unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
    }

    /// Asks the owner to send `sig` to the program's process group, and wakes it; nothing
    /// once the program was reaped (the signal would reach nothing of it).
    pub(super) fn ask(&self, sig: libc::c_int) {
        if !(1..64).contains(&sig) || self.ended.load(Ordering::Acquire) {
            return;
        }
        self.asked.fetch_or(1u64 << sig, Ordering::AcqRel);
        self.wake();
    }

    /// The descriptor the owner polls, if any.
    pub(super) fn fd(&self) -> Option<RawFd> {
        self.fd.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// For the owner, once woken: clears the wake-up.
    #[allow(unsafe_code)]
    pub(super) fn clear(&self) {
        if let Some(fd) = &self.fd {
            let mut n: u64 = 0;
            // SAFETY: reads 8 bytes into `n` from an eventfd we own (EAGAIN when not woken).
            unsafe { libc::read(fd.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
        }
    }

    /// For the owner: the signals asked for since the last call, lowest first.
    pub(super) fn take_asked(&self) -> impl Iterator<Item = libc::c_int> {
        let asked = self.asked.swap(0, Ordering::AcqRel);
        (1..64).filter(move |s| asked & (1u64 << s) != 0)
    }

    /// For the owner, when it reaps the program: later requests are dropped.
    pub(super) fn end(&self) {
        self.ended.store(true, Ordering::Release);
    }
}

/// A new eventfd, or `None` (logged) where it cannot be made.
#[allow(unsafe_code)]
fn eventfd() -> Option<OwnedFd> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: eventfd takes an initial value and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd >= 0 {
            // SAFETY: `fd` was just opened for us alone.
            return Some(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        log::debug!(
            "eventfd: {}; the program's owner looks for cancellation every tick",
            io::Error::last_os_error()
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        #[allow(unsafe_code)]
        // SAFETY: one valid pollfd, no wait.
        let r = unsafe { libc::poll(&mut p, 1, 0) };
        r == 1
    }

    #[test]
    fn a_wake_is_seen_until_cleared_and_asked_signals_are_taken_once() {
        let w = Wake::new();
        let fd = w.fd().expect("an eventfd");
        assert!(!readable(fd));
        w.wake();
        w.wake();
        assert!(readable(fd));
        w.clear();
        assert!(!readable(fd));
        w.ask(libc::SIGINT);
        w.ask(libc::SIGKILL);
        w.ask(libc::SIGINT);
        w.ask(0);
        w.ask(99);
        assert!(readable(fd));
        let asked: Vec<_> = w.take_asked().collect();
        assert_eq!(asked, [libc::SIGINT, libc::SIGKILL]);
        assert_eq!(w.take_asked().count(), 0);
        w.end();
        w.clear();
        w.ask(libc::SIGTERM);
        assert!(!readable(fd), "asked after the end: nothing");
        assert_eq!(w.take_asked().count(), 0);
    }
}
