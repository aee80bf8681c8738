//! Settings of a peer ([`Config`]) and their defaults.

use std::time::{Duration, Instant, SystemTime};

use super::diag::Level;
use super::parking::hash_random;

/// Default interval of heartbeat progress (the 5 s of established prover servers).
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(5);

/// Default number of jobs kept at once (working or ended and not yet expired).
pub const DEFAULT_MAX_JOBS: usize = 16;

/// Default time an ended job's result is kept.
pub const DEFAULT_JOB_RETENTION: Duration = Duration::from_secs(600);

/// Default time a parked 2026-07-28 call waits for the client's retry.
pub const DEFAULT_PARK_TTL: Duration = Duration::from_secs(300);

/// Settings of a peer.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// Interval after which a call that has a progress token and has not reported gets a
    /// heartbeat notification.
    pub heartbeat: Duration,
    /// Items per page of list results.
    pub page_size: usize,
    /// `ttlMs` on list results of the 2026-07-28 era (MCP 2026-07-28, Caching).
    pub list_ttl_ms: u64,
    /// Requests whose work runs at once; later ones wait in arrival order for one to finish, and
    /// [`Effect::Start`](super::Effect::Start) comes when one is admitted. Heartbeats of waiting
    /// requests say so.
    pub max_running: usize,
    /// How long a 2026-07-28 call parked on an `input_required` result waits for the client's
    /// retry before it is released (default 5 min).
    pub park_ttl: Duration,
    /// Calls parked at once, each holding a worker thread (default 64); a call that would
    /// exceed it gets an error instead of `input_required`.
    pub max_parked: usize,
    /// Fills a buffer with unpredictable bytes: the nonce of each parked call's
    /// `requestState` (default: [`hash_random`]; stdmcp's runtime passes the kernel's random
    /// pool). The peer reads no clock and does no I/O of its own; tests may pass a
    /// deterministic source.
    pub fill_random: fn(&mut [u8]),
    /// Serve only the handshake era: `server/discover` is answered with -32601 so that
    /// clients fall back to `initialize` (default false).
    pub handshake_only: bool,
    /// Jobs kept at once, working or ended (default [`DEFAULT_MAX_JOBS`]): when full, the
    /// oldest ended job is forgotten; if none has ended, a call stays a plain call.
    pub max_jobs: usize,
    /// How long an ended job's result is kept (default [`DEFAULT_JOB_RETENTION`]).
    pub job_retention: Duration,
    /// One reading of both clocks, taken by the runtime: task timestamps (`createdAt`,
    /// `lastUpdatedAt`) are derived from the `now` each call gets, so the peer itself never
    /// reads a clock. Without it (the default), the first `now` the peer is given stands for
    /// the Unix epoch.
    pub wall_origin: Option<(Instant, SystemTime)>,
    /// The most verbose [`Diagnostic`](super::Diagnostic)s kept for
    /// [`Peer::poll_diagnostic`](super::Peer::poll_diagnostic) (default [`Level::Warn`]; `None`:
    /// none).
    pub diagnostics: Option<Level>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            heartbeat: DEFAULT_HEARTBEAT,
            page_size: 100,
            list_ttl_ms: 300_000,
            max_running: usize::MAX,
            park_ttl: DEFAULT_PARK_TTL,
            max_parked: 64,
            fill_random: hash_random,
            handshake_only: false,
            max_jobs: DEFAULT_MAX_JOBS,
            job_retention: DEFAULT_JOB_RETENTION,
            wall_origin: None,
            diagnostics: Some(Level::Warn),
        }
    }
}
