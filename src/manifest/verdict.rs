//! A tool's verdict (README "Verdicts"): rules that read it from the program's output lines,
//! and the verdicts that settle a portfolio's question.
//!
//! ```json
//! "verdict": {"rules": [{"pattern": "SZS status (\\w+)"},
//!                       {"pattern": "^SPASS beiseite: Proof found", "is": "Theorem"}],
//!             "decisive": ["Theorem", "CounterSatisfiable"]}
//! ```
//!
//! Rules are tried in order on each line of stdout and stderr; the first that matches sets
//! the verdict (its `is`, else the pattern's first group, else the whole match); a later
//! line may change it: the last line that matches wins.

use std::sync::{Arc, Mutex};
use stdmcp::sync::lock;

use regex_lite::Regex;
use serde_json::Value;

use super::json::{Errors, Obj};

/// How a tool's verdict is read, and which verdicts are decisive.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Tried in order on each output line.
    pub rules: Vec<Rule>,
    /// Verdicts that settle a portfolio.
    pub decisive: Vec<String>,
}

/// One rule: a pattern, and the verdict it gives.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The pattern as written in the manifest.
    pub pattern: String,
    regex: Regex,
    /// The verdict a match gives; `None`: the pattern's first group (or the whole match).
    pub is: Option<String>,
}

impl Verdict {
    /// The verdict `line` gives, if a rule matches it.
    pub fn read(&self, line: &str) -> Option<String> {
        self.rules.iter().find_map(|r| {
            let caps = r.regex.captures(line)?;
            let word = match &r.is {
                Some(is) => is.clone(),
                None => caps.get(1).or_else(|| caps.get(0))?.as_str().to_owned(),
            };
            Some(word)
        })
    }

    /// Whether `verdict` settles a portfolio.
    pub fn is_decisive(&self, verdict: &str) -> bool {
        self.decisive.iter().any(|d| d == verdict)
    }

    /// The rules and decisive verdicts in a few lines, for `stdmcp check`.
    pub fn describe(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .rules
            .iter()
            .map(|r| match &r.is {
                Some(is) => format!("/{}/ => {is}", r.pattern),
                None => format!("/{}/ => its first group", r.pattern),
            })
            .collect();
        lines.push(format!("decisive: {}", self.decisive.join(", ")));
        lines
    }
}

/// The verdict of one run so far: fed every output line, keeps the last one a rule read.
#[derive(Clone, Default)]
pub struct Tracker(Arc<Mutex<Option<String>>>);

impl Tracker {
    /// Reads `line` with `v`'s rules.
    pub fn feed(&self, v: &Verdict, line: &str) {
        if let Some(word) = v.read(line) {
            *lock(&self.0) = Some(word);
        }
    }

    /// The verdict now.
    pub fn get(&self) -> Option<String> {
        lock(&self.0).clone()
    }
}

/// The `verdict` key of a tool.
pub(super) fn verdict(o: &Obj<'_>, errs: &mut Errors) -> Option<Verdict> {
    let path = o.at("verdict");
    let v = Obj::new(o.map.get("verdict")?, &path, errs)?;
    v.only(&["rules", "decisive"], errs);
    let mut rules = Vec::new();
    match v.map.get("rules") {
        Some(Value::Array(items)) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                if let Some(r) = rule(item, &format!("{path}.rules[{i}]"), errs) {
                    rules.push(r);
                }
            }
        }
        Some(_) => errs.add(
            &v.at("rules"),
            "must be a non-empty array of {\"pattern\": regex, \"is\"?: verdict}",
        ),
        None => errs.add(&v.at("rules"), "is required"),
    }
    let decisive = v.strings("decisive", errs);
    if decisive.iter().any(String::is_empty) {
        errs.add(&v.at("decisive"), "must not contain an empty verdict");
    }
    Some(Verdict { rules, decisive })
}

fn rule(item: &Value, path: &str, errs: &mut Errors) -> Option<Rule> {
    let r = Obj::new(item, path, errs)?;
    r.only(&["pattern", "is"], errs);
    let pattern = r.required_string("pattern", errs)?;
    let is = r.string("is", errs);
    if is.as_deref() == Some("") {
        errs.add(&r.at("is"), "must not be empty");
    }
    let regex = match Regex::new(&pattern) {
        Ok(re) => re,
        Err(e) => {
            errs.add(
                &r.at("pattern"),
                format!("is not a valid regular expression: {e}"),
            );
            return None;
        }
    };
    Some(Rule { pattern, regex, is })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Verdict, Vec<String>> {
        let mut errs = Errors(Vec::new());
        let tool = json!({ "verdict": v });
        let o = Obj::new(&tool, "tools[0]", &mut errs).unwrap();
        let got = verdict(&o, &mut errs);
        if errs.0.is_empty() {
            Ok(got.unwrap())
        } else {
            Err(errs.0.iter().map(ToString::to_string).collect())
        }
    }

    #[test]
    fn first_rule_sets_it_and_the_last_line_wins() {
        let v = parse(json!({"rules": [
            {"pattern": "SZS status (\\w+)"},
            {"pattern": "^SPASS beiseite: Proof found", "is": "Theorem"},
            {"pattern": "^(sat|unsat|unknown)$"}],
            "decisive": ["Theorem", "unsat"]}))
        .unwrap();
        assert_eq!(v.read("# SZS status Theorem").as_deref(), Some("Theorem"));
        assert_eq!(
            v.read("SPASS beiseite: Proof found.").as_deref(),
            Some("Theorem")
        );
        assert_eq!(v.read("unsat").as_deref(), Some("unsat"));
        assert_eq!(v.read("unsatisfiable"), None);
        let t = Tracker::default();
        for line in ["unknown", "noise", "unsat", "more noise"] {
            t.feed(&v, line);
        }
        assert_eq!(t.get().as_deref(), Some("unsat"));
        assert!(v.is_decisive("unsat") && !v.is_decisive("unknown"));
    }

    #[test]
    fn bad_patterns_are_refused_with_their_path() {
        let e = parse(json!({"rules": [{"pattern": "ok"}, {"pattern": "(unclosed"}]})).unwrap_err();
        assert!(
            e[0].starts_with(
                "tools[0].verdict.rules[1].pattern: is not a valid regular expression"
            ),
            "{e:?}"
        );
        let e = parse(json!({"rules": []})).unwrap_err();
        assert!(e[0].contains("non-empty array"), "{e:?}");
    }
}
