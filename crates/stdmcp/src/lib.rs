//! stdmcp: MCP (Model Context Protocol) over plain Rust `std`.
//!
//! Serve tools to AI agents over the stdio transport, with no async runtime: real
//! cancellation, progress heartbeats, server-side deadlines, and clean shutdown.
//!
//! # Layers
//!
//! The protocol itself, sans-IO, is the `stdmcp-proto` crate (framing, JSON-RPC and MCP wire
//! types, the peer state machine, the schema validator); this crate runs it on threads and
//! gives tools their API. The `stdmcp` command (manifests, sessions, the output spool, the
//! command line) is the `stdmcp-cli` package built on this crate.
//!
//! * [`Server`], [`ToolDef`], [`Ctx`], [`Options`]: the threads that run a peer on
//!   stdin/stdout, and the API for tools (module `server`: dispatch, the writer's outbox, the
//!   worker pool and what a worker does with a call, the timer).
//! * [`CancelToken`]: the cancel token a call's handler sees.
//! * [`process`]: the one runner every child process goes through (process group, caps,
//!   resource limits, SIGTERM then SIGKILL to the group, then everything else the call
//!   started, found as a subreaper by an environment marker; always reaped), interactive
//!   programs ([`process::interactive`]), and the watchdog (`process/watchdog.rs`, started by
//!   the runner itself) that does the same even when the server itself is killed. Each
//!   started program has one owner (`process/group.rs`) on the thread that started it, the
//!   only thing that signals its group, sweeps and reaps. A program can be confined by the
//!   kernel ([`process::confine`], Landlock): its ruleset is built before the spawn and entered
//!   before the program's first instruction.
//! * [`beneath`]: files and directories beneath a root opened through descriptors, for what
//!   a server reads or starts a program in.
//! * [`client`]: a blocking stdio client (`stdmcp call`, tests, the benchmark) that starts
//!   the server as a [`process::ServerProcess`].
//! * [`mcp`], [`jsonrpc`]: the protocol crate's wire types (`stdmcp-proto`), re-exported for
//!   the types this API takes and returns; of its peer, only [`Catalog`], [`InputRequest`]
//!   and [`Timeout`].
//!
//! # Threads
//!
//! ```text
//!   stdin                                                                stdout
//!     │                                                                    ▲
//! ┌───▼────────────┐  frames   ┌───────────────────────────┐  frames  ┌────┴──────────┐
//! │ stdmcp-reader  ├──────────►│ dispatcher: Mutex<Peer>   ├─────────►│ stdmcp-writer │
//! │ FrameDecoder   │  (lock)   │ + cancel tokens, waiters  │ bounded  │ sole owner of │
//! └────────────────┘           └──┬──────────▲─────────▲───┘ outbox   │ stdout        │
//!                     Start (when │  finish, │         │ heartbeats,└───────────────┘
//!                  admitted; pool)│  progress│         │ deadlines
//!                       ┌─────────▼──────────┴──┐  ┌───┴───────────┐
//!                       │ stdmcp-worker × N     │  │ stdmcp-timer  │
//!                       │ one per call running; │  └───────────────┘
//!                       │ idle ones reused      │
//!                       └───────────────────────┘
//! stdmcp-signals ──(SIGTERM, SIGHUP, SIGINT)──► main thread: shutdown sequence
//! ```
//!
//! A command tool ([`process::run`]) runs on its worker and adds no thread: the worker starts
//! the program, writes its stdin, reads its stdout and stderr and waits for its exit (a
//! pidfd) and for its cancel (an eventfd the call's cancel hook writes: the hook only wakes
//! the worker) in one `poll` loop. The worker alone signals the program's process group
//! (SIGTERM at a cancel or the deadline, SIGKILL after the grace); once the program has
//! exited it sweeps what the program left while the program is still an unreaped zombie
//! (so that its group id cannot be reused), and reaps it last. Its output lines add no thread
//! either: each only fills the call's status slot, which the peer takes the next time its
//! lock is taken (a heartbeat shows the newest line, and lines never wait for the lock). Two
//! threads of the process are started only when needed, and never per call: `stdmcp-timer`
//! at the first call with a deadline or progress token, and `stdmcp-reap` (late reaping,
//! `process/late_reap.rs`), the first time a process killed at the end of a call is still
//! dying after the call's one-second wait; it reaps such processes as they die, whether or
//! not another call comes, and signals nothing. A confined call started with `posix_spawn`
//! is spawned by a `stdmcp-confine` thread that lives only for the spawn: it enters the
//! call's Landlock domain (which belongs to a thread and cannot be left) and spawns, so the
//! child inherits the domain while the worker itself stays unrestricted; a forked program
//! (resource limits, sessions) enters it between fork and exec instead.
//!
//! The peer alone decides which call starts: it admits calls by the slots of
//! [`Options::max_concurrent_calls`] (a portfolio takes one per member), keeps the others in
//! its one waiting line, in arrival order, and emits a call's start only when it admits it;
//! the dispatcher hands each start to the worker pool at once, and the pool, which has no
//! queue, runs it on an idle worker or a new one.
//!
//! Every request is answered even when a thread cannot be started (`ulimit -u`, a pids
//! cgroup): the pool then gives the call back, and the peer puts it back at the head of its
//! line and admits nothing more until a running call ends and frees a thread (a call waiting
//! so is answered at its deadline with an error if none ends by then; a worker whose call
//! ends runs it itself if still no thread can be started); when no other call runs, it is
//! answered with an error at once. A call with a deadline is answered with an error when the
//! timer cannot be started (the next call tries again). The reader, writer and signal threads are
//! started before anything is read; without them the server does not start.
//!
//! The `stdmcp` command (package `stdmcp-cli`) adds threads of its own on this runtime, drawn
//! here so that the whole process is in one place. A portfolio tool (README "Portfolios") runs
//! each member on a `stdmcp-member` thread of its own, which runs the member's program as a
//! command tool's worker does and outlives the portfolio's answer until its program is
//! reaped; the worker waits for the members' ends in a [`mailbox`]. A call of a portfolio of N
//! members counts as N calls against the limit, and the peer admits it only when all N are
//! free (`Catalog::tool_slots`).
//!
//! The command's interactive sessions add threads of their own, per running session program
//! (each through [`process::interactive`]):
//!
//! ```text
//!  worker (K_send)                        stdmcp-session-K-NAME: owns the program: spawns it,
//!   │ input bytes ──► stdmcp-session-in ──► program stdin       signals its group when asked
//!   │                                         │ stdout+stderr    (interrupt, kill), waits for
//!   │ waits on the   ◄── stdmcp-session-out ◄─┘ (one pipe)       it, sweeps, reaps it, records
//!   │                                                            its exit (lives as long as the
//!   │                                                            program: PR_SET_PDEATHSIG)
//!   │ session's condvar: output, exit (and every 50 ms: cancellation, deadline)
//!   ▼ answer found by the kind's rule (NUL, sentinel, prompt, quiet)
//! stdmcp-sessions-idle: one timer for all sessions; sleeps until the next idle deadline,
//! woken when a session is used; stops idle sessions. At shutdown the main thread asks every
//! session's owner thread to kill its program's group and waits for the reaps.
//! ```
//!
//! The owner thread starts the reader and writer before it hands out the program's pid; if
//! either cannot be started, the program is killed and reaped, and the session's start fails
//! with that reason.
//!
//! The dispatcher is not a thread of its own: whichever thread has input for the peer (the
//! reader with frames, a worker with its result or progress, the timer with a heartbeat) takes
//! the lock, hands the input over and queues the peer's frames for the writer, in order,
//! before letting go; then, without the lock, it wakes the writer, hands new work to the pool
//! and fires cancel tokens (so a cancel hook runs on the reader, timer or main thread, and may
//! itself report progress or log; a command tool's hook only wakes the call's worker). Cheap methods (`initialize`, `server/discover`, `ping`,
//! `tools/list`, cancellation) are thus answered on the reader thread, and a tool's result
//! goes from its worker straight to the writer's queue, with two thread hand-offs per call
//! instead of four.
//!
//! # Flow control
//!
//! The writer's queue (the outbox) is bounded in bytes ([`server::Options::max_outgoing_bytes`]).
//! Pushing never blocks, since it happens under the lock. A worker that queued a result or a
//! log message waits, after letting go of the lock, until the queue is below the bound, so a
//! client that stops reading stops the tools' output, not the server's memory. A progress
//! frame replaces the same call's progress that is still queued, so a slow client sees the
//! latest progress rather than a backlog. The reader and the timer never wait (a cancel must
//! get through); the reader only pauses at twice the bound, which only its own answers to a
//! client that writes without reading can reach. At exit the writer writes everything queued,
//! whole frames, for as long as the client keeps reading ([`server::Options::flush_stall`]).
//!
//! # Where the code departs from the design
//!
//! The design is a reader thread, a writer thread that alone owns stdout, a thread per call
//! with an atomic cancel flag, a timer, and the sans-IO peer. Three departures from its first
//! sketch, each measured (README "Architecture", `docs/bench-analysis.md`):
//!
//! * The writer's queue is the byte-bounded outbox above (a `Mutex<VecDeque>` and condition
//!   variables), not a crossbeam channel: a push must never block (it happens under the
//!   peer's lock), the bound is in bytes, and queued progress is replaced. Crossbeam's
//!   receiver also spins and calls `sched_yield` before it sleeps, which on a CPU shared with
//!   a busy process gave the CPU away for the rest of a time slice: 3,983 µs sequential p50
//!   under contention for the worker pool's hand-off on a channel, 66–81 µs on a mutex and
//!   condition variable; 3.99 ms against 0.12 ms for a session's stdin writer. The other
//!   waits on another thread (lifecycle events, the writer's end, a worker's wait for the
//!   client's answer, the client's frames) are on a `Mailbox` (a mutex and a condition
//!   variable) for the same reason, and because crossbeam compiles each channel type in its
//!   three flavours: 24 KB of the `everything` binary for three message types.
//! * Threads are pooled: a worker that finished waits `Options::worker_keep_alive` for the
//!   next call instead of exiting (a thread's clone, stack and exit were a tenth of a
//!   `/bin/true` call). The pool decides nothing: the peer admits calls. An idle worker spins
//!   briefly before it sleeps only where the process may run on more than one CPU.
//! * `signal-hook`, not `ctrlc`: SIGTERM and SIGHUP let the calls in flight finish, SIGINT
//!   cancels them at once; `ctrlc` runs one closure for every signal without saying which.
//!
//! # Wire logging
//!
//! `RUST_LOG=stdmcp=trace` logs every frame in (`<`) and out (`>`) on stderr.
#![deny(clippy::print_stdout, clippy::dbg_macro)]
#![warn(missing_docs, unreachable_pub)]

mod cancel;
pub mod mailbox;
mod random;
mod server;
// The FFI of the crate (killpg, kill, waitid, waitpid, pidfd_open, eventfd, prctl, setrlimit,
// setpriority, close_range, poll) is in `process`, the descriptor-relative opens (openat, openat2,
// fdopendir, renameat) in `beneath`, and getrandom in `random`: each call with a SAFETY note
// and its function allowing `unsafe_code` on its own.
pub mod beneath;
pub mod client;
pub mod process;
pub mod sync;

// The protocol crate's types the API takes or returns.
/// What [`Server::catalog`] returns and what [`Ctx::ask`] takes, from the protocol crate's
/// peer (which itself is not part of this API: the runtime drives it).
pub use stdmcp_proto::peer::{Catalog, InputRequest};
pub use stdmcp_proto::{jsonrpc, mcp};

pub use cancel::{CancelReason, CancelToken};
pub use mcp::{CallToolResult, Content};
pub use random::fill as fill_random;
pub use server::{Ctx, Options, Reporter, Server, Timeout, ToolDef, ToolError, ToolResult};

/// Serde, re-exported for [`ToolDef::typed`]'s argument types: `#[derive(stdmcp::serde::Deserialize)]`
/// with `#[serde(crate = "stdmcp::serde")]` needs no `serde` dependency of the tool crate's own.
pub use serde;
/// The JSON library of the API (tool arguments and schemas are [`json::Value`]s), re-exported
/// so that a tool crate needs no `serde_json` dependency of its own: `stdmcp::json!` builds a
/// value, `stdmcp::json::Value` is its type.
pub use serde_json as json;
pub use serde_json::{json, Value};

/// Logs to stderr (stdout carries only protocol frames), filtered by `RUST_LOG`, warnings and
/// errors by default. Call it once at the start of `main`; later calls change nothing.
pub fn init_logging() {
    let _already_set =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
            .target(env_logger::Target::Stderr)
            .try_init();
}
