//! A tool's remote-work hooks (README "Remote work"; docs/cluster.md): values captured from
//! its program's first output lines, and an `onCancel` command run when a call is abandoned.
//!
//! Placeholders: `{callId}` and `{timeoutMinutes}` in `args` literals and `onCancel`;
//! captured names (`capture` regexes' named groups) in `onCancel` only. Every value a
//! placeholder takes is plain (`[A-Za-z0-9._-]`, not starting with `-`): the call id and the
//! timeout are built by the server, and a captured value that is not plain is refused (it
//! comes from the program's output, so it is untrusted).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use regex_lite::Regex;

/// Output lines (of each stream) that `capture` regexes are matched against.
pub(crate) const CAPTURE_LINES: usize = 100;

/// Longest captured value.
pub(crate) const MAX_CAPTURED: usize = 128;

/// Default deadline of an `onCancel` command.
pub(crate) const DEFAULT_ON_CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// The placeholders the server fills in itself.
pub(crate) const BUILT_IN: [&str; 2] = ["callId", "timeoutMinutes"];

/// A tool's remote-work hooks (all empty for an ordinary tool).
#[derive(Clone, Debug, Default)]
pub struct Remote {
    /// Regexes whose named groups capture values from the first output lines.
    pub capture: Vec<Regex>,
    /// Program (absolute) and argument templates run when a call is abandoned.
    pub on_cancel: Option<(PathBuf, Vec<String>)>,
    /// Deadline of the `onCancel` command.
    pub on_cancel_timeout: Duration,
}

/// The names of the `{name}` placeholders in a template element.
pub(crate) fn placeholders(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('}') else { break };
        let name = &rest[..close];
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            out.push(name);
            rest = &rest[close + 1..];
        }
    }
    out
}

/// Replaces every `{name}` whose name is in `values`; `None` if a placeholder of a name in
/// `wanted` has no value yet.
pub(crate) fn expand(
    s: &str,
    values: &BTreeMap<String, String>,
    wanted: &[&str],
) -> Option<String> {
    let mut out = s.to_owned();
    for p in placeholders(s) {
        match values.get(p) {
            Some(v) => out = out.replace(&format!("{{{p}}}"), v),
            None if wanted.contains(&p) => return None,
            None => {}
        }
    }
    Some(out)
}

/// Whether a value may be put in a template: 1-128 characters of `A-Za-z0-9._-`, not
/// starting with `-` (no option injection, no metacharacters, safe in a Slurm job name).
pub(crate) fn is_plain(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= MAX_CAPTURED
        && !v.starts_with('-')
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The built-in placeholder values of a call.
pub(crate) fn built_in(call_id: &str, timeout: Duration) -> BTreeMap<String, String> {
    let minutes = timeout.as_secs().div_ceil(60).max(1);
    BTreeMap::from([
        ("callId".to_owned(), call_id.to_owned()),
        ("timeoutMinutes".to_owned(), minutes.to_string()),
    ])
}

/// Matches one output line against the capture regexes; returns the plain values found
/// (others are logged and dropped).
pub(crate) fn capture_line(capture: &[Regex], line: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for re in capture {
        let Some(caps) = re.captures(line) else {
            continue;
        };
        for name in re.capture_names().flatten() {
            if let Some(m) = caps.name(name) {
                if is_plain(m.as_str()) {
                    found.push((name.to_owned(), m.as_str().to_owned()));
                } else {
                    log::warn!("capture {name}: refused value {:?} (not plain)", m.as_str());
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_expansion() {
        assert_eq!(placeholders("--name=stdmcp-{callId}{x"), vec!["callId"]);
        assert_eq!(placeholders("print({1: 2}) {a b} {job}"), vec!["job"]);
        let v = BTreeMap::from([("callId".to_owned(), "7-a-1".to_owned())]);
        assert_eq!(
            expand("J-{callId}", &v, &["job"]).as_deref(),
            Some("J-7-a-1")
        );
        assert_eq!(expand("{job}", &v, &["job"]), None);
        assert_eq!(expand("{other}", &v, &["job"]).as_deref(), Some("{other}"));
    }

    #[test]
    fn plain_values_only() {
        for ok in ["123", "a.b_c-d", "x"] {
            assert!(is_plain(ok), "{ok}");
        }
        for bad in [
            "",
            "-1",
            "1;touch x",
            "$(x)",
            "a b",
            "a\nb",
            &"9".repeat(129),
        ] {
            assert!(!is_plain(bad), "{bad}");
        }
    }

    #[test]
    fn captures_refuse_odd_values() {
        let re = vec![Regex::new(r"job (?P<job>\S+)").expect("regex")];
        assert_eq!(
            capture_line(&re, "srun: job 42 queued"),
            vec![("job".to_owned(), "42".to_owned())]
        );
        assert!(capture_line(&re, "job $(touch${IFS}MARKER)").is_empty());
        assert!(capture_line(&re, "job --all").is_empty());
    }

    #[test]
    fn timeout_minutes_round_up() {
        let m = |s| built_in("c", Duration::from_secs(s))["timeoutMinutes"].clone();
        assert_eq!((m(1), m(60), m(61)), ("1".into(), "1".into(), "2".into()));
    }
}
