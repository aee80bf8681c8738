//! One client's server entry: which client, how it starts the server, what the entry says,
//! and the entry as JSON (every client but Codex, whose TOML is `toml.rs`'s).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

/// The clients `config` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ClientApp {
    ClaudeCode,
    ClaudeDesktop,
    Cursor,
    VsCode,
    Codex,
    Gemini,
    Windsurf,
}

impl ClientApp {
    pub(super) const ALL: [(&'static str, ClientApp); 7] = [
        ("claude-code", ClientApp::ClaudeCode),
        ("claude-desktop", ClientApp::ClaudeDesktop),
        ("cursor", ClientApp::Cursor),
        ("vscode", ClientApp::VsCode),
        ("codex", ClientApp::Codex),
        ("gemini", ClientApp::Gemini),
        ("windsurf", ClientApp::Windsurf),
    ];

    pub(super) fn parse(s: &str) -> Option<ClientApp> {
        ClientApp::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, c)| *c)
    }

    /// The key that holds the servers in the client's JSON file.
    pub(super) fn servers_key(self) -> &'static str {
        match self {
            ClientApp::VsCode => "servers",
            _ => "mcpServers",
        }
    }
}

/// How the client starts the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Via {
    /// This binary, by its absolute path (the default).
    Path,
    /// `uvx stdmcp serve …`: the PyPI package, run by uv.
    Uvx,
    /// `npx -y stdmcp serve …`: the npm package, run by npm.
    Npx,
}

impl Via {
    pub(super) fn parse(s: &str) -> Option<Via> {
        match s {
            "path" => Some(Via::Path),
            "uvx" => Some(Via::Uvx),
            "npx" => Some(Via::Npx),
            _ => None,
        }
    }

    /// The command and the arguments before `serve`.
    pub(super) fn launcher(self) -> Option<(&'static str, &'static [&'static str])> {
        match self {
            Via::Path => None,
            Via::Uvx => Some(("uvx", &["stdmcp"])),
            Via::Npx => Some(("npx", &["-y", "stdmcp"])),
        }
    }
}

/// What one client entry says, whatever the client's syntax.
#[derive(Debug)]
pub(super) struct ServerEntry {
    pub name: String,
    /// The running binary, absolute; or `uvx` or `npx` (`--via`).
    pub command: PathBuf,
    pub args: Vec<String>,
    /// Variables set for the server (`STDMCP_ROOT` for the built-in manifest).
    pub env: BTreeMap<String, String>,
    /// Variables of the client's environment the server needs passed through.
    pub pass_env: Vec<String>,
    /// The longest tool deadline plus kill grace plus a margin, in whole seconds.
    pub timeout_secs: u64,
    /// What is served, for the notes.
    pub serves: String,
}

/// The client's server entry as JSON (every client but Codex).
pub(super) fn json_entry(client: ClientApp, e: &ServerEntry) -> Value {
    let mut o = Map::new();
    if client == ClientApp::VsCode {
        o.insert("type".into(), json!("stdio"));
    }
    o.insert("command".into(), json!(e.command.display().to_string()));
    o.insert("args".into(), json!(e.args));
    if !e.env.is_empty() {
        o.insert("env".into(), json!(e.env));
    }
    if client == ClientApp::Gemini {
        o.insert("timeout".into(), json!(e.timeout_secs * 1000));
    }
    Value::Object(o)
}
