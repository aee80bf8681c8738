//! Reads a tool's `verdict` key (README "Verdicts and portfolios") into a [`Verdict`].

use serde_json::Value;

use super::json::{Errors, Obj};
use crate::spec::verdict::{Rule, Verdict};

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
    match Rule::new(pattern, is) {
        Ok(rule) => Some(rule),
        Err(e) => {
            errs.add(
                &r.at("pattern"),
                format!("is not a valid regular expression: {e}"),
            );
            None
        }
    }
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
    fn the_first_rule_that_matches_sets_it() {
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
