//! The `stdmcp` command as a library: what `src/main.rs` runs, and what the tests and the fuzz
//! targets reach (the manifest parser). Not a stable API: tool authors use the `stdmcp` crate.
//!
//! # Layers
//!
//! The protocol is the `stdmcp-proto` crate (sans-IO: framing, wire types, the peer); the
//! threads, the tool API and the process runner are the `stdmcp` crate; this package is the
//! application on top:
//!
//! * [`manifest`]: local programs served as tools from a JSON manifest (parsing, checks,
//!   argument plans, command tools, portfolios, logs).
//! * [`session`]: interactive sessions (REPLs, proof assistants) kept alive across calls, their
//!   tools, answer detection and lifecycle; each program through `stdmcp::process::interactive`;
//!   `session::cursor`: a kind's proof cursor over its proof files (no thread of its own: a
//!   cursor call runs on its worker, in the session's turn).
//! * [`spool`]: every call's complete output (a `stdmcp::process::OutputSink` of the runner),
//!   and the bounded, cancellable reads of `output` and `log`.
//! * [`cli`]: the command line (`serve`, `check`, `config`, `tools`, `call`, `ping`).
//!
//! The watchdog that kills a dead server's children is the runtime's (`stdmcp::process`
//! starts it with the first program); the command adds its private directory (the spool
//! and the pending `onCancel` commands), which the watchdog removes when the server dies.
#![deny(clippy::print_stdout, clippy::dbg_macro)]

pub mod cli;
pub mod manifest;
pub mod session;
pub mod spool;
