//! Running a call of a manifest tool: its arguments checked and turned into what runs
//! (`plan`), the program run through the process runner with progress, hooks and a verdict
//! read from its output (`run`, `hooks`, `verdict`), or a portfolio's members raced, the
//! losers stopped (`portfolio`); and what a client sees of a tool (`schema`).

pub(crate) mod hooks;
pub(crate) mod plan;
pub(crate) mod portfolio;
pub(crate) mod run;
pub(crate) mod schema;
pub(crate) mod verdict;

use std::sync::atomic::{AtomicU64, Ordering};

/// A new call id, unique per server run: `<server instance>-<n>` (plain, see
/// [`crate::spec::remote::is_plain`]): the spool's key of its output and `{callId}`.
pub(crate) fn new_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}-{}",
        stdmcp::process::marker_instance(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn call_ids_are_plain() {
        assert!(crate::spec::remote::is_plain(&super::new_call_id()));
    }
}
