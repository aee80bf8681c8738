//! The `stdmcp` command line: the client commands against the runtime's `everything` example
//! (`client`), `stdmcp config` (`config`), and `stdmcp serve --era legacy` (`era`).

#[path = "../common/mod.rs"]
mod common;

mod client;
mod config;
mod era;
