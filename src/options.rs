//! The runtime's [`Options`] from `STDMCP_*` environment variables: the command reads its
//! environment, the library never does.

use std::time::Duration;

use stdmcp::Options;

/// `base`, overridden by `STDMCP_HEARTBEAT_MS`, `STDMCP_DRAIN_MS`, `STDMCP_ERA`,
/// `STDMCP_INPUT_WAIT_MS`, `STDMCP_MAX_CONCURRENT_CALLS`, `STDMCP_MAX_OUTGOING_BYTES`,
/// `STDMCP_MAX_JOBS`, `STDMCP_JOB_RETENTION_MS` and `STDMCP_FLUSH_STALL_MS` where set.
pub fn from_env(base: Options) -> Options {
    let mut o = base;
    let num = |k: &str| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    if let Some(ms) = num("STDMCP_HEARTBEAT_MS") {
        o.heartbeat = Duration::from_millis(ms.max(1));
    }
    if let Some(ms) = num("STDMCP_DRAIN_MS") {
        o.drain = Duration::from_millis(ms);
    }
    match std::env::var("STDMCP_ERA").as_deref() {
        // `legacy`: the name of earlier releases.
        Ok("handshake" | "legacy") => o.handshake_only = true,
        Ok("auto") => o.handshake_only = false,
        Ok(other) => log::warn!("STDMCP_ERA={other} ignored (handshake or auto)"),
        Err(_) => {}
    }
    if let Some(ms) = num("STDMCP_INPUT_WAIT_MS") {
        o.input_wait = Duration::from_millis(ms);
    }
    if let Some(n) = num("STDMCP_MAX_CONCURRENT_CALLS") {
        o.max_concurrent_calls = usize::try_from(n).unwrap_or(usize::MAX).max(1);
    }
    if let Some(n) = num("STDMCP_MAX_OUTGOING_BYTES") {
        o.max_outgoing_bytes = usize::try_from(n).unwrap_or(usize::MAX).max(1);
    }
    if let Some(n) = num("STDMCP_MAX_JOBS") {
        o.max_jobs = usize::try_from(n).unwrap_or(usize::MAX).max(1);
    }
    if let Some(ms) = num("STDMCP_JOB_RETENTION_MS") {
        o.job_retention = Duration::from_millis(ms);
    }
    if let Some(ms) = num("STDMCP_FLUSH_STALL_MS") {
        o.flush_stall = Duration::from_millis(ms);
    }
    o
}
