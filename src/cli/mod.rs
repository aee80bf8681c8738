//! Command-line parsing and the `serve` and `check` commands.

mod client;
mod config;
mod describe;
mod say;
mod stdout;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::manifest;
use crate::spec::Manifest;
use say::{arg_error, emit, report, usage, HELP};

/// Runs the command line `args` (without the program's name); what `stdmcp` exits with.
pub fn run(args: Vec<String>) -> ExitCode {
    let Some(cmd) = args.first().map(String::as_str) else {
        eprint!("{HELP}");
        return ExitCode::from(2);
    };
    let rest = &args[1..];
    match cmd {
        "help" | "--help" | "-h" => {
            stdout::help();
            ExitCode::SUCCESS
        }
        "--version" | "-V" => {
            stdout::version();
            ExitCode::SUCCESS
        }
        "serve" => serve(rest),
        "check" => check(rest),
        "tools" => client::tools(rest),
        "call" => client::call(rest),
        "ping" => client::ping(rest),
        "config" => config::config(rest),
        other => usage(&format!("unknown command {other:?}")),
    }
}

/// What `serve` was asked: the manifest, and whether to serve the handshake era only.
struct ServeArgs {
    config: Option<PathBuf>,
    handshake_only: Option<bool>,
}

/// `serve`'s options (`--flag value` and `--flag=value` alike); `None` for `--help`.
fn serve_args(args: &[String]) -> Result<Option<ServeArgs>, String> {
    use lexopt::prelude::*;
    let err = arg_error("serve");
    let mut out = ServeArgs {
        config: None,
        handshake_only: None,
    };
    let mut p = lexopt::Parser::from_args(args);
    while let Some(arg) = p.next().map_err(&err)? {
        match arg {
            Long("era") => {
                let era = p.value().map_err(&err)?.string().map_err(&err)?;
                out.handshake_only = match era.as_str() {
                    // `legacy`: the name of earlier releases.
                    "handshake" | "legacy" => Some(true),
                    "auto" => Some(false),
                    e => return Err(format!("serve: --era {e:?}: use auto or handshake")),
                }
            }
            Short('c') | Long("config") => out.config = Some(p.value().map_err(&err)?.into()),
            Short('h') | Long("help") => return Ok(None),
            _ => return Err(err(arg.unexpected())),
        }
    }
    Ok(Some(out))
}

fn serve(args: &[String]) -> ExitCode {
    let ServeArgs {
        config,
        handshake_only,
    } = match serve_args(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            stdout::help();
            return ExitCode::SUCCESS;
        }
        Err(msg) => return usage(&msg),
    };
    let config = config.or_else(manifest::locate);
    let loaded = match &config {
        Some(path) => Manifest::load(path).map_err(|e| (path.clone(), e)),
        None => {
            Manifest::default_manifest().map_err(|e| (PathBuf::from("the built-in manifest"), e))
        }
    };
    let manifest = match loaded {
        Ok(m) => m,
        Err((path, errors)) => {
            report(&path, &errors);
            return ExitCode::from(2);
        }
    };
    let what = match &config {
        Some(path) => path.display().to_string(),
        None => {
            let root = manifest.roots.values().next();
            let root = root.map(|r| r.display().to_string()).unwrap_or_default();
            format!("the built-in manifest over {root}")
        }
    };
    warn_all(&manifest);
    // The private directory (spool, onCancel commands) out of every root the programs reach,
    // and out of every place a confined program may write.
    let writable: Vec<PathBuf> = manifest
        .tools
        .iter()
        .map(|t| &t.confine)
        .chain(manifest.sessions.iter().map(|k| &k.confine))
        .flat_map(|r| r.write.iter().cloned())
        .collect();
    stdmcp::process::private_dir::keep_out_of(
        manifest
            .roots
            .values()
            .chain(writable.iter())
            .map(PathBuf::as_path),
    );
    let manifest_modes = modes(&manifest);
    let server = crate::assemble::server(manifest);
    // Every tool `tools/list` shows: the manifest's, and those of its sessions, logs, the
    // output spool and jobs (added when serving starts).
    let mut catalog = server.catalog().clone();
    let _ = catalog.add_job_tools();
    let names: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    let tools = match names.len() {
        0 => "no tools".to_owned(),
        1 => format!("1 tool: {}", names[0]),
        n => format!("{n} tools: {}", names.join(", ")),
    };
    eprintln!(
        "stdmcp: serving {what} ({tools}); confinement: {}",
        confinement(&manifest_modes)
    );
    match handshake_only {
        Some(yes) => server.handshake_only(yes).serve_stdio(),
        None => server.serve_stdio(),
    }
}

fn check(args: &[String]) -> ExitCode {
    let [file] = args else {
        return usage("check needs exactly one manifest file");
    };
    let path = PathBuf::from(file);
    let manifest = match Manifest::load(&path) {
        Ok(m) => m,
        Err(errors) => {
            report(&path, &errors);
            return ExitCode::from(1);
        }
    };
    warn_all(&manifest);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: OK. {} {} serves {} tool(s){}:",
        path.display(),
        manifest.name,
        manifest.version,
        manifest.tools.len(),
        if manifest.sessions.is_empty() {
            String::new()
        } else {
            format!(" and {} session kind(s)", manifest.sessions.len())
        }
    );
    for (name, dir) in &manifest.roots {
        let write = match manifest.writable_roots.contains(name) {
            true => " (writable)",
            false => "",
        };
        let _ = writeln!(out, "  root {name} = {}{write}", dir.display());
    }
    let _ = writeln!(out, "  confinement: {}", stdmcp::process::confine::kernel());
    out.push_str(&describe::manifest(&manifest));
    emit(&out)
}

/// How many of the manifest's programs (tools that run one, session kinds) are confined in
/// each mode: on, require, off.
fn modes(manifest: &Manifest) -> [usize; 3] {
    use stdmcp::process::confine::Mode;
    let all = manifest
        .tools
        .iter()
        .filter(|t| t.portfolio.is_empty())
        .map(|t| t.confine.mode)
        .chain(manifest.sessions.iter().map(|k| k.confine.mode));
    let mut n = [0; 3];
    for m in all {
        n[match m {
            Mode::On => 0,
            Mode::Require => 1,
            Mode::Off => 2,
        }] += 1;
    }
    n
}

/// What the startup line says of confinement: the kernel's Landlock, and the programs it
/// leaves unconfined (`confine: off`).
fn confinement([_, require, off]: &[usize; 3]) -> String {
    let kernel = stdmcp::process::confine::kernel();
    let mut s = kernel.describe();
    if *off > 0 {
        s.push_str(&format!(
            "; {off} unconfined by the manifest (confine: off)"
        ));
    }
    if *require > 0 && kernel.used < stdmcp::process::confine::NEWEST_ABI {
        s.push_str(&format!(
            "; {require} with confine: require will refuse to run what this kernel cannot confine"
        ));
    }
    s
}

/// Prints what is allowed but risky (a value run as code…) on stderr.
fn warn_all(manifest: &Manifest) {
    for s in &manifest.skipped {
        eprintln!(
            "stdmcp: tool {} left out (missingPrograms: skip): {}",
            s.name, s.problem
        );
    }
    for w in manifest::lint::warnings(manifest) {
        eprintln!("stdmcp: warning: {w}");
    }
}
