//! Reads a session kind's `cursor` object (README "Proof files"): the lexicon and block
//! rules of its proof files, the placeholder, the inputs that drive the program, and the
//! patterns of an error and of a proved goal.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use regex_lite::Regex;
use serde_json::Value;

use super::background::background;
use super::json::{Errors, Obj};
use crate::spec::cursor::{BlockRule, Comment, CursorSpec, Lexicon, Quote, StateAt};

const KEYS: &[&str] = &[
    "write",
    "comments",
    "lineComments",
    "strings",
    "blocks",
    "placeholder",
    "template",
    "admit",
    "enter",
    "statementForbids",
    "step",
    "stepPattern",
    "undo",
    "goals",
    "drop",
    "noise",
    "error",
    "proved",
    "join",
    "stateAt",
    "background",
    "timeoutSeconds",
    "commands",
    "rollback",
    "project",
    "imports",
    "load",
    "build",
];

/// A pattern, multi-line (`^` and `$` at line ends).
fn pattern(o: &Obj<'_>, key: &str, errs: &mut Errors) -> Option<Regex> {
    let src = o.required_string(key, errs)?;
    compile(&src, &o.at(key), errs)
}

fn compile(src: &str, at: &str, errs: &mut Errors) -> Option<Regex> {
    match Regex::new(&format!("(?m){src}")) {
        Ok(r) => Some(r),
        Err(e) => {
            errs.add(at, format!("not a valid regular expression: {e}"));
            None
        }
    }
}

/// A required template that must contain `{var}` (one of `vars`).
fn template(o: &Obj<'_>, key: &str, vars: &[&str], errs: &mut Errors) -> String {
    let t = o.required_string(key, errs).unwrap_or_default();
    if !t.is_empty() && !vars.iter().any(|v| t.contains(&format!("{{{v}}}"))) {
        let names: Vec<String> = vars.iter().map(|v| format!("{{{v}}}")).collect();
        errs.add(&o.at(key), format!("must contain {}", names.join(" or ")));
    }
    t
}

/// The `cursor` of a session kind whose default limit of one call is `timeout`; programs it
/// names are found as a tool's are, relative paths against `base`.
pub(super) fn cursor(
    v: &Value,
    path: &str,
    (timeout, base): (Duration, &Path),
    errs: &mut Errors,
) -> Option<Arc<CursorSpec>> {
    let o = Obj::new(v, path, errs)?;
    o.only(KEYS, errs);
    let lexicon = lexicon(&o, errs);
    let placeholder = pattern(&o, "placeholder", errs);
    let tpl = template(&o, "template", &["proof"], errs);
    let admit = o.required_string("admit", errs).unwrap_or_default();
    let rules = blocks(&o, &tpl, &admit, errs);
    let enter = template(&o, "enter", &["statement", "header"], errs);
    let step = template(&o, "step", &["tactic"], errs);
    let (undo, goals, drop) = (
        o.required_string("undo", errs).unwrap_or_default(),
        o.required_string("goals", errs).unwrap_or_default(),
        o.required_string("drop", errs).unwrap_or_default(),
    );
    let error = pattern(&o, "error", errs);
    let proved = pattern(&o, "proved", errs);
    let (join_step, join_separator) = join(&o, errs);
    let state_at = state_at(&o, errs);
    let background = background(&o, errs).flatten();
    let timeout = o.seconds("timeoutSeconds", errs).unwrap_or(timeout);
    Some(Arc::new(CursorSpec {
        write: o.boolean("write", errs).unwrap_or(false),
        lexicon,
        rules,
        placeholder: placeholder?,
        enter,
        statement_forbids: o.strings("statementForbids", errs),
        step,
        step_pattern: o
            .string("stepPattern", errs)
            .and_then(|p| compile(&p, &o.at("stepPattern"), errs)),
        undo,
        goals,
        drop,
        noise: o
            .string("noise", errs)
            .and_then(|p| compile(&p, &o.at("noise"), errs)),
        error: error?,
        proved: proved?,
        join_step,
        join_separator,
        state_at: state_at?,
        background,
        timeout,
        commands: o
            .string("commands", errs)
            .and_then(|p| compile(&p, &o.at("commands"), errs)),
        rollback: o.strings("rollback", errs),
        project: super::project::project(&o, errs),
        imports: super::project::imports(&o, errs),
        build: super::project::build(&o, base, errs),
    }))
}

fn lexicon(o: &Obj<'_>, errs: &mut Errors) -> Lexicon {
    let mut lex = Lexicon {
        line_comments: o.strings("lineComments", errs),
        ..Lexicon::default()
    };
    let nested = |c: &Obj<'_>, errs: &mut Errors| Some(c.boolean("nested", errs).unwrap_or(false));
    for (open, close, nested) in delimited(o, "comments", "nested", nested, EMPTY, errs) {
        lex.comments.push(Comment {
            open,
            close,
            nested,
        });
    }
    let escape = |q: &Obj<'_>, errs: &mut Errors| match q.string("escape", errs) {
        Some(e) if e.chars().count() != 1 => None,
        e => Some(e.and_then(|e| e.chars().next())),
    };
    let problem = "open and close must not be empty; escape is one character";
    for (open, close, escape) in delimited(o, "strings", "escape", escape, problem, errs) {
        lex.strings.push(Quote {
            open,
            close,
            escape,
        });
    }
    if lex.line_comments.iter().any(String::is_empty) {
        errs.add(&o.at("lineComments"), "must not hold an empty string");
    }
    lex
}

/// The `open` and `close` of a comment or string rule, both required.
const EMPTY: &str = "open and close must not be empty";

/// The delimiter pairs of the array `key` of `o`: each object's `open` and `close`, and what
/// `third` makes of its one other key (`extra`); `problem` is said of an object with an empty
/// delimiter or a third value `third` refuses.
fn delimited<T>(
    o: &Obj<'_>,
    key: &str,
    extra: &str,
    third: impl Fn(&Obj<'_>, &mut Errors) -> Option<T>,
    problem: &str,
    errs: &mut Errors,
) -> Vec<(String, String, T)> {
    let mut out = Vec::new();
    for (i, d) in objects(o, key, errs) {
        d.only(&["open", "close", extra], errs);
        let (Some(open), Some(close)) = (
            d.required_string("open", errs),
            d.required_string("close", errs),
        ) else {
            continue;
        };
        match third(&d, errs) {
            Some(t) if !open.is_empty() && !close.is_empty() => out.push((open, close, t)),
            _ => errs.add(&format!("{}[{i}]", o.at(key)), problem),
        }
    }
    out
}

/// The objects of the array `key` (absent: none), with their indices.
fn objects<'a>(o: &Obj<'a>, key: &str, errs: &mut Errors) -> Vec<(usize, Obj<'a>)> {
    match o.map.get(key) {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Obj::new(v, &format!("{}[{i}]", o.at(key)), errs).map(|x| (i, x)))
            .collect(),
        Some(_) => {
            errs.add(&o.at(key), "must be an array of objects");
            Vec::new()
        }
    }
}

fn blocks(o: &Obj<'_>, tpl: &str, admit: &str, errs: &mut Errors) -> Vec<BlockRule> {
    let items = objects(o, "blocks", errs);
    if items.is_empty() {
        errs.add(
            &o.at("blocks"),
            "is required: at least one block rule {start, proof?, end}",
        );
    }
    let mut rules = Vec::new();
    for (_, b) in items {
        b.only(
            &[
                "start",
                "proof",
                "end",
                "goal",
                "template",
                "admit",
                "close",
                "enter",
                "statement",
            ],
            errs,
        );
        let start = pattern(&b, "start", errs);
        if let Some(s) = &start {
            if !s.capture_names().any(|n| n == Some("name")) {
                errs.add(
                    &b.at("start"),
                    "must name the block with a group (?P<name>…)",
                );
            }
        }
        let proof = b
            .string("proof", errs)
            .and_then(|p| compile(&p, &b.at("proof"), errs));
        let close = b.boolean("close", errs).unwrap_or(false);
        // A block that ends at its bracket's close needs no `end` (what follows, if any).
        let end = match b.map.contains_key("end") || !close {
            true => pattern(&b, "end", errs),
            false => Regex::new("").ok(),
        };
        let goal = b.boolean("goal", errs).unwrap_or(true);
        if goal && proof.is_none() && b.map.contains_key("start") {
            errs.add(
                &b.at("proof"),
                "is required for a block whose goal the cursor enters (else set goal: false)",
            );
        }
        let template = b.string("template", errs).unwrap_or_else(|| tpl.to_owned());
        if !template.contains("{proof}") {
            errs.add(&b.at("template"), "must contain {proof}");
        }
        let admit = b.string("admit", errs).unwrap_or_else(|| admit.to_owned());
        let statement = b
            .string("statement", errs)
            .and_then(|p| compile(&p, &b.at("statement"), errs));
        if statement
            .as_ref()
            .is_some_and(|s| !s.capture_names().any(|n| n == Some("statement")))
        {
            errs.add(&b.at("statement"), "must have a group (?P<statement>…)");
        }
        if let (Some(start), Some(end)) = (start, end) {
            rules.push(BlockRule {
                start,
                proof,
                end,
                goal,
                template,
                admit,
                close,
                enter: b.string("enter", errs),
                statement,
            });
        }
    }
    rules
}

fn join(o: &Obj<'_>, errs: &mut Errors) -> (String, String) {
    let Some(j) = o
        .map
        .get("join")
        .and_then(|v| Obj::new(v, &o.at("join"), errs))
    else {
        return ("{step}".into(), "\n".into());
    };
    j.only(&["step", "separator"], errs);
    let step = j.string("step", errs).unwrap_or_else(|| "{step}".into());
    if !step.contains("{step}") {
        errs.add(&j.at("step"), "must contain {step}");
    }
    (
        step,
        j.string("separator", errs).unwrap_or_else(|| "\n".into()),
    )
}

fn state_at(o: &Obj<'_>, errs: &mut Errors) -> Option<StateAt> {
    let Some(s) = o
        .map
        .get("stateAt")
        .and_then(|v| Obj::new(v, &o.at("stateAt"), errs))
    else {
        errs.add(&o.at("stateAt"), "is required: {\"mode\": \"prefix\", \"trim\": …} or {\"mode\": \"sentences\", \"end\": …}");
        return None;
    };
    s.only(&["mode", "trim", "end"], errs);
    match s.required_string("mode", errs)?.as_str() {
        "prefix" => {
            let trim = s.string("trim", errs).unwrap_or_else(|| "$^".into());
            let re = compile(&format!("(?:{trim})\\s*\\z"), &s.at("trim"), errs)?;
            Some(StateAt::Prefix { trim: re })
        }
        "sentences" => Some(StateAt::Sentences {
            end: pattern(&s, "end", errs)?,
        }),
        other => {
            errs.add(
                &s.at("mode"),
                format!("unknown mode {other:?} (prefix or sentences)"),
            );
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use crate::manifest::Manifest;

    fn errors(cursor: serde_json::Value, workdir: bool) -> Vec<String> {
        let mut kind = json!({"name": "k", "description": "d", "program": "cat",
                              "answer": {"mode": "nul"}, "cursor": cursor});
        if workdir {
            kind["workdir"] = json!({"root": "r"});
        }
        let m = json!({"name": "m", "roots": {"r": "/tmp"}, "sessions": [kind]});
        match Manifest::parse(&m.to_string(), std::path::Path::new("/")) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(ToString::to_string).collect(),
        }
    }

    fn good() -> serde_json::Value {
        json!({"blocks": [{"start": "^Lemma (?P<name>\\w+)", "proof": "^Proof\\.", "end": "^Qed\\."}],
               "placeholder": "Admitted", "template": "Proof.\n{proof}\nQed.", "admit": "Proof.\nAdmitted.",
               "enter": "{header}", "step": "{tactic}", "undo": "Undo.", "goals": "Show.",
               "drop": "Abort All.", "error": "^Error", "proved": "No more goals",
               "stateAt": {"mode": "sentences", "end": "\\."}})
    }

    #[test]
    fn a_cursor_is_read_and_its_problems_name_their_path() {
        assert!(
            errors(good(), true).is_empty(),
            "{:?}",
            errors(good(), true)
        );
        let e = errors(good(), false);
        assert!(
            e.iter()
                .any(|x| x.starts_with("sessions[0].cursor: needs a `workdir`")),
            "{e:?}"
        );
        let mut bad = good();
        bad["blocks"][0]["start"] = json!("^Lemma");
        bad["step"] = json!("e;");
        bad["error"] = json!("(");
        bad["stateAt"] = json!({"mode": "lines"});
        bad["blocks"][0].as_object_mut().unwrap().remove("proof");
        bad["extra"] = json!(1);
        let e = errors(bad, true);
        for want in [
            "sessions[0].cursor.blocks[0].start: must name the block",
            "sessions[0].cursor.blocks[0].proof: is required for a block whose goal",
            "sessions[0].cursor.step: must contain {tactic}",
            "sessions[0].cursor.error: not a valid regular expression",
            "sessions[0].cursor.stateAt.mode: unknown mode \"lines\"",
            "sessions[0].cursor.extra: unknown field",
        ] {
            assert!(
                e.iter().any(|x| x.starts_with(want)),
                "no {want:?} in {e:#?}"
            );
        }
    }

    #[test]
    fn comment_and_string_delimiters_are_checked() {
        let mut lex = good();
        lex["comments"] = json!([{"open": "(*", "close": "*)", "nested": true}]);
        lex["strings"] = json!([{"open": "\"", "close": "\"", "escape": "\\"}]);
        assert!(errors(lex, true).is_empty());
        let mut bad = good();
        bad["comments"] = json!([{"open": "(*", "close": "*)"}, {"open": "", "close": "*)"},
                                 {"open": "(*"}]);
        bad["strings"] = json!([{"open": "\"", "close": "\"", "escape": "ab"},
                                {"open": "'", "close": "", "tick": 1}]);
        let e = errors(bad, true);
        for want in [
            "sessions[0].cursor.comments[1]: open and close must not be empty",
            "sessions[0].cursor.comments[2].close: is required",
            "sessions[0].cursor.strings[0]: open and close must not be empty; escape is one",
            "sessions[0].cursor.strings[1]: open and close must not be empty; escape is one",
            "sessions[0].cursor.strings[1].tick: unknown field",
        ] {
            assert!(
                e.iter().any(|x| x.starts_with(want)),
                "no {want:?} in {e:#?}"
            );
        }
        assert!(!e.iter().any(|x| x.contains("comments[0]")), "{e:#?}");
    }
}
