//! The bytes for a session program's stdin, handed from workers to its writer thread.
//!
//! A queue under a mutex and a condition variable, not a channel: a thread waiting on a
//! crossbeam (or std) channel spins and calls `sched_yield` before it sleeps, and on a CPU
//! shared with a busy process each yield gave that process a whole time slice. Every `K_send`
//! wakes the writer, so a session round trip took 4 ms under contention against 0.1 ms for the
//! same program over a bare pipe (docs/bench.md, sessions under contention).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use stdmcp::sync;

/// See the module doc.
#[derive(Default)]
pub(super) struct Feed {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Vec<u8>>,
    closed: bool,
}

impl Feed {
    /// Queues `bytes`, unless the feed was closed.
    pub(super) fn send(&self, bytes: Vec<u8>) {
        let mut st = sync::lock(&self.state);
        if st.closed {
            return;
        }
        st.queue.push_back(bytes);
        drop(st);
        self.ready.notify_one();
    }

    /// No more input: the writer ends once it has written what is queued.
    pub(super) fn close(&self) {
        sync::lock(&self.state).closed = true;
        self.ready.notify_all();
    }

    /// The next bytes to write; None once the feed is closed and empty.
    pub(super) fn recv(&self) -> Option<Vec<u8>> {
        let mut st = sync::lock(&self.state);
        loop {
            if let Some(bytes) = st.queue.pop_front() {
                return Some(bytes);
            }
            if st.closed {
                return None;
            }
            st = sync::wait(&self.ready, st);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::Feed;
    use std::sync::Arc;

    #[test]
    fn delivers_in_order_then_ends_when_closed() {
        let feed = Arc::new(Feed::default());
        let writer = {
            let feed = Arc::clone(&feed);
            std::thread::spawn(move || std::iter::from_fn(|| feed.recv()).collect::<Vec<_>>())
        };
        for i in 0..100u8 {
            feed.send(vec![i]);
        }
        feed.close();
        feed.send(vec![200]); // after close: dropped
        let got = writer.join().unwrap();
        assert_eq!(got, (0..100u8).map(|i| vec![i]).collect::<Vec<_>>());
    }
}
