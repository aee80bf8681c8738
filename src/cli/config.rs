//! `stdmcp config CLIENT`: the ready-to-paste configuration of one MCP client, with absolute
//! paths, the environment the client would not pass, and a tool timeout long enough for the
//! manifest's longest tool; `--install` merges it into the client's own file.
//!
//! The document goes to stdout (JSON, TOML for Codex, and for Claude Code a `claude mcp add`
//! line before the `.mcp.json` document); advice on where it goes and what it sets, to stderr.

mod entry;
mod install;
mod toml;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use crate::manifest;
use crate::spec::Manifest;
use serde_json::json;

use super::say::{arg_error, emit, report, usage, HELP};
use entry::{json_entry, ClientApp, ServerEntry, Via};

/// Variables Codex passes to a server from its own environment (openai/codex
/// `codex-rs/rmcp-client/src/utils.rs`, `DEFAULT_ENV_VARS`); every other one is cleared
/// unless the entry names it in `env_vars`.
const CODEX_KEEPS: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ",
];

/// Variables `stdmcp serve` passes to every tool (README, "Security model"); the ones Codex
/// would clear are named in its `env_vars`.
const SERVE_PASSES: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];

/// Added to the longest tool's deadline and kill grace for the client's own timeout, so the
/// server's deadline (a precise error) fires before the client gives up.
const CLIENT_MARGIN: Duration = Duration::from_secs(10);

struct ConfigRequest {
    client: ClientApp,
    name: Option<String>,
    install: bool,
    config: Option<PathBuf>,
    root: Option<PathBuf>,
    via: Via,
}

pub(super) fn config(args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return emit(HELP);
    }
    let req = match parse_args(args) {
        Ok(r) => r,
        Err(msg) => return usage(&msg),
    };
    let entry = match build_entry(&req) {
        Ok(e) => e,
        Err(code) => return code,
    };
    if req.install {
        return install::install(req.client, &entry);
    }
    eprint!("{}", notes(req.client, &entry));
    emit(&render(req.client, &entry))
}

fn parse_args(args: &[String]) -> Result<ConfigRequest, String> {
    let names: Vec<&str> = ClientApp::ALL.iter().map(|(n, _)| *n).collect();
    let Some(first) = args.first() else {
        return Err(format!("config needs a client: {}", names.join(", ")));
    };
    let client = ClientApp::parse(first)
        .ok_or_else(|| format!("unknown client {first:?}; one of {}", names.join(", ")))?;
    let mut req = ConfigRequest {
        client,
        name: None,
        install: false,
        config: None,
        root: None,
        via: Via::Path,
    };
    parse_options(&args[1..], &mut req)?;
    if let Some(n) = &req.name {
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "--name {n:?}: use letters, digits, '-' and '_' (clients use it in tool names)"
            ));
        }
    }
    if req.config.is_some() && req.root.is_some() {
        return Err(
            "--root sets the workspace of the built-in manifest; with --config, \
                    declare roots in the manifest"
                .into(),
        );
    }
    Ok(req)
}

/// The options after the client (`--flag value` and `--flag=value` alike).
fn parse_options(args: &[String], req: &mut ConfigRequest) -> Result<(), String> {
    use lexopt::prelude::*;
    let err = arg_error("config");
    let mut p = lexopt::Parser::from_args(args);
    while let Some(arg) = p.next().map_err(&err)? {
        match arg {
            Long("install") => req.install = true,
            Long("name") => req.name = Some(p.value().map_err(&err)?.string().map_err(&err)?),
            Short('c') | Long("config") => req.config = Some(p.value().map_err(&err)?.into()),
            Long("root") => req.root = Some(p.value().map_err(&err)?.into()),
            Long("via") => {
                let v = p.value().map_err(&err)?.string().map_err(&err)?;
                req.via =
                    Via::parse(&v).ok_or_else(|| format!("--via {v:?}: use uvx, npx or path"))?;
            }
            // `config CLIENT serve --config F` reads naturally.
            Value(v) if v == "serve" => {}
            _ => return Err(err(arg.unexpected())),
        }
    }
    Ok(())
}

fn build_entry(req: &ConfigRequest) -> Result<ServerEntry, ExitCode> {
    let command = match req.via.launcher() {
        Some((cmd, _)) => PathBuf::from(cmd),
        None => std::env::current_exe()
            .and_then(|p| p.canonicalize())
            .map_err(|e| {
                eprintln!("stdmcp: cannot find the path of this binary: {e}");
                ExitCode::from(2)
            })?,
    };
    // A manifest `serve` would find from here (./stdmcp.json, $STDMCP_CONFIG) is pinned
    // by absolute path: the client starts the server in a directory of its own choosing.
    let config = match &req.config {
        Some(c) => Some(c.clone()),
        None if req.root.is_none() => manifest::locate(),
        None => None,
    };
    let mut env = BTreeMap::new();
    let mut args: Vec<String> = req
        .via
        .launcher()
        .map_or(&[][..], |(_, pre)| pre)
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    args.push("serve".to_owned());
    let (manifest, serves) = match config {
        Some(path) => {
            let abs = absolute(&path)?;
            let m = Manifest::load(&abs).map_err(|errors| {
                report(&abs, &errors);
                ExitCode::from(2)
            })?;
            args.push("--config".into());
            args.push(abs.display().to_string());
            let serves = format!("{} ({} tools)", abs.display(), m.tools.len());
            (m, serves)
        }
        None => {
            let m = match &req.root {
                Some(root) => builtin_at(root)?,
                None => Manifest::default_manifest().map_err(|errors| {
                    report(Path::new("the built-in manifest"), &errors);
                    ExitCode::from(2)
                })?,
            };
            let root = m.roots.values().next().cloned().unwrap_or_default();
            env.insert("STDMCP_ROOT".to_owned(), root.display().to_string());
            let serves = format!("the built-in read-only tools over {}", root.display());
            (m, serves)
        }
    };
    let name = req.name.clone().unwrap_or_else(|| default_name(&manifest));
    Ok(ServerEntry {
        name,
        command,
        args,
        env,
        pass_env: pass_env(&manifest),
        timeout_secs: client_timeout(&manifest).as_secs(),
        serves,
    })
}

/// The built-in manifest over `root`, which must be a directory.
fn builtin_at(root: &Path) -> Result<Manifest, ExitCode> {
    let abs = absolute(root)?;
    if !abs.is_dir() {
        eprintln!("stdmcp: --root {}: not a directory", root.display());
        return Err(ExitCode::from(2));
    }
    Manifest::parse(manifest::DEFAULT_MANIFEST, &abs).map_err(|errors| {
        report(Path::new("the built-in manifest"), &errors);
        ExitCode::from(2)
    })
}

fn absolute(p: &Path) -> Result<PathBuf, ExitCode> {
    p.canonicalize().map_err(|e| {
        eprintln!("stdmcp: {}: {e}", p.display());
        ExitCode::from(2)
    })
}

/// The manifest's name as a server key: `stdmcp` for the built-in one, otherwise its name
/// with anything but letters, digits, '-' and '_' turned into '-'.
fn default_name(m: &Manifest) -> String {
    if m.name == "stdmcp-default" {
        return "stdmcp".to_owned();
    }
    let n: String = m
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let n = n.trim_matches('-');
    if n.is_empty() {
        "stdmcp".to_owned()
    } else {
        n.to_owned()
    }
}

/// The longest tool deadline plus its kill grace plus a margin, rounded up to seconds.
fn client_timeout(m: &Manifest) -> Duration {
    let longest = m
        .tools
        .iter()
        .map(|t| t.timeout + t.kill_grace)
        .max()
        .unwrap_or(m.defaults.timeout + m.defaults.kill_grace);
    Duration::from_secs((longest + CLIENT_MARGIN).as_secs_f64().ceil() as u64)
}

/// Variables the server passes to its tools that Codex would clear.
fn pass_env(m: &Manifest) -> Vec<String> {
    let mut names: Vec<String> = SERVE_PASSES
        .iter()
        .map(|s| (*s).to_owned())
        .chain(m.defaults.pass_env.iter().cloned())
        .chain(m.tools.iter().flat_map(|t| t.pass_env.iter().cloned()))
        .filter(|n| !CODEX_KEEPS.contains(&n.as_str()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The whole document for one client, as printed.
fn render(client: ClientApp, e: &ServerEntry) -> String {
    if client == ClientApp::Codex {
        return toml::codex_table(e);
    }
    let doc = json!({ client.servers_key(): { e.name.as_str(): json_entry(client, e) } });
    let json = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
    if client != ClientApp::ClaudeCode {
        return json;
    }
    let mut line = vec![
        "claude".to_owned(),
        "mcp".into(),
        "add".into(),
        "--transport".into(),
        "stdio".into(),
        "--scope".into(),
        "user".into(),
    ];
    for (k, v) in &e.env {
        line.push("--env".into());
        line.push(format!("{k}={v}"));
    }
    line.push(e.name.clone());
    line.push("--".into());
    line.push(e.command.display().to_string());
    line.extend(e.args.iter().cloned());
    let line: Vec<String> = line.iter().map(|w| shell_quote(w)).collect();
    format!("{}\n\n{json}", line.join(" "))
}

/// `w` as one POSIX shell word.
fn shell_quote(w: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c);
    if !w.is_empty() && w.chars().all(plain) {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// Where the entry goes, what it sets and what the client does with it (stderr).
fn notes(client: ClientApp, e: &ServerEntry) -> String {
    let t = e.timeout_secs;
    let mut s = format!("# {} serves {}.\n", e.name, e.serves);
    match e.command.to_str() {
        Some("uvx") => s.push_str(
            "# The client runs the PyPI package stdmcp with uvx, which must be on the PATH it \
             gives servers; uv fetches the package on first use (from its cache, \
             UV_INDEX_URL or a --find-links folder when offline).\n",
        ),
        Some("npx") => s.push_str(
            "# The client runs the npm package stdmcp with npx, which must be on the PATH it \
             gives servers; npm fetches the package on first use (from its cache or the \
             registry in ~/.npmrc).\n",
        ),
        _ => {}
    }
    let per = match client {
        ClientApp::ClaudeCode => format!(
            "# Run the line (all projects), or put the JSON in a project's .mcp.json (each user \
             approves it once).\n# Claude Code's tool timeout is MCP_TOOL_TIMEOUT (ms): set \
             \"env\": {{\"MCP_TOOL_TIMEOUT\": \"{}\"}} in ~/.claude/settings.json for \
             tools up to {t} s.\n",
            t * 1000
        ),
        ClientApp::ClaudeDesktop => format!(
            "# Merge into {} (or: stdmcp config claude-desktop --install), then restart \
             Claude Desktop.\n# Claude Desktop gives a tool about 60 s and has no setting for \
             it; this manifest allows {t} s.\n",
            install::target_path(client).map_or("claude_desktop_config.json".into(), |p| p
                .display()
                .to_string())
        ),
        ClientApp::Cursor => format!(
            "# Merge into ~/.cursor/mcp.json (all projects) or .cursor/mcp.json (this project).\n\
             # Cursor has no per-server timeout setting; this manifest allows {t} s.\n"
        ),
        ClientApp::VsCode => format!(
            "# Merge into .vscode/mcp.json of the workspace (or the user profile's mcp.json).\n\
             # VS Code has no per-server timeout setting; this manifest allows {t} s.\n"
        ),
        ClientApp::Codex => {
            "# Append to ~/.codex/config.toml (or: stdmcp config codex --install).\n".to_owned()
        }
        ClientApp::Gemini => "# Merge into ~/.gemini/settings.json (all folders) or \
             .gemini/settings.json. Gemini CLI starts no MCP server in a folder it does not \
             trust: trust it when asked, or run /permissions.\n"
            .to_owned(),
        ClientApp::Windsurf => format!(
            "# Merge into ~/.codeium/windsurf/mcp_config.json, then refresh MCP servers.\n\
             # Windsurf has no per-server timeout setting; this manifest allows {t} s.\n"
        ),
    };
    s.push_str(&per);
    s
}
