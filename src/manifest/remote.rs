//! Hooks for tools that hand work to something else (a batch scheduler such as Slurm, a
//! remote service): a per-call id, values captured from the program's first output lines,
//! and an `onCancel` command run when a call is cancelled, times out, or the server stops
//! with the call in flight (README "Remote work"; docs/cluster.md).
//!
//! Placeholders: `{callId}` and `{timeoutMinutes}` in `args` literals and `onCancel`;
//! captured names (`capture` regexes' named groups) in `onCancel` only. Every value a
//! placeholder takes is plain (`[A-Za-z0-9._-]`, not starting with `-`): the call id and the
//! timeout are built by the server, and a captured value that is not plain is refused (it
//! comes from the program's output, so it is untrusted).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use regex_lite::Regex;
use serde_json::Value;

use super::json::{Errors, Obj};
use super::parse::find_program;
use super::ArgPart;

/// Output lines (of each stream) that `capture` regexes are matched against.
pub const CAPTURE_LINES: usize = 100;
/// Longest captured value.
pub const MAX_CAPTURED: usize = 128;
/// Default deadline of an `onCancel` command.
pub const DEFAULT_ON_CANCEL_TIMEOUT: Duration = Duration::from_secs(10);
/// The placeholders the server fills in itself.
pub const BUILT_IN: [&str; 2] = ["callId", "timeoutMinutes"];

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

/// Reads `capture`, `onCancel` and `onCancelTimeoutSeconds` of a tool.
pub(super) fn remote(o: &Obj<'_>, base: &Path, errs: &mut Errors) -> Remote {
    let mut names = BTreeSet::new();
    let mut capture = Vec::new();
    if let Some(v) = o.map.get("capture") {
        let at = o.at("capture");
        match v {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(re) = capture_regex(item, &format!("{at}[{i}]"), &mut names, errs) {
                        capture.push(re);
                    }
                }
            }
            _ => errs.add(&at, "must be an array of regular expressions"),
        }
    }
    let on_cancel = o.map.get("onCancel").and_then(|v| {
        let at = o.at("onCancel");
        let argv: Vec<String> = match v {
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        if argv.is_empty() || argv.len() != v.as_array().map_or(0, Vec::len) {
            errs.add(&at, "must be a non-empty array of strings: program, then arguments");
            return None;
        }
        for (i, a) in argv.iter().enumerate() {
            for p in placeholders(a) {
                if !BUILT_IN.contains(&p) && !names.contains(p) {
                    errs.add(
                        &format!("{at}[{i}]"),
                        format!("{{{p}}} is neither {{callId}}, {{timeoutMinutes}} nor a name captured by `capture`"),
                    );
                }
            }
        }
        match find_program(&argv[0], base) {
            Ok(program) => Some((program, argv[1..].to_vec())),
            Err(e) => {
                errs.add(&format!("{at}[0]"), e);
                None
            }
        }
    });
    let on_cancel_timeout = o
        .seconds("onCancelTimeoutSeconds", errs)
        .unwrap_or(DEFAULT_ON_CANCEL_TIMEOUT);
    Remote {
        capture,
        on_cancel,
        on_cancel_timeout,
    }
}

fn capture_regex(
    v: &Value,
    at: &str,
    names: &mut BTreeSet<String>,
    errs: &mut Errors,
) -> Option<Regex> {
    let Some(text) = v.as_str() else {
        errs.add(at, "must be a string (a regular expression)");
        return None;
    };
    let re = match Regex::new(text) {
        Ok(re) => re,
        Err(e) => {
            errs.add(at, format!("not a valid regular expression: {e}"));
            return None;
        }
    };
    let mut any = false;
    for name in re.capture_names().flatten() {
        any = true;
        if BUILT_IN.contains(&name) {
            errs.add(at, format!("group name {name} is reserved"));
        }
        names.insert(name.to_owned());
    }
    if !any {
        errs.add(
            at,
            "has no named group, e.g. (?P<job>\\d+): it would capture nothing",
        );
    }
    Some(re)
}

/// The names of the `{name}` placeholders in a template element.
pub fn placeholders(s: &str) -> Vec<&str> {
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
pub fn expand(s: &str, values: &BTreeMap<String, String>, wanted: &[&str]) -> Option<String> {
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
pub fn is_plain(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= MAX_CAPTURED
        && !v.starts_with('-')
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// How `stdmcp check` shows a tool's hooks (`None` when it has none).
pub fn describe(r: &Remote) -> Option<String> {
    let mut parts = Vec::new();
    if !r.capture.is_empty() {
        let res: Vec<&str> = r.capture.iter().map(Regex::as_str).collect();
        parts.push(format!("captures {res:?}"));
    }
    if let Some((program, args)) = &r.on_cancel {
        parts.push(format!(
            "on cancel, deadline or shutdown runs: {} {} (within {})",
            program.display(),
            args.join(" "),
            stdmcp_proto::human::setting(r.on_cancel_timeout)
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A new call id, unique per server run: `<server instance>-<n>` (plain, see [`is_plain`]).
pub fn new_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}-{}",
        stdmcp::process::marker_instance(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The built-in placeholder values of a call.
pub fn built_in(call_id: &str, timeout: Duration) -> BTreeMap<String, String> {
    let minutes = timeout.as_secs().div_ceil(60).max(1);
    BTreeMap::from([
        ("callId".to_owned(), call_id.to_owned()),
        ("timeoutMinutes".to_owned(), minutes.to_string()),
    ])
}

/// Whether an argument template uses a built-in placeholder (then it is expanded per call).
pub fn uses_built_in(args: &[ArgPart]) -> bool {
    args.iter().any(|a| match a {
        ArgPart::Literal(s) => placeholders(s).iter().any(|p| BUILT_IN.contains(p)),
        ArgPart::Param { .. } => false,
    })
}

/// The template with the built-in placeholders of its literals filled in.
pub fn expand_args(args: &[ArgPart], values: &BTreeMap<String, String>) -> Vec<ArgPart> {
    args.iter()
        .map(|a| match a {
            ArgPart::Literal(s) => ArgPart::Literal(expand(s, values, &[]).unwrap_or_default()),
            other => other.clone(),
        })
        .collect()
}

/// Matches one output line against the capture regexes; returns the plain values found
/// (others are logged and dropped).
pub fn capture_line(capture: &[Regex], line: &str) -> Vec<(String, String)> {
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
        assert!(is_plain(&new_call_id()));
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

    fn problems(tool_extra: &str) -> Vec<String> {
        let text = format!(
            r#"{{"name": "t", "version": "1", "tools": [{{"name": "x", "description": "d",
               "program": "/bin/true", "args": ["--name=j-{{callId}}"] {tool_extra}}}]}}"#
        );
        match crate::manifest::Manifest::parse(&text, Path::new("/")) {
            Ok(_) => Vec::new(),
            Err(errs) => errs.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn manifest_keys_checked() {
        assert!(problems("").is_empty());
        let ok = r#", "capture": ["job (?P<job>[0-9]+)"], "onCancel": ["/bin/true", "{callId}", "{job}"]"#;
        assert_eq!(problems(ok), Vec::<String>::new());
        let e = problems(r#", "capture": ["(unclosed", "no group"]"#);
        assert!(
            e[0].contains("tools[0].capture[0]: not a valid regular expression"),
            "{e:?}"
        );
        assert!(e[1].contains("capture[1]: has no named group"), "{e:?}");
        let e = problems(r#", "onCancel": ["/bin/true", "{job}"]"#);
        assert!(e[0].contains("onCancel[1]: {job} is neither"), "{e:?}");
        let e = problems(r#", "onCancel": []"#);
        assert!(
            e[0].contains("onCancel: must be a non-empty array"),
            "{e:?}"
        );
        let e = problems(r#", "capture": ["(?P<callId>x)"]"#);
        assert!(e[0].contains("reserved"), "{e:?}");
    }

    #[test]
    fn timeout_minutes_round_up() {
        let m = |s| built_in("c", Duration::from_secs(s))["timeoutMinutes"].clone();
        assert_eq!((m(1), m(60), m(61)), ("1".into(), "1".into(), "2".into()));
    }
}
