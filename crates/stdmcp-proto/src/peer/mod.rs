//! The sans-IO protocol state machine of one end of an MCP connection.
//!
//! A [`Peer`] never reads or writes a stream, starts a thread or reads the clock. Its methods
//! fall into four groups (the shape of quinn-proto's `Connection`):
//!
//! * inputs: [`Peer::handle_frame`] for every frame from the other side (or
//!   [`Peer::handle_checked`], with the frame parsed and its tool arguments checked against
//!   their schemas by the caller, outside whatever lock guards the peer), and, in the server
//!   role, [`Peer::finish`], [`Peer::progress`], [`Peer::log`] and [`Peer::set_status`] for
//!   what the work started by a request reports;
//! * commands: [`Peer::request`], [`Peer::notify`] and [`Peer::cancel_request`] to talk to the
//!   other side, and [`Peer::shutdown`];
//! * time: every timer (call deadlines, expiries of parked calls, the retention of ended
//!   jobs, the background delay after which a call becomes a job, the end of a `job_wait`,
//!   progress heartbeats) is an entry of one table, keyed by kind and subject and found by
//!   when it is due (a min-heap per kind), in the style of quinn-proto:
//!   [`Peer::poll_timeout`] is its earliest entry, and [`Peer::handle_timeout`] fires what
//!   is due, kind by kind in that order; every time-dependent call takes `now`;
//! * outputs: [`Peer::poll_effect`] pops what the caller must do: write bytes, start or stop
//!   work, deliver a response or a notification; [`Peer::poll_diagnostic`] pops what the
//!   peer would log (it has no logger).
//!
//! Call `poll_effect` until it returns `None` after every input or command, then drain
//! `poll_diagnostic`. The peer uses only std and the wire modules (`framing`, `jsonrpc`,
//! `mcp`, `schema`, `human`): no thread, no clock (the wall-clock origin of task timestamps
//! and the source of `requestState` nonces come through [`Config`]).
//!
//! Inside, the peer is a front over sub-machines. The front is `front` (the [`Peer`] type,
//! its inputs, effects and timers), `client_role`, and the server role, a directory of
//! files by concern (`server_role/`: era selection and method tables, the handshake, the
//! 2026-07-28 path, calls, jobs and the job tools, tasks, asking the client, subscriptions,
//! batches); only the front implements `Peer`, and it turns what the sub-machines say into
//! effects. The sub-machines are types with their own methods that know nothing of effects
//! and import nothing of the front: the call table (`call`: each call's record, its life a
//! `CallState` and its place an `Admission`, running or queued with its start; admission by
//! slots), the parking of multi-round-trip calls (`parking`), the
//! job store (`jobs`: jobs, a task's questions, pending `job_wait`s), batches (`batch`), a
//! connection's subscriptions (`subscriptions`) and the timer table (`timers`); beneath them
//! are leaves: the settings (`config`), the work a request needs done, the admitted call
//! that carries it and its reply (`work`), the effects (`effect`), the record of a
//! handshake-era connection (`connection`) and of each request this side sent, with the
//! client's eras (`outbound`), the catalog (`catalog`), each request's terms (`terms`), the
//! argument checks (`arguments`), diagnostics (`diag`) and timeouts (`timeout`). This file
//! only declares the modules and re-exports the API: no module imports it. No sub-machine
//! imports the front or another role, the front imports no role, and the server role's files
//! take no items from each other in a loop (their methods call each other freely: they are
//! one type's).

mod arguments;
mod batch;
mod call;
mod catalog;
mod client_role;
mod config;
mod connection;
mod diag;
mod effect;
mod front;
mod jobs;
mod outbound;
mod parking;
mod server_role;
mod subscriptions;
mod terms;
mod timeout;
mod timers;
mod work;

pub use arguments::ArgumentChecks;
pub use catalog::{Catalog, JobTools, ReservedToolName, JOB_TOOL_NAMES};
pub use config::{
    Config, DEFAULT_HEARTBEAT, DEFAULT_JOB_RETENTION, DEFAULT_MAX_JOBS, DEFAULT_PARK_TTL,
};
pub use diag::{Diagnostic, Level};
pub use effect::Effect;
pub use front::{refusal, Peer, Role};
pub use jobs::JOB_META;
pub use jobs::{WAIT_DEFAULT, WAIT_MAX};
pub use outbound::ClientEra;
pub use parking::{auto_key, capability_of, hash_random, Asked, InputRequest};
pub use subscriptions::MAX_SUBSCRIPTIONS;
pub use terms::{declares_tasks, TASKS_EXTENSION};
pub use timeout::Timeout;
pub use work::{Admitted, Reply, Work};

#[cfg(test)]
mod tests;
