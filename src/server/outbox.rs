//! The writer's queue: a crossbeam channel, plus a doorbell so that the writer sleeps while
//! the queue is empty instead of spinning. (A blocking crossbeam receive spins and yields
//! before it sleeps; on a busy or single CPU the writer's yields were a third of the server's
//! time per sequential call.) A sender rings only when the writer is asleep.

use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};

use crossbeam_channel::{Receiver, Sender, TryRecvError};

struct Bell {
    sleeping: AtomicBool,
    writer: OnceLock<Thread>,
}

impl Bell {
    fn ring(&self) {
        if let Some(t) = self.writer.get() {
            t.unpark();
        }
    }
}

/// The sending side: bytes for stdout, in the order they must be written.
pub(crate) struct Outbox {
    /// `None` only while dropping.
    tx: Option<Sender<Vec<u8>>>,
    bell: Arc<Bell>,
}

impl Clone for Outbox {
    fn clone(&self) -> Outbox {
        Outbox {
            tx: self.tx.clone(),
            bell: self.bell.clone(),
        }
    }
}

/// The writer's side.
pub(crate) struct Inbox {
    rx: Receiver<Vec<u8>>,
    bell: Arc<Bell>,
}

/// A connected pair.
pub(crate) fn outbox() -> (Outbox, Inbox) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let bell = Arc::new(Bell {
        sleeping: AtomicBool::new(false),
        writer: OnceLock::new(),
    });
    (
        Outbox {
            tx: Some(tx),
            bell: bell.clone(),
        },
        Inbox { rx, bell },
    )
}

impl Outbox {
    /// Queues bytes; wakes the writer if it sleeps.
    pub fn send(&self, bytes: Vec<u8>) {
        if self.push(bytes) {
            self.ring();
        }
    }

    /// Queues bytes without waking the writer; true if it must be woken with [`Outbox::ring`]
    /// (which may happen later, outside a lock).
    pub fn push(&self, bytes: Vec<u8>) -> bool {
        if let Some(tx) = &self.tx {
            let _ = tx.send(bytes);
        }
        // Pairs with the fence in `Inbox::recv`: either the writer's re-check sees the
        // message, or this load sees it asleep.
        fence(Ordering::SeqCst);
        self.bell.sleeping.load(Ordering::SeqCst)
    }

    /// Wakes the writer.
    pub fn ring(&self) {
        self.bell.ring();
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        // Disconnect first, then wake the writer so that it sees whether any sender is left.
        drop(self.tx.take());
        fence(Ordering::SeqCst);
        self.bell.ring();
    }
}

impl Inbox {
    /// The next message, sleeping while there is none; `None` once every sender is gone.
    /// Call it from the writer thread only.
    pub fn recv(&self) -> Option<Vec<u8>> {
        let _ = self.bell.writer.set(thread::current());
        loop {
            match self.rx.try_recv() {
                Ok(m) => return Some(m),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => {}
            }
            self.bell.sleeping.store(true, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            let again = self.rx.try_recv();
            if !matches!(again, Err(TryRecvError::Empty)) {
                self.bell.sleeping.store(false, Ordering::SeqCst);
                return again.ok();
            }
            thread::park();
            self.bell.sleeping.store(false, Ordering::SeqCst);
        }
    }

    /// A message if one is queued.
    pub fn try_recv(&self) -> Option<Vec<u8>> {
        self.rx.try_recv().ok()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn no_message_is_lost_between_threads() {
        let (out, inbox) = outbox();
        let senders: Vec<_> = (0..4)
            .map(|t| {
                let out = out.clone();
                thread::spawn(move || {
                    for i in 0..10_000u32 {
                        out.send(format!("{t}:{i}").into_bytes());
                        if i % 97 == 0 {
                            thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        drop(out);
        let mut seen = [0u32; 4];
        while let Some(m) = inbox.recv() {
            let s = String::from_utf8(m).unwrap();
            let (t, i) = s.split_once(':').unwrap();
            let t: usize = t.parse().unwrap();
            assert_eq!(i.parse::<u32>().unwrap(), seen[t], "order within a sender");
            seen[t] += 1;
        }
        senders.into_iter().for_each(|s| s.join().unwrap());
        assert_eq!(seen, [10_000; 4]);
    }
}
