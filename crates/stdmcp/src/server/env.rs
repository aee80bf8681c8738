//! [`Options::from_env`]: the `STDMCP_*` overrides, read only when a program asks for them.

use std::time::Duration;

use super::options::Options;

impl Options {
    /// These options, overridden by `STDMCP_HEARTBEAT_MS`, `STDMCP_DRAIN_MS`, `STDMCP_ERA`
    /// (`handshake` or `auto`), `STDMCP_INPUT_WAIT_MS`, `STDMCP_MAX_CONCURRENT_CALLS`,
    /// `STDMCP_MAX_OUTGOING_BYTES`, `STDMCP_MAX_JOBS`, `STDMCP_JOB_RETENTION_MS` and
    /// `STDMCP_FLUSH_STALL_MS` where they are set.
    ///
    /// An explicit opt-in: the library never calls it on its own, so a server built on it
    /// reads no environment variable (but `RUST_LOG`, in [`init_logging`](crate::init_logging))
    /// unless its `main` asks. The `stdmcp` command and the `everything` example call it, so
    /// that the tests and the benchmark can set them.
    pub fn from_env(self) -> Options {
        let mut o = self;
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
}
