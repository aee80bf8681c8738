//! The one runner every child process goes through.
//!
//! [`run`] spawns a program as the leader of its own process group with an
//! explicit environment, feeds its stdin, captures stdout/stderr (bounded,
//! head + tail), enforces a timeout and cancellation (SIGTERM to the group,
//! SIGKILL after a grace period), applies resource [`Limits`], and after the
//! leader exits sweeps the group and everything else the call started (found
//! through the subreaper and an environment marker, see [`marker_instance`]) with
//! SIGKILL, so no process of the call outlives the call; then it reaps the leader.
//!
//! Every started program, a call's ([`run`]: command tools, `onCancel` commands, portfolio
//! members), a session's ([`interactive`]) or a served server's ([`ServerProcess`]), has one
//! owner (`group.rs`, a `Group` on the thread that started it): the only thing that signals
//! its process group (SIGTERM, the grace, SIGKILL; a session's interrupts), that sweeps what
//! it started, and that reaps it, in that order, its leader an unreaped zombie during the
//! sweep so that the group id cannot be reused under it. A cancel only wakes the owner. Where
//! things are:
//!
//! | file | holds |
//! |---|---|
//! | `run.rs` | [`run`]: a call, from spawn to outcome; when a cancelled call's program is stopped |
//! | `group.rs` | `Group`: a program's owner; its signals, its end (sweep, then reap) |
//! | `wake.rs` | how a cancel hook or a session wakes an owner (an eventfd) |
//! | `sweep.rs` | the sweep: the group and the marked processes that left it, killed and reaped |
//! | `late_reap.rs` | late reaping: the `stdmcp-reap` thread, for processes still dying after their sweep |
//! | `watchdog.rs` | the watchdog: a `/bin/sh` that kills everything left when the server dies |
//! | `signal.rs` | the `killpg` and `kill` calls (an owner's and its sweep's only) |
//! | `confine.rs`, `ruleset.rs` | [`confine`]: Landlock confinement of a started program; its ruleset built before the spawn, entered by the child or the spawning thread, and the run's private `TMPDIR` |
//! | `spawn.rs`, `watch.rs`, `marker.rs`, `owned.rs` | the command, the pipes, the marker, the registry of owned children |
//!
//! The watchdog does the same as the sweep if the server itself dies: a `/bin/sh` child the
//! runner starts with the first program it runs ([`start_watchdog`] starts it earlier), which
//! kills every process group still running, and everything carrying this server's marker
//! ([`marker_instance`]), when the server's end of its pipe closes, then runs the pending
//! `onCancel` commands ([`on_cancel`]) and removes the server's [`private_dir`]. It is part
//! of the runner, not a hook: whoever runs programs through it gets the watchdog too.
//!
//! The program that embeds this should ignore SIGPIPE (Rust binaries do by
//! default) so a child that closes its stdin early yields EPIPE, not a signal.

mod capture;
pub mod confine;
mod group;
pub mod interactive;
mod late_reap;
mod limits;
mod marker;
pub mod on_cancel;
mod outcome;
mod owned;
pub mod private_dir;
mod procfs;
mod ruleset;
mod run;
mod server_process;
mod signal;
mod spawn;
mod spec;
mod sweep;
mod wake;
mod watch;
mod watchdog;

pub use capture::Captured;
pub use limits::Limits;
pub use marker::instance as marker_instance;
pub use outcome::{LineFn, Outcome, RunError, Stream};
pub use run::run;
pub use server_process::ServerProcess;
pub use spawn::seal_inherited_fds;
pub use spec::{minimal_environment, OutputSink, RunSpec, INHERITED_ENV};
pub use watchdog::{ensure_started as start_watchdog, missing as watchdog_missing, watchdog_pid};

use std::sync::atomic::Ordering;

/// Whether process `pid` has ended or is ending: no longer there, a zombie not yet reaped, or
/// on its way out (its one thread exiting, possibly stuck there). A program whose first thread
/// exited while others run shows as a zombie, and has not ended. For a child that must not be
/// given more work, such as a session's program killed between two calls.
pub fn has_ended(pid: u32) -> bool {
    i32::try_from(pid).map_or(true, procfs::has_ended)
}

/// Lets every sweep (the end of a call) also reap the zombie children of this process that
/// no `Child` of the runner waits for: processes a call left in process groups of their own
/// (`setpgid`, a shell's job control) that exited, and were reparented to this subreaper
/// when their parent died. Without it they stay zombies as long as the server runs.
///
/// Call it at the start of `main` in a program that starts children only through the runner
/// ([`run`], [`interactive`], [`ServerProcess`]): a child started otherwise could be reaped
/// under its `Child` handle. The `stdmcp` binary calls it.
pub fn reap_stray_children() {
    owned::REAP_STRAYS.store(true, Ordering::SeqCst);
}
