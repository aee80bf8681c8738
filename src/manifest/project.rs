//! Reads a cursor's `project`, `imports`, `load` and `build` (README "Proof files:
//! projects"): how a proof file's project is found and read, the names a file imports, and
//! how its dependencies are built.

use std::path::Path;

use regex_lite::Regex;
use serde_json::Value;

use super::fields::find_program;
use super::json::{Errors, Obj};
use crate::spec::project::{Build, Deps, ImportDep, Imports, LineRule, Project};

/// A pattern (multi-line) read from `key`, with its problem reported at its path.
fn regex(o: &Obj<'_>, key: &str, required: bool, errs: &mut Errors) -> Option<Regex> {
    let src = if required {
        o.required_string(key, errs)?
    } else {
        o.string(key, errs)?
    };
    match Regex::new(&format!("(?m){src}")) {
        Ok(r) => Some(r),
        Err(e) => {
            errs.add(&o.at(key), format!("not a valid regular expression: {e}"));
            None
        }
    }
}

/// The objects of the array `key` of `o` (absent: none).
fn objects<'a>(o: &Obj<'a>, key: &str, errs: &mut Errors) -> Vec<Obj<'a>> {
    match o.map.get(key) {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Obj::new(v, &format!("{}[{i}]", o.at(key)), errs))
            .collect(),
        Some(_) => {
            errs.add(&o.at(key), "must be an array of objects");
            Vec::new()
        }
    }
}

/// One line rule: `match`, `split`, `each`, and the template lists `outputs` allows.
fn line_rule(r: &Obj<'_>, outputs: &[&str], errs: &mut Errors) -> Option<LineRule> {
    let mut keys = vec!["match", "split", "each"];
    keys.extend_from_slice(outputs);
    r.only(&keys, errs);
    let pattern = regex(r, "match", true, errs)?;
    let split = r.int("split", errs).and_then(|n| {
        let ok =
            (1..=9).contains(&n) && usize::try_from(n).is_ok_and(|n| n < pattern.captures_len());
        if !ok {
            errs.add(&r.at("split"), "must name a group of `match` (1-9)");
        }
        usize::try_from(n).ok().filter(|_| ok)
    });
    let each = regex(r, "each", false, errs);
    if each.is_some() && split.is_none() {
        errs.add(
            &r.at("each"),
            "goes with `split`: it is matched on each word",
        );
    }
    let rule = LineRule {
        pattern,
        split,
        each,
        args: r.strings("args", errs),
        inputs: r.strings("inputs", errs),
        dirs: r.strings("dirs", errs),
        name: r.string("name", errs),
    };
    let templates = rule.args.iter().chain(&rule.inputs).chain(&rule.dirs);
    for t in templates.chain(&rule.name) {
        if t.contains("{item}") && rule.split.is_none() {
            errs.add(&r.at("split"), format!("is needed: {t:?} names {{item}}"));
        }
    }
    Some(rule)
}

/// The cursor's `project` (absent: none).
pub(super) fn project(o: &Obj<'_>, errs: &mut Errors) -> Option<Project> {
    let p = Obj::new(o.map.get("project")?, &o.at("project"), errs)?;
    p.only(&["file", "lines"], errs);
    let file = p.required_string("file", errs)?;
    if file.is_empty() || file.contains('/') || file == "." || file == ".." {
        errs.add(&p.at("file"), "must be a file name (no `/`)");
    }
    let lines = objects(&p, "lines", errs)
        .iter()
        .filter_map(|r| line_rule(r, &["args", "inputs", "dirs"], errs))
        .collect();
    Some(Project { file, lines })
}

/// The cursor's `imports` and `load`.
pub(super) fn imports(o: &Obj<'_>, errs: &mut Errors) -> Imports {
    let rules: Vec<LineRule> = objects(o, "imports", errs)
        .iter()
        .filter_map(|r| {
            let rule = line_rule(r, &["name"], errs)?;
            if rule.name.is_none() {
                errs.add(
                    &r.at("name"),
                    "is required: the name imported ({item}, {1}…)",
                );
            }
            Some(rule)
        })
        .collect();
    let load = o.string("load", errs);
    if let Some(l) = &load {
        if !l.contains("{name}") {
            errs.add(&o.at("load"), "must contain {name}");
        }
    }
    Imports { rules, load }
}

/// The cursor's `build` (absent: none); programs are found as a tool's are.
pub(super) fn build(o: &Obj<'_>, base: &Path, errs: &mut Errors) -> Option<Build> {
    let b = Obj::new(o.map.get("build")?, &o.at("build"), errs)?;
    b.only(&["deps", "program", "args", "output", "error"], errs);
    let program = program(&b, base, errs);
    let deps = deps(&b, base, errs);
    let output = b.required_string("output", errs).unwrap_or_default();
    // One pattern, or several tried in order.
    let error = match b.map.get("error") {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(
                |(i, v)| match v.as_str().map(|p| Regex::new(&format!("(?m){p}"))) {
                    Some(Ok(re)) => Some(re),
                    _ => {
                        errs.add(
                            &format!("{}[{i}]", b.at("error")),
                            "must be a valid regular expression",
                        );
                        None
                    }
                },
            )
            .collect(),
        _ => regex(&b, "error", false, errs).into_iter().collect(),
    };
    Some(Build {
        deps: deps?,
        program: program?,
        args: b.strings("args", errs),
        output,
        error,
    })
}

/// The program named by `program` of `o`, found on `PATH` or relative to `base`.
fn program(o: &Obj<'_>, base: &Path, errs: &mut Errors) -> Option<std::path::PathBuf> {
    let name = o.required_string("program", errs)?;
    find_program(&name, base)
        .map_err(|e| errs.add(&o.at("program"), e))
        .ok()
}

fn deps(b: &Obj<'_>, base: &Path, errs: &mut Errors) -> Option<Deps> {
    let Some(d) = b
        .map
        .get("deps")
        .and_then(|v| Obj::new(v, &b.at("deps"), errs))
    else {
        errs.add(&b.at("deps"), "is required: {\"program\", \"args\", \"matches\", \"source\"} or {\"imports\": [{\"matches\", \"source\", …}]}");
        return None;
    };
    d.only(&["program", "args", "matches", "imports", "source"], errs);
    if let Some(v) = d.map.get("imports") {
        let Some(items) = v.as_array().filter(|a| !a.is_empty()) else {
            errs.add(
                &d.at("imports"),
                "must be a non-empty array of {\"matches\", \"source\", \"target\"?, \"output\"?}",
            );
            return None;
        };
        let mut rules = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let Some(r) = Obj::new(item, &format!("{}[{i}]", d.at("imports")), errs) else {
                continue;
            };
            r.only(&["matches", "source", "target", "output"], errs);
            if let (Some(matches), Some(source)) = (stem(&r, errs), source(&r, errs)) {
                rules.push(ImportDep {
                    matches,
                    source,
                    target: r.string("target", errs),
                    output: r.string("output", errs),
                });
            }
        }
        return Some(Deps::Imports(rules));
    }
    let program = program(&d, base, errs);
    Some(Deps::Program {
        args: d.strings("args", errs),
        matches: stem(&d, errs)?,
        source: source(&d, errs)?,
        program: program?,
    })
}

/// The `matches` of a dependency rule: a pattern with a group `stem`.
fn stem(o: &Obj<'_>, errs: &mut Errors) -> Option<Regex> {
    let re = regex(o, "matches", true, errs)?;
    if !re.capture_names().any(|n| n == Some("stem")) {
        errs.add(&o.at("matches"), "must have a group (?P<stem>…)");
    }
    Some(re)
}

/// The `source` of a dependency rule: a template with `{stem}`.
fn source(o: &Obj<'_>, errs: &mut Errors) -> Option<String> {
    let source = o.required_string("source", errs)?;
    if !source.contains("{stem}") {
        errs.add(&o.at("source"), "must contain {stem}");
    }
    Some(source)
}
