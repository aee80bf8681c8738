//! `stdmcp config CLIENT --install`: merge the entry into the client's configuration file.
//!
//! Every other server and setting is kept. The file is read whole, changed in memory, and
//! replaced atomically (a temporary file in the same directory, then rename); the previous
//! version is copied to `FILE.stdmcp.bak` first. When the file already holds exactly this
//! entry nothing is written. JSON files are rewritten by serde_json (keys sorted, two-space
//! indentation); a JSON file with comments is refused, not rewritten. Codex's TOML is edited
//! at table level: the `[mcp_servers.NAME]` table and its sub-tables are replaced and every
//! other line is kept as it was.

use std::fs;
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Map, Value};

use super::entry::{json_entry, ClientApp, ServerEntry};
use super::toml;

/// The file `--install` edits: the user's file for the desktop apps and CLIs, the current
/// project's for Claude Code (`.mcp.json`) and VS Code (`.vscode/mcp.json`).
pub(super) fn target_path(client: ClientApp) -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let cwd = std::env::current_dir().ok();
    Some(match client {
        ClientApp::ClaudeCode => cwd?.join(".mcp.json"),
        ClientApp::VsCode => cwd?.join(".vscode").join("mcp.json"),
        ClientApp::ClaudeDesktop if cfg!(target_os = "macos") => {
            home?.join("Library/Application Support/Claude/claude_desktop_config.json")
        }
        ClientApp::ClaudeDesktop => {
            let config = std::env::var_os("XDG_CONFIG_HOME")
                .filter(|x| !x.is_empty())
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(".config")))?;
            config.join("Claude").join("claude_desktop_config.json")
        }
        ClientApp::Cursor => home?.join(".cursor").join("mcp.json"),
        ClientApp::Codex => std::env::var_os("CODEX_HOME")
            .filter(|c| !c.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".codex")))?
            .join("config.toml"),
        ClientApp::Gemini => home?.join(".gemini").join("settings.json"),
        ClientApp::Windsurf => home?.join(".codeium/windsurf/mcp_config.json"),
    })
}

pub(super) fn install(client: ClientApp, e: &ServerEntry) -> ExitCode {
    let Some(path) = target_path(client) else {
        eprintln!("stdmcp: cannot tell where the configuration goes: HOME is not set");
        return ExitCode::from(2);
    };
    match install_at(client, e, &path) {
        Ok(msg) => crate::cli::say::emit(&msg),
        Err(msg) => {
            eprintln!("stdmcp: {}: {msg}", path.display());
            ExitCode::from(2)
        }
    }
}

/// Merges the entry into `path` and says what changed.
pub(super) fn install_at(
    client: ClientApp,
    e: &ServerEntry,
    path: &Path,
) -> Result<String, String> {
    let old = match fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(err) if err.kind() == ErrorKind::NotFound => None,
        Err(err) => return Err(format!("cannot read: {err}")),
    };
    let (new, replaced) = match client {
        ClientApp::Codex => merge_toml(old.as_deref().unwrap_or(""), e)?,
        _ => merge_json(client, old.as_deref().unwrap_or(""), e)?,
    };
    if old.as_deref() == Some(new.as_str()) {
        return Ok(format!(
            "{}: unchanged (server {:?} is already configured this way)\n",
            path.display(),
            e.name
        ));
    }
    let mut msg = String::new();
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|err| format!("cannot create its directory: {err}"))?;
    }
    if old.is_some() {
        let backup = backup_path(path);
        fs::copy(path, &backup)
            .map_err(|err| format!("cannot write the backup {}: {err}", backup.display()))?;
        msg.push_str(&format!("backup: {}\n", backup.display()));
    }
    write_atomically(path, &new)?;
    let verb = match (old.is_some(), replaced) {
        (false, _) => "created with",
        (true, false) => "added",
        (true, true) => "replaced",
    };
    msg.insert_str(
        0,
        &format!(
            "{}: {verb} server {:?} ({} {})\n",
            path.display(),
            e.name,
            e.command.display(),
            e.args.join(" ")
        ),
    );
    Ok(msg)
}

pub(super) fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".stdmcp.bak");
    path.with_file_name(name)
}

fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".stdmcp-{}.tmp", std::process::id()));
    let tmp = path.with_file_name(name);
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        if let Ok(meta) = fs::metadata(path) {
            fs::set_permissions(&tmp, meta.permissions())?;
        }
        fs::rename(&tmp, path)
    })();
    result.map_err(|err| {
        let _ = fs::remove_file(&tmp);
        format!("cannot write: {err}")
    })
}

/// The JSON file with the entry set under the client's servers key; whether it replaced one.
fn merge_json(client: ClientApp, old: &str, e: &ServerEntry) -> Result<(String, bool), String> {
    let mut doc: Value = if old.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(old).map_err(|err| {
            format!(
                "not plain JSON ({err}); left untouched. Comments or trailing commas? Paste \
                 the output of `stdmcp config` into it by hand"
            )
        })?
    };
    let Value::Object(top) = &mut doc else {
        return Err("the file is not a JSON object; left untouched".into());
    };
    let key = client.servers_key();
    let servers = top.entry(key).or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(format!("{key:?} is not an object; left untouched"));
    };
    let entry = json_entry(client, e);
    let replaced = servers.insert(e.name.clone(), entry).is_some();
    let text = serde_json::to_string_pretty(&doc).map_err(|err| err.to_string())? + "\n";
    // Unchanged content compares equal to the old text only if it was formatted like this;
    // compare the parsed documents so a differently indented file is not rewritten.
    if !old.trim().is_empty() && serde_json::from_str::<Value>(old).ok().as_ref() == Some(&doc) {
        return Ok((old.to_owned(), replaced));
    }
    Ok((text, replaced))
}

/// Codex's `config.toml` with `[mcp_servers.NAME]` (and its sub-tables) replaced by the new
/// table, or the table appended; whether it replaced one.
pub(super) fn merge_toml(old: &str, e: &ServerEntry) -> Result<(String, bool), String> {
    let table = toml::codex_table(e);
    let mut kept: Vec<&str> = Vec::new();
    let mut ours: Vec<&str> = Vec::new();
    let mut in_ours = false;
    let mut table_name = String::new();
    let mut at = None;
    for line in old.lines() {
        if let Some(name) = header(line) {
            in_ours = is_ours(&name, &e.name);
            if in_ours && at.is_none() {
                at = Some(kept.len());
            }
            table_name = name;
        } else if !in_ours && defines_inline(&table_name, line, &e.name) {
            return Err(format!(
                "server {:?} is defined as an inline table ({}); left untouched: remove it \
                 or edit it by hand",
                e.name,
                line.trim()
            ));
        }
        if in_ours {
            ours.push(line);
        } else {
            kept.push(line);
        }
    }
    if ours.join("\n").trim() == table.trim() {
        return Ok((old.to_owned(), true));
    }
    let mut out = String::new();
    let (before, after) = kept.split_at(at.unwrap_or(kept.len()));
    for l in before {
        out.push_str(l);
        out.push('\n');
    }
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
    out.push_str(&table);
    if !after.is_empty() {
        out.push('\n');
    }
    for l in after {
        out.push_str(l);
        out.push('\n');
    }
    Ok((out, at.is_some()))
}

/// The dotted name of a `[table]` or `[[array]]` header line, quotes removed.
fn header(line: &str) -> Option<String> {
    let t = line.trim();
    let t = t.split_once(" #").map_or(t, |(h, _)| h).trim_end();
    let inner = t
        .strip_prefix("[[")
        .and_then(|s| s.strip_suffix("]]"))
        .or_else(|| t.strip_prefix('[').and_then(|s| s.strip_suffix(']')))?;
    let ok = |c: char| c.is_ascii_alphanumeric() || "_-.\"' ".contains(c);
    if inner.is_empty() || !inner.chars().all(ok) {
        return None;
    }
    let parts: Vec<String> = inner
        .split('.')
        .map(|p| p.trim().trim_matches(|c| c == '"' || c == '\'').to_owned())
        .collect();
    Some(parts.join("."))
}

/// `mcp_servers.NAME` or one of its sub-tables.
fn is_ours(table: &str, name: &str) -> bool {
    let own = format!("mcp_servers.{name}");
    table == own || table.starts_with(&format!("{own}."))
}

/// Whether `line`, in table `table` (empty at the top), defines server `name` with a dotted
/// key or an inline table (`mcp_servers.NAME = {…}`, or `NAME = {…}` under `[mcp_servers]`),
/// which a table-level merge cannot replace.
fn defines_inline(table: &str, line: &str, name: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with('#') {
        return false;
    }
    let Some((k, _)) = t.split_once('=') else {
        return false;
    };
    let k: String = k
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
        .collect();
    let full = if table.is_empty() {
        k
    } else {
        format!("{table}.{k}")
    };
    is_ours(&full, name)
}

#[cfg(test)]
mod tests {
    use super::{defines_inline, header, is_ours};

    #[test]
    fn headers_are_recognised_with_quotes_and_comments() {
        assert_eq!(header("[mcp_servers.a]"), Some("mcp_servers.a".into()));
        assert_eq!(
            header("  [ mcp_servers.\"a\" ]  # note"),
            Some("mcp_servers.a".into())
        );
        assert_eq!(header("[[profiles]]"), Some("profiles".into()));
        assert_eq!(header("args = [\"a\"]"), None);
        assert_eq!(header("[\"a\", \"b\"]"), None);
        assert!(is_ours("mcp_servers.a.env", "a"));
        assert!(!is_ours("mcp_servers.ab", "a"));
        assert!(defines_inline(
            "mcp_servers",
            "a = { command = \"x\" }",
            "a"
        ));
        assert!(defines_inline("", "mcp_servers.a.command = \"x\"", "a"));
        assert!(!defines_inline("mcp_servers.b", "a = 1", "a"));
        assert!(!defines_inline("", "# mcp_servers.a = 1", "a"));
    }
}
