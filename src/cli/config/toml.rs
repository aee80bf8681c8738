//! The Codex entry as TOML, written by hand: one `[mcp_servers.NAME]` table whose values are
//! strings, arrays of strings, an inline table of strings and an integer.

use std::fmt::Write as _;

use super::entry::ServerEntry;

/// The `[mcp_servers.NAME]` table for `~/.codex/config.toml`. `NAME` is a bare key (letters,
/// digits, '-', '_'; `config` checks it).
pub(super) fn codex_table(e: &ServerEntry) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "[mcp_servers.{}]", e.name);
    let _ = writeln!(s, "# stdmcp config: serves {}", e.serves.replace('\n', " "));
    let _ = writeln!(s, "command = {}", string(&e.command.display().to_string()));
    let _ = writeln!(s, "args = {}", array(&e.args));
    if !e.env.is_empty() {
        let pairs: Vec<String> = e
            .env
            .iter()
            .map(|(k, v)| format!("{} = {}", key(k), string(v)))
            .collect();
        let _ = writeln!(s, "env = {{ {} }}", pairs.join(", "));
    }
    if !e.pass_env.is_empty() {
        let _ = writeln!(s, "env_vars = {}", array(&e.pass_env));
    }
    let _ = writeln!(s, "tool_timeout_sec = {}", e.timeout_secs);
    s
}

fn array(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|i| string(i)).collect();
    format!("[{}]", items.join(", "))
}

/// A key: bare when it can be, else a basic string.
fn key(k: &str) -> String {
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if !k.is_empty() && k.chars().all(bare) {
        k.to_owned()
    } else {
        string(k)
    }
}

/// A TOML basic string (TOML 1.0, "String"): `"` and `\` escaped, control characters as
/// escapes.
pub(super) fn string(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(s, "\\u{:04X}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::string;

    #[test]
    fn strings_escape_quotes_backslashes_and_controls() {
        assert_eq!(string(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(string("x\ny\u{1}"), r#""x\ny\u0001""#);
        assert_eq!(string("é/ü"), "\"é/ü\"");
    }
}
