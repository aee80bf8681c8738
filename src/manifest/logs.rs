//! Reads a tool's `logs` key (README "Log files"): globs relative to the call's working
//! directory, checked to stay inside it.

use super::json::{Errors, Obj};
use crate::spec::logs::Logs;
use crate::spec::{Cwd, ToolSpec, LOGS_TOOL, LOG_TOOL, OUTPUT_TOOL};

/// Most globs a tool may declare.
const MAX_GLOBS: usize = 16;

/// Reads a tool's `logs` (absent: none). A tool with logs needs a working directory.
pub(super) fn logs(o: &Obj<'_>, cwd: Option<&Cwd>, errs: &mut Errors) -> Option<Logs> {
    let v = o.map.get("logs")?;
    let at = o.at("logs");
    let Some(items) = v
        .as_array()
        .filter(|a| !a.is_empty() && a.len() <= MAX_GLOBS)
    else {
        errs.add(&at, format!("must be an array of 1-{MAX_GLOBS} globs"));
        return None;
    };
    let mut globs = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item
            .as_str()
            .ok_or("must be a string (a glob)")
            .and_then(glob)
        {
            Ok(g) => globs.push(g),
            Err(why) => errs.add(&format!("{at}[{i}]"), why),
        }
    }
    if cwd.is_none() {
        errs.add(
            &at,
            "logs are found in the call's working directory: the tool needs a `cwd`",
        );
    }
    Some(Logs { globs })
}

/// A glob's components, or why it is refused.
fn glob(s: &str) -> Result<Vec<String>, &'static str> {
    if s.is_empty() || s.contains('\0') || s.len() > 1024 {
        return Err("must be 1-1024 characters without NUL");
    }
    if s.starts_with('/') {
        return Err("must be relative to the call's working directory, not absolute");
    }
    let parts: Vec<String> = s.split('/').map(str::to_owned).collect();
    if parts.iter().any(|p| p == "..") {
        return Err("must not contain `..`: logs stay inside the working directory");
    }
    if parts.iter().any(|p| p.is_empty() || p == ".") {
        return Err("must not contain empty or `.` components (`a//b`, `./a`, `a/`)");
    }
    Ok(parts)
}

/// Refuses manifest tools named like the built-in ones they would be replaced by.
pub(super) fn check_names(tools: &[ToolSpec], errs: &mut Errors) {
    let with_logs = tools.iter().any(|t| t.logs.is_some());
    for (i, t) in tools.iter().enumerate() {
        let taken =
            t.name == OUTPUT_TOOL || (with_logs && (t.name == LOGS_TOOL || t.name == LOG_TOOL));
        if taken {
            errs.add(
                &format!("tools[{i}].name"),
                format!(
                    "{} is the name of a built-in tool (README \"Long runs\")",
                    t.name
                ),
            );
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn globs_are_relative_and_stay_inside() {
        assert_eq!(glob(".hol/logs/*").unwrap(), [".hol", "logs", "*"]);
        for bad in [
            "",
            "/var/log/*",
            "../x",
            "a/../../b",
            "a//b",
            "./a",
            "a/",
            "a\0b",
        ] {
            assert!(glob(bad).is_err(), "{bad:?}");
        }
    }
}
