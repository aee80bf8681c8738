//! Reads a tool's remote-work keys (`capture`, `onCancel`, `onCancelTimeoutSeconds`) into a
//! [`Remote`] (README "Remote work").

use std::collections::BTreeSet;
use std::path::Path;

use regex_lite::Regex;
use serde_json::Value;

use super::fields::find_program;
use super::json::{Errors, Obj};
use crate::spec::remote::{placeholders, Remote, BUILT_IN, DEFAULT_ON_CANCEL_TIMEOUT};

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

#[cfg(test)]
mod tests {
    use std::path::Path;

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
}
