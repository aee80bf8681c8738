//! `missingPrograms`: what a manifest does when a tool's program is not on this machine.
//!
//! `"refuse"` (the default for a user's manifest): the manifest has a problem and `serve`
//! does not start, naming the tool and the `PATH` searched. `"skip"` (the built-in manifest's
//! setting, and a user's opt-in): the tool is left out, every other tool is served, and the
//! server says which were left out and why, on stderr and in its `instructions`, so that a
//! machine without `grep` still gets the tools it can run instead of "server disconnected".
//! A session kind whose program is missing is left out the same way. Only a missing program is
//! forgiven: any other problem of the same tool or kind still refuses.

use std::path::Path;

use serde_json::Value;

use super::fields::resolve;
use super::json::{Errors, Obj};
use crate::spec::SkippedTool;

/// Reads `missingPrograms`: true for `"skip"`, false for `"refuse"` or absent.
pub(super) fn skip_mode(top: &Obj<'_>, errs: &mut Errors) -> bool {
    match top.string("missingPrograms", errs).as_deref() {
        None | Some("refuse") => false,
        Some("skip") => true,
        Some(other) => {
            errs.add(
                &top.at("missingPrograms"),
                format!("must be \"refuse\" or \"skip\", not {other:?}"),
            );
            false
        }
    }
}

/// When the tool at `path` (the JSON `item`) cannot be served only because its program (or
/// `stdbuf`, for `lineBuffered`) is missing, removes those problems from `errs` and says why.
pub(super) fn take(item: &Value, path: &str, base: &Path, errs: &mut Errors) -> Option<String> {
    let program = item.get("program").and_then(Value::as_str)?;
    let missing = [format!("{path}.program"), format!("{path}.lineBuffered")];
    let reasons: Vec<String> = errs
        .0
        .iter()
        .filter(|e| missing.contains(&e.path))
        .map(|e| e.problem.clone())
        .collect();
    if reasons.is_empty() {
        return None;
    }
    // A `program` that is there but unusable (say, not executable) is not forgiven.
    let absent = !program.contains('/') || !resolve(base, program).exists();
    if errs.0.iter().any(|e| e.path == missing[0]) && !absent {
        return None;
    }
    errs.0.retain(|e| !missing.contains(&e.path));
    Some(reasons.join("; "))
}

/// Portfolios lose the members left out for a missing program; a portfolio left with no
/// member is left out too, naming them (`missingPrograms: "skip"`).
pub(super) fn narrow_portfolios(
    tools: &mut Vec<crate::spec::ToolSpec>,
    paths: &mut Vec<String>,
    skipped: &mut Vec<SkippedTool>,
) {
    let gone: Vec<String> = skipped.iter().map(|s| s.name.clone()).collect();
    let mut i = 0;
    while i < tools.len() {
        let t = &mut tools[i];
        if t.portfolio.is_empty() || !t.portfolio.iter().any(|m| gone.contains(m)) {
            i += 1;
            continue;
        }
        let lost: Vec<String> = t
            .portfolio
            .iter()
            .filter(|m| gone.contains(m))
            .cloned()
            .collect();
        t.portfolio.retain(|m| !gone.contains(m));
        if t.portfolio.is_empty() {
            skipped.push(SkippedTool {
                name: t.name.clone(),
                problem: format!("every member is missing ({})", lost.join(", ")),
            });
            tools.remove(i);
            paths.remove(i);
        } else {
            log::warn!("portfolio {} runs without {}", t.name, lost.join(", "));
            i += 1;
        }
    }
}

/// `instructions` with a sentence naming the tools left out, if any.
pub(super) fn instructions(given: Option<String>, skipped: &[SkippedTool]) -> Option<String> {
    if skipped.is_empty() {
        return given;
    }
    let names: Vec<&str> = skipped.iter().map(|s| s.name.as_str()).collect();
    let note = format!(
        "Not available on this machine (a program they need is missing): {}.",
        names.join(", ")
    );
    Some(match given {
        Some(g) if !g.is_empty() => format!("{g} {note}"),
        _ => note,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::Path;

    use serde_json::json;

    use crate::manifest::Manifest;

    fn manifest(mode: Option<&str>) -> serde_json::Value {
        let mut m = json!({
            "name": "m",
            "instructions": "Use them.",
            "tools": [
                {"name": "here", "description": "d", "program": "true"},
                {"name": "gone", "description": "d", "program": "no-such-program-stdmcp"}
            ]
        });
        if let Some(mode) = mode {
            m["missingPrograms"] = json!(mode);
        }
        m
    }

    fn load(v: &serde_json::Value) -> Result<Manifest, Vec<super::super::ManifestError>> {
        Manifest::parse(&v.to_string(), Path::new("."))
    }

    #[test]
    fn a_missing_program_refuses_by_default_with_the_precise_message() {
        for m in [manifest(None), manifest(Some("refuse"))] {
            let errs = load(&m).unwrap_err();
            assert_eq!(errs.len(), 1, "{errs:?}");
            assert_eq!(errs[0].path, "tools[1].program");
            assert!(errs[0]
                .problem
                .starts_with("`no-such-program-stdmcp` was not found on PATH"));
        }
    }

    #[test]
    fn skip_serves_the_rest_and_says_what_is_missing() {
        let m = load(&manifest(Some("skip"))).unwrap();
        let names: Vec<&str> = m.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["here"]);
        assert_eq!(m.skipped.len(), 1);
        assert_eq!(m.skipped[0].name, "gone");
        assert!(m.skipped[0].problem.contains("was not found on PATH"));
        let i = m.instructions.unwrap();
        assert!(i.starts_with("Use them. Not available"), "{i}");
        assert!(i.ends_with(": gone."), "{i}");
    }

    #[test]
    fn skip_leaves_out_a_session_kind_whose_program_is_missing() {
        let mut m = manifest(None);
        m["sessions"] = json!([
            {"name": "sh", "description": "d", "program": "sh", "answer": {"mode": "nul"}},
            {"name": "prover", "description": "d", "program": "no-such-repl-stdmcp",
             "answer": {"mode": "nul"}}
        ]);
        let errs = load(&m).unwrap_err();
        let paths: Vec<&str> = errs.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["tools[1].program", "sessions[1].program"]);
        m["missingPrograms"] = json!("skip");
        let loaded = load(&m).unwrap();
        let kinds: Vec<&str> = loaded.sessions.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(kinds, ["sh"]);
        let skipped: Vec<&str> = loaded.skipped.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(skipped, ["gone", "prover sessions"]);
        assert!(loaded
            .instructions
            .unwrap()
            .ends_with(": gone, prover sessions."));
    }

    #[test]
    fn skip_forgives_only_the_missing_program() {
        let mut m = manifest(Some("skip"));
        m["tools"][1]["timeoutSeconds"] = json!("soon");
        let errs = load(&m).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].path, "tools[1].timeoutSeconds");
        let mut bad = manifest(Some("sometimes"));
        bad["tools"].as_array_mut().unwrap().pop();
        let errs = load(&bad).unwrap_err();
        assert_eq!(errs[0].path, "missingPrograms", "{errs:?}");
    }
}
