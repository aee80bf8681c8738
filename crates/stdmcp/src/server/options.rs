//! The runtime's settings ([`Options`]) and their defaults.

use std::time::Duration;

use stdmcp_proto::peer;

/// Settings of the runtime: [`Options::default`], then the fields to change. The library reads
/// no environment variable on its own; [`Options::from_env`] takes `STDMCP_*` overrides when a
/// program asks (the `stdmcp` command does).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Heartbeat progress interval for calls with a progress token (default 5 s).
    pub heartbeat: Duration,
    /// After stdin closes or SIGTERM/SIGHUP, how long calls in flight may run before they are
    /// cancelled (default 1.5 s: clients send SIGTERM about 2 s after closing stdin).
    pub drain: Duration,
    /// After cancelling at shutdown, how long to wait for the calls to end (default 3 s).
    pub stop_wait: Duration,
    /// Largest frame accepted (default 64 MiB).
    pub max_frame_len: usize,
    /// Calls running at once; more are queued (default 1024).
    pub max_concurrent_calls: usize,
    /// Stack size of worker threads (default 1 MiB).
    pub worker_stack: usize,
    /// Idle worker threads exit after this long (default 30 s).
    pub worker_keep_alive: Duration,
    /// Handle SIGTERM, SIGHUP and SIGINT (default true; `serve_stdio` only).
    pub signals: bool,
    /// Bytes queued for stdout beyond which workers wait for the client to read (default
    /// 8 MiB). Progress is coalesced to the latest per call instead, and the reader stops
    /// reading at twice this much.
    pub max_outgoing_bytes: usize,
    /// At exit, queued output is written for as long as the client keeps reading; the server
    /// gives up when stdout accepted nothing for this long (default 2 s).
    pub flush_stall: Duration,
    /// Serve only the handshake era (default false): `server/discover` gets -32601, so that
    /// 2026-07-28 clients fall back to `initialize` (`stdmcp serve --era handshake`).
    pub handshake_only: bool,
    /// How long a 2026-07-28 call that asked the client for input waits for the retry
    /// before it is released (default 5 min).
    pub input_wait: Duration,
    /// 2026-07-28 calls waiting for the client's input at once, each holding a worker
    /// thread (default 64); beyond it, asking fails with an error.
    pub max_waiting_calls: usize,
    /// Jobs kept at once, working or ended (default 16; README "Long runs").
    pub max_jobs: usize,
    /// How long an ended job's result stays readable (default 10 min).
    pub job_retention: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            heartbeat: peer::DEFAULT_HEARTBEAT,
            drain: Duration::from_millis(1500),
            stop_wait: Duration::from_secs(3),
            max_frame_len: stdmcp_proto::framing::DEFAULT_MAX_FRAME_LEN,
            max_concurrent_calls: 1024,
            worker_stack: 1024 * 1024,
            worker_keep_alive: Duration::from_secs(30),
            signals: true,
            max_outgoing_bytes: 8 << 20,
            flush_stall: Duration::from_secs(2),
            handshake_only: false,
            input_wait: peer::DEFAULT_PARK_TTL,
            max_waiting_calls: 64,
            max_jobs: peer::DEFAULT_MAX_JOBS,
            job_retention: peer::DEFAULT_JOB_RETENTION,
        }
    }
}
