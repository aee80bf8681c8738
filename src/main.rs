//! The `stdmcp` command: serve a manifest, check one, or talk to any stdio MCP server.

use std::process::ExitCode;

fn main() -> ExitCode {
    // First, while this is the only thread: nothing the server inherited reaches a tool.
    stdmcp::process::seal_inherited_fds();
    // Every child of this program is started by the runner: sweeps may reap any other.
    stdmcp::process::reap_stray_children();
    // TMPDIR made absolute now, against the directory the server was started in.
    stdmcp::process::private_dir::tmpdir();
    stdmcp::init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    stdmcp_cli::cli::run(args)
}
