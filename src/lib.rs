//! stdmcp: MCP (Model Context Protocol) over plain Rust `std`.
//!
//! The crate serves tools to AI agents over the stdio transport without an async runtime.
//! The protocol lives in a sans-IO [`peer::Peer`]; the [`framing`] decoder turns bytes into
//! frames; [`jsonrpc`] and [`mcp`] hold the wire types.
//!
//! Wire logging: `RUST_LOG=stdmcp=trace` logs every frame in and out on stderr.
#![deny(clippy::print_stdout, clippy::dbg_macro)]

pub mod framing;
pub mod jsonrpc;
pub mod mcp;
pub mod peer;
pub mod schema;
