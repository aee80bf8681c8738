//! The `stdmcp` command as a library: what `src/main.rs` runs, and what the tests and the fuzz
//! targets reach through [`testing`]. Not a stable API: tool authors use the `stdmcp` crate.
//!
//! # Layers
//!
//! The protocol is the `stdmcp-proto` crate (sans-IO: framing, wire types, the peer); the
//! threads, the tool API and the process runner are the `stdmcp` crate; this package is the
//! application on top, in phases whose imports point one way, from the command line to the
//! data:
//!
//! ```text
//!   cli ──► manifest (load, check, lint) ─────────────────────────┐
//!    │                                                            ▼
//!    └──► assemble ──► call, logs, spool, session ◄── cursor ──► spec (the manifest's data)
//! ```
//!
//! * `cli`: the command line (`serve`, `check`, `config`, `tools`, `call`, `ping`).
//! * `manifest`: a manifest read from JSON into `spec`, every problem named with its JSON
//!   path, and `stdmcp check`'s lints.
//! * `spec`: the manifest's data that every phase reads (tools, parameters, argument
//!   templates, session kinds, cursor rules); `value` and `resolve`: a caller's value
//!   checked against its parameter, a path resolved inside its root (at load for defaults,
//!   at each call for arguments).
//! * `assemble`: the server built from a loaded manifest.
//! * `call`: running a manifest tool (plan, run, hooks, verdicts, portfolios, schemas);
//!   `logs`: the log files a tool writes and the `logs`/`log` tools.
//! * `session`: interactive sessions (REPLs, proof assistants) kept alive across calls, each
//!   program through `stdmcp::process::interactive`; `cursor`: a kind's proof cursor over its
//!   proof files, which drives a session through its turn API (no thread of its own: a
//!   cursor call runs on its worker, in the session's turn).
//! * `spool`: every call's complete output (a `stdmcp::process::OutputSink` of the runner),
//!   and the bounded, cancellable reads of `output` and `log`.
//!
//! The watchdog that kills a dead server's children is the runtime's (`stdmcp::process`
//! starts it with the first program); the command adds its private directory (the spool
//! and the pending `onCancel` commands), which the watchdog removes when the server dies.
#![deny(clippy::print_stdout, clippy::dbg_macro)]

mod assemble;
mod call;
pub mod cli;
mod cursor;
mod logs;
mod manifest;
mod resolve;
mod session;
mod spec;
mod spool;
pub mod testing;
mod value;
