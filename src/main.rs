//! The `stdmcp` command: serve a manifest, check one, or talk to any stdio MCP server.
#![allow(clippy::print_stdout)] // the CLI's own output; `serve` never prints to stdout

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .target(env_logger::Target::Stderr)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    cli::run(args)
}
