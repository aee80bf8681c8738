//! The peer's diagnostics, written to the log: the peer itself has no logger (it does no
//! I/O), so the runtime drains what it noted after its effects.

use stdmcp_proto::peer::{self, Peer};

/// The most verbose peer diagnostics the logger would write.
pub(crate) fn diagnostics_level() -> Option<peer::Level> {
    match log::max_level() {
        log::LevelFilter::Off => None,
        log::LevelFilter::Error => Some(peer::Level::Error),
        log::LevelFilter::Warn => Some(peer::Level::Warn),
        log::LevelFilter::Info => Some(peer::Level::Info),
        log::LevelFilter::Debug | log::LevelFilter::Trace => Some(peer::Level::Debug),
    }
}

/// Logs what the peer noted (its diagnostics), under the `stdmcp::peer` target.
pub(crate) fn log_diagnostics(peer: &mut Peer) {
    while let Some(d) = peer.poll_diagnostic() {
        let level = match d.level {
            peer::Level::Error => log::Level::Error,
            peer::Level::Warn => log::Level::Warn,
            peer::Level::Info => log::Level::Info,
            peer::Level::Debug => log::Level::Debug,
        };
        log::log!(target: "stdmcp::peer", level, "{}", d.message);
    }
}
