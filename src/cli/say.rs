//! What the command says: its help text, its output (a closed pipe is a normal end), what is
//! wrong with a command line, and a manifest's problems.

use std::path::Path;
use std::process::ExitCode;

use crate::spec::ManifestError;

/// What `stdmcp --help` prints.
pub(super) const HELP: &str = "\
stdmcp: serve local programs to AI agents over MCP (stdio), and talk to MCP servers.

USAGE:
    stdmcp serve [--config FILE] [--era auto|handshake]
        Serve the tools of a JSON manifest on stdin/stdout. Without --config the manifest is
        the first of: $STDMCP_CONFIG, ./stdmcp.json, $XDG_CONFIG_HOME/stdmcp/stdmcp.json
        (~/.config/stdmcp/stdmcp.json); otherwise a built-in manifest of read-only tools
        (list, read, search, find, count, disk usage) over one workspace directory:
        $STDMCP_ROOT, else the current directory (the home directory when that is /).
        --era auto (default) serves both protocol eras; --era handshake only the initialize
        handshake (2024-11-05 to 2025-11-25): server/discover gets -32601, so 2026-07-28
        clients fall back to initialize (same as STDMCP_ERA=handshake).
        stderr says which manifest is served. stdout carries only protocol messages.

    stdmcp check FILE
        Validate a manifest and print the tools a client would see. Problems are reported
        with their JSON path (for example tools[1].params.file.root). Exit 1 on problems.

    stdmcp tools [OPTIONS] -- SERVER_CMD [ARGS...]
        Start any stdio MCP server and list its tools: name, title, description, parameters.

    stdmcp call TOOL [JSON_ARGS | --arg KEY=VALUE ...] [OPTIONS] -- SERVER_CMD [ARGS...]
        Call one tool and print its content (text on stdout). Arguments are a JSON object, or
        --arg pairs typed by the tool's schema (a string parameter keeps VALUE as text, others
        parse it as JSON). Progress is drawn as a bar on stderr when it is a terminal, as
        lines otherwise. Ctrl-C sends notifications/cancelled, waits briefly, and exits 130.

    stdmcp ping [OPTIONS] -- SERVER_CMD [ARGS...]
        Connect, ping (server/discover for 2026-07-28 servers), and report the timings.

    Client options:
        --era handshake|stateless|auto
                                   handshake: initialize (2025-11-25); stateless: 2026-07-28;
                                   auto (default): server/discover, then initialize if that
                                   fails or gets no answer within 3 s
        --json                     print the whole result (call) or tool list (tools) as JSON
        --timeout SECONDS          give up (and cancel) after this long
    The server's stderr passes through to stderr.

    stdmcp config CLIENT [--name NAME] [--config FILE | --root DIR] [--via uvx|npx|path]
                         [--install]
        Print the configuration of CLIENT (claude-code, claude-desktop, cursor, vscode, codex,
        gemini, windsurf) for `stdmcp serve`: absolute paths, the environment the client would
        not pass, a tool timeout above the manifest's longest. The manifest is FILE, else the
        one serve would find here, else the built-in one over DIR (default: here). --install
        merges it into the client's file (a backup first; other servers kept) and says what
        changed. --via uvx or npx: the entry starts `uvx stdmcp serve …` or
        `npx -y stdmcp serve …` (the PyPI or npm package) instead of this binary's path.

    stdmcp help | --help | -h        This text.
    stdmcp --version | -V            The version.

SERVING:
    Each call runs its program directly (no shell), in its own process group, with stdin
    from a parameter or /dev/null, a minimal environment (PATH HOME USER LOGNAME LANG LC_ALL
    LC_CTYPE TZ TMPDIR plus what the manifest declares), a deadline, and output caps.
    Cancelling a call (or its deadline) sends SIGTERM to the group, then SIGKILL after the
    kill grace. stdin EOF, SIGTERM and SIGHUP: calls in flight get 1.5 s, then are cancelled;
    exit 0. SIGINT: cancel everything, exit 130.

ENVIRONMENT:
    RUST_LOG                 log filter for stderr (default warn; stdmcp=trace logs frames)
    STDMCP_CONFIG            manifest to serve when --config is not given
    STDMCP_ROOT              workspace of the built-in manifest
    STDMCP_HEARTBEAT_MS      heartbeat progress interval (overrides the manifest)
    STDMCP_DRAIN_MS          how long calls may finish after stdin closes (default 1500)
    STDMCP_GREP_SECONDS      how long one grep of a log or kept output scans (default 5)
    STDMCP_ERA               handshake: serve the initialize handshake only (as serve --era handshake)

EXIT CODES:
    0 success; 1 check found problems, or the tool returned isError (call); 2 usage error,
    a manifest that cannot be served, or a protocol or connection error; 130 interrupted.
";

/// Says what is wrong with the command line, and how to get help; exit code 2.
pub(super) fn usage(problem: &str) -> ExitCode {
    eprintln!("stdmcp: {problem}\nRun `stdmcp --help` for usage.");
    ExitCode::from(2)
}

/// A manifest's problems, one per line, on stderr.
pub(super) fn report(source: &Path, errors: &[ManifestError]) {
    eprintln!(
        "stdmcp: {} has {} problem(s):",
        source.display(),
        errors.len()
    );
    for e in errors {
        eprintln!("  {e}");
    }
}

/// A command-line error of `cmd`, as [`usage`] prints it.
pub(super) fn arg_error(cmd: &'static str) -> impl Fn(lexopt::Error) -> String {
    move |e| format!("{cmd}: {e}")
}

/// Writes CLI output; a closed pipe (`stdmcp check … | head`) is a normal end.
pub(super) fn emit(text: &str) -> ExitCode {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stdmcp: cannot write output: {e}");
            ExitCode::from(2)
        }
    }
}
