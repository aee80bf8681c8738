//! Reads a tool's `verdict` key (README "Verdicts and portfolios") into a [`Verdict`].

use std::collections::BTreeMap;

use serde_json::Value;

use super::json::{Errors, Obj};
use crate::spec::verdict::{Rule, Verdict, When};
use crate::spec::{Param, ParamType, PathKind};

/// The `verdict` key of a tool whose parameters are `params`.
pub(super) fn verdict(
    o: &Obj<'_>,
    params: &BTreeMap<String, Param>,
    errs: &mut Errors,
) -> Option<Verdict> {
    let path = o.at("verdict");
    let v = Obj::new(o.map.get("verdict")?, &path, errs)?;
    v.only(&["rules", "decisive"], errs);
    let mut rules = Vec::new();
    match v.map.get("rules") {
        Some(Value::Array(items)) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                if let Some(r) = rule(item, &format!("{path}.rules[{i}]"), params, errs) {
                    rules.push(r);
                }
            }
        }
        Some(_) => errs.add(
            &v.at("rules"),
            "must be a non-empty array of {\"pattern\": regex, \"is\"?: verdict, \"when\"?: {\"param\": name, \"matches\": regex}}",
        ),
        None => errs.add(&v.at("rules"), "is required"),
    }
    let decisive = v.strings("decisive", errs);
    if decisive.iter().any(String::is_empty) {
        errs.add(&v.at("decisive"), "must not contain an empty verdict");
    }
    Some(Verdict { rules, decisive })
}

fn rule(
    item: &Value,
    path: &str,
    params: &BTreeMap<String, Param>,
    errs: &mut Errors,
) -> Option<Rule> {
    let r = Obj::new(item, path, errs)?;
    r.only(&["pattern", "is", "when"], errs);
    let pattern = r.required_string("pattern", errs)?;
    let is = r.string("is", errs);
    if is.as_deref() == Some("") {
        errs.add(&r.at("is"), "must not be empty");
    }
    let when = when(&r, params, errs)?;
    let mut rule = compiled(Rule::new(pattern, is), &r.at("pattern"), errs)?;
    rule.when = when;
    Some(rule)
}

/// What compiling a pattern made, or `None` with the error at `path`.
fn compiled<T>(made: Result<T, regex_lite::Error>, path: &str, errs: &mut Errors) -> Option<T> {
    made.map_err(|e| errs.add(path, format!("is not a valid regular expression: {e}")))
        .ok()
}

/// The `when` of rule `r`, if any (`Some(None)`: none; `None`: a wrong one):
/// `{"param": NAME, "matches": REGEX}`, NAME a string parameter of the tool or a path
/// parameter that names a file.
fn when(r: &Obj<'_>, params: &BTreeMap<String, Param>, errs: &mut Errors) -> Option<Option<When>> {
    let Some(item) = r.map.get("when") else {
        return Some(None);
    };
    let w = Obj::new(item, &r.at("when"), errs)?;
    w.only(&["param", "matches"], errs);
    let param = w.required_string("param", errs)?;
    let matches = w.required_string("matches", errs)?;
    let readable = match params.get(&param).map(|p| &p.kind) {
        Some(ParamType::String) => true,
        Some(ParamType::Path { kind, .. }) => *kind == PathKind::File,
        _ => false,
    };
    if !readable {
        errs.add(
            &w.at("param"),
            format!("{param:?} is not a string parameter of the tool, nor a path parameter naming a file"),
        );
        return None;
    }
    compiled(When::new(param, matches), &w.at("matches"), errs).map(Some)
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
        let param = |kind| Param {
            description: None,
            kind,
            required: true,
            default: None,
            allow_leading_dash: false,
            allow_metacharacters: false,
            max_length: 100,
            in_code: false,
            env: None,
        };
        let params = BTreeMap::from([
            ("problem".to_owned(), param(ParamType::String)),
            ("n".to_owned(), param(ParamType::Boolean)),
        ]);
        let got = verdict(&o, &params, &mut errs);
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
    fn a_rule_with_when_applies_to_the_calls_whose_input_has_a_matching_line() {
        let v = parse(json!({"rules": [
            {"pattern": "^Proof found", "is": "Theorem",
             "when": {"param": "problem", "matches": "^fof\\([^,]+, *conjecture"}},
            {"pattern": "^Proof found", "is": "Unsatisfiable"}],
            "decisive": ["Theorem", "Unsatisfiable"]}))
        .unwrap();
        assert!(v.reads_input());
        let conjecture = "% a conjecture, said in a comment\nfof(c, conjecture, p).";
        let clauses = "% a conjecture, said in a comment\ncnf(c, negated_conjecture, ~p).";
        for (input, word) in [(conjecture, "Theorem"), (clauses, "Unsatisfiable")] {
            let applies = v.for_input(|w| {
                assert_eq!(w.param, "problem");
                w.holds_for_text(input)
            });
            assert_eq!(
                applies.read("Proof found.").as_deref(),
                Some(word),
                "{input}"
            );
            assert_eq!(applies.decisive, v.decisive);
        }
        // Rules that share a condition ask it once (a file is read once for them all).
        let shared = parse(json!({"rules": [
            {"pattern": "^Proof found", "is": "Theorem",
             "when": {"param": "problem", "matches": "conjecture"}},
            {"pattern": "^Completion found", "is": "CounterSatisfiable",
             "when": {"param": "problem", "matches": "conjecture"}},
            {"pattern": "^Proof found", "is": "Unsatisfiable"}],
            "decisive": ["Theorem"]}))
        .unwrap();
        let mut asked = 0;
        let applies = shared.for_input(|w| {
            asked += 1;
            w.holds_for_text(conjecture)
        });
        assert_eq!(asked, 1);
        assert_eq!(
            applies.read("Completion found").as_deref(),
            Some("CounterSatisfiable")
        );
        let described = v.describe().join("\n");
        assert!(
            described.contains("/^Proof found/ => Theorem, when a line of problem matches /"),
            "{described}"
        );
        // `when` names a parameter whose value can be read as lines.
        for (when, says) in [
            (
                json!({"param": "nope", "matches": "x"}),
                "\"nope\" is not a string parameter",
            ),
            (
                json!({"param": "n", "matches": "x"}),
                "\"n\" is not a string parameter",
            ),
            (
                json!({"param": "problem", "matches": "("}),
                "when.matches: is not a valid regular expression",
            ),
            (json!({"param": "problem"}), "when.matches: is required"),
        ] {
            let e = parse(json!({"rules": [{"pattern": "x", "when": when}]})).unwrap_err();
            assert!(e.iter().any(|e| e.contains(says)), "{e:?}");
        }
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
