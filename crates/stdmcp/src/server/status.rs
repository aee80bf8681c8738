//! The latest status line of each call ([`super::Ctx::set_status`]): a slot per call,
//! written without the peer's lock and handed to the peer whenever the lock is next taken, so
//! a heartbeat, `job_wait` or `jobs` always sees the newest line and output lines never
//! contend for the peer (no thread, no throttle).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use stdmcp_proto::jsonrpc::{IdMap, RequestId};
use stdmcp_proto::peer::Peer;

use crate::sync::lock;

/// The slots of the calls that set a line since the peer last saw them.
#[derive(Default)]
pub(super) struct StatusSlots {
    lines: Mutex<IdMap<String>>,
    /// Whether `lines` may hold something (spares its lock when it does not).
    any: AtomicBool,
}

impl StatusSlots {
    /// Keeps `line` as call `id`'s latest, replacing the one the peer has not seen yet.
    pub(super) fn set(&self, id: &RequestId, line: String) {
        let mut lines = lock(&self.lines);
        match lines.get_mut(id) {
            Some(slot) => *slot = line,
            None => {
                lines.insert(id.clone(), line);
            }
        }
        self.any.store(true, Ordering::Release);
    }

    /// Hands the lines set since the last time to the peer (whose lock the caller holds).
    pub(super) fn hand_to(&self, peer: &mut Peer) {
        // A load first: the common case (no line set) then writes nothing to the shared flag.
        if !self.any.load(Ordering::Relaxed) || !self.any.swap(false, Ordering::Acquire) {
            return;
        }
        let lines = lock(&self.lines).drain();
        let now = Instant::now();
        for (id, line) in lines {
            peer.set_status(now, &id, line);
        }
    }
}
