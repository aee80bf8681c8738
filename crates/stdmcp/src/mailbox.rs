//! Messages from any thread to one that waits for them, on a mutex and a condition variable:
//! the main thread's lifecycle events, the writer's end, a tool's wait for the client's
//! answer to its request, the client's frames; in the `stdmcp` command, a session program's
//! start and a portfolio's members' ends. The one way threads of this crate and the command
//! pass messages.
//!
//! Not a crossbeam (or std) channel, for two measured reasons. A thread waiting on such a
//! channel spins and calls `sched_yield` before it sleeps, and on a CPU shared with a busy
//! process each yield can cost a time slice (`server/bell.rs`, docs/bench.md, contention).
//! And each message type is its own copy of the channel's code, for the three kinds of
//! channel it may be at run time: three message types were 24 KB of the `everything` binary.

use std::collections::VecDeque;
use std::ops::Deref;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::sync::{lock, wait, wait_timeout};

/// Any thread sends, one receives. Unbounded: each use holds a few messages at most (a
/// call's answer and its cancellation; a session's lifecycle events; the frames a client
/// has not read yet, as many as the server sent).
pub struct Mailbox<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

struct State<T> {
    queue: VecDeque<T>,
    closed: bool,
}

/// Why a wait ended without a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoMessage {
    /// The deadline passed.
    TimedOut,
    /// The mailbox was closed, and every message sent before was received.
    Closed,
}

impl<T> Default for Mailbox<T> {
    fn default() -> Mailbox<T> {
        Mailbox {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
        }
    }
}

impl<T> Mailbox<T> {
    /// Leaves `message` for the receiver, without waiting; false (and the message dropped)
    /// once the mailbox is closed.
    pub fn send(&self, message: T) -> bool {
        let mut st = lock(&self.state);
        if st.closed {
            return false;
        }
        st.queue.push_back(message);
        drop(st);
        self.ready.notify_one();
        true
    }

    /// No more messages: the receiver gets those already sent, then [`NoMessage::Closed`].
    pub fn close(&self) {
        lock(&self.state).closed = true;
        self.ready.notify_all();
    }

    /// The next message, waiting for it as long as it takes; `None` once the mailbox is
    /// closed and every message sent before was received.
    pub fn recv(&self) -> Option<T> {
        self.recv_until(None).ok()
    }

    /// The next message, waiting for it until `deadline` (`None`: as long as it takes).
    pub fn recv_until(&self, deadline: Option<Instant>) -> Result<T, NoMessage> {
        let mut st = lock(&self.state);
        loop {
            if let Some(message) = st.queue.pop_front() {
                return Ok(message);
            }
            if st.closed {
                return Err(NoMessage::Closed);
            }
            st = match deadline {
                None => wait(&self.ready, st),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(NoMessage::TimedOut);
                    }
                    wait_timeout(&self.ready, st, deadline - now).0
                }
            };
        }
    }
}

/// A mailbox that is closed when this handle is dropped, however its holder ends (a panic
/// included): a sender's, so that the receiver learns that nothing more will come; or the
/// receiver's, so that its senders stop.
pub struct Closing<T>(pub Arc<Mailbox<T>>);

impl<T> Drop for Closing<T> {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl<T> Deref for Closing<T> {
    type Target = Mailbox<T>;

    fn deref(&self) -> &Mailbox<T> {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::{Closing, Mailbox, NoMessage};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn messages_come_in_order_then_closed_and_a_wait_without_one_times_out() {
        let mailbox = Mailbox::default();
        assert!(mailbox.send(1) && mailbox.send(2));
        assert_eq!(mailbox.recv_until(Some(Instant::now())), Ok(1));
        let past = Instant::now();
        assert_eq!(mailbox.recv_until(Some(past)), Ok(2));
        assert_eq!(mailbox.recv_until(Some(past)), Err(NoMessage::TimedOut));
        assert!(mailbox.send(3));
        mailbox.close();
        assert!(!mailbox.send(4), "a closed mailbox takes nothing");
        // A deadline only to detect a close that is not seen.
        let deadline = Some(Instant::now() + Duration::from_secs(5));
        assert_eq!(mailbox.recv_until(deadline), Ok(3));
        assert_eq!(mailbox.recv_until(deadline), Err(NoMessage::Closed));
    }

    #[test]
    fn a_receiver_gets_what_another_thread_sends_then_its_close() {
        let mailbox = Arc::new(Mailbox::default());
        let sender = Arc::clone(&mailbox);
        let t = std::thread::spawn(move || {
            sender.send("answer");
            sender.close();
        });
        // Deadlines only to detect a lost wake-up.
        let deadline = Instant::now() + Duration::from_secs(30);
        assert_eq!(mailbox.recv_until(Some(deadline)), Ok("answer"));
        assert_eq!(mailbox.recv_until(Some(deadline)), Err(NoMessage::Closed));
        t.join().expect("the sender panicked");
    }

    #[test]
    fn a_sender_that_panics_still_closes_its_mailbox() {
        let mailbox = Arc::new(Mailbox::<u8>::default());
        let sender = Closing(Arc::clone(&mailbox));
        let t = std::thread::spawn(move || {
            let _sender = sender;
            panic!("a reader that panics");
        });
        assert!(t.join().is_err());
        let deadline = Some(Instant::now() + Duration::from_secs(5));
        assert_eq!(mailbox.recv_until(deadline), Err(NoMessage::Closed));
    }
}
