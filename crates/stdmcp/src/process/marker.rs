//! The environment marker of a started program: `STDMCP_CALL=<instance>.<n>`, which every
//! descendant inherits, so that the sweep (`sweep.rs`) finds what a program started even
//! after it left the program's process group, and the watchdog (`watchdog.rs`) finds
//! everything this server started (`STDMCP_CALL=<instance>.`) once the server is gone.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The environment variable that marks a call's processes.
pub(super) const MARKER: &str = "STDMCP_CALL";

/// This server's marker prefix: `<pid>-<start time in µs, hex>`, unique per process.
pub fn instance() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        format!("{}-{micros:x}", std::process::id())
    })
}

/// A new program's marker value, `<instance>.<n>`.
pub(super) fn new_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{}.{}", instance(), NEXT.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_unique_and_prefixed() {
        let a = new_marker();
        let b = new_marker();
        assert_ne!(a, b);
        assert!(a.starts_with(&format!("{}.", instance())), "{a}");
        assert!(instance().starts_with(&format!("{}-", std::process::id())));
    }
}
