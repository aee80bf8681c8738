//! Diagnostics: what the peer would log, queued for the runtime to drain and log (the peer
//! itself does no I/O, so it has no logger).

use std::collections::VecDeque;

/// How much a diagnostic matters, most severe first (the levels of the `log` crate, without
/// trace).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Something failed that should not.
    Error,
    /// The other side misbehaved, or a limit was reached.
    Warn,
    /// A notable step of a call (it became a job, it was released).
    Info,
    /// Detail for debugging (a dropped late result, an ignored cancel).
    Debug,
}

/// One diagnostic of the peer, drained with [`super::Peer::poll_diagnostic`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// How much it matters.
    pub level: Level,
    /// What happened.
    pub message: String,
}

/// Diagnostics kept at once when nobody drains them: older ones give way.
const MAX_QUEUED: usize = 256;

/// The queue of diagnostics, filtered by the most verbose level wanted.
#[derive(Debug)]
pub(super) struct Diagnostics {
    max: Option<Level>,
    queue: VecDeque<Diagnostic>,
}

impl Diagnostics {
    pub(super) fn new(max: Option<Level>) -> Diagnostics {
        Diagnostics {
            max,
            queue: VecDeque::new(),
        }
    }

    /// Whether a diagnostic at `level` is kept (checked before its message is formatted).
    pub(super) fn wants(&self, level: Level) -> bool {
        self.max.is_some_and(|max| level <= max)
    }

    pub(super) fn push(&mut self, level: Level, message: String) {
        if self.queue.len() == MAX_QUEUED {
            self.queue.pop_front();
        }
        self.queue.push_back(Diagnostic { level, message });
    }

    pub(super) fn pop(&mut self) -> Option<Diagnostic> {
        self.queue.pop_front()
    }
}

/// Queues a diagnostic on `$peer` (anything with a `diagnostics` field) if its level is
/// wanted, formatting the message only then.
macro_rules! note {
    ($peer:expr, $level:ident, $($arg:tt)*) => {
        if $peer.diagnostics.wants($crate::peer::diag::Level::$level) {
            $peer.diagnostics.push($crate::peer::diag::Level::$level, format!($($arg)*));
        }
    };
}
pub(super) use note;
