//! stdmcp-proto: the sans-IO core of stdmcp, MCP (Model Context Protocol) without I/O.
//!
//! Everything here is deterministic: no thread is started, no stream read or written, no clock
//! read (time is a `now` argument). So the same protocol code serves stdmcp's threaded runtime
//! (the `stdmcp` crate), tests that step fake time, and any other runtime, async ones included.
//!
//! # Layers
//!
//! * [`framing`]: the frame decoder (newline-delimited JSON or `Content-Length`) and encoder.
//! * [`jsonrpc`], [`mcp`]: wire types for protocol revisions 2024-11-05 to 2026-07-28.
//! * [`peer`]: the protocol state machine, a front (the `Peer` type, `client_role`, and the
//!   server role, `server_role/`) over sub-machines that know nothing of effects (the call
//!   table, the parking of multi-round-trip calls, the job store, batches, subscriptions,
//!   the timer table); its timer table (heartbeats, deadlines, expiries) is read with
//!   `Peer::poll_timeout` and fired with `Peer::handle_timeout`.
//! * [`schema`]: the JSON Schema subset tool arguments are validated against.
//! * [`human`]: durations written for people, in messages and descriptions.
//!
//! # Wire logging
//!
//! The runtime logs every frame; see the `stdmcp` crate.
#![deny(clippy::print_stdout, clippy::dbg_macro)]
#![warn(missing_docs, unreachable_pub)]

pub mod framing;
pub mod human;
pub mod jsonrpc;
pub mod mcp;
pub mod peer;
pub mod schema;
