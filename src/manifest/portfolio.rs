//! Portfolio tools as the manifest declares them (README "Portfolios"): `"portfolio":
//! [members]` instead of `program`. Reading one, and the checks that need every tool of the
//! manifest: each member exists, is not itself a portfolio, has a verdict, and accepts the
//! portfolio's arguments. Running one is [`super::race`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use super::json::{Errors, Obj};
use super::limits::limits;
use super::param;
use crate::spec::{Defaults, Param, ParamType, ToolSpec};

/// The keys a portfolio tool may have.
const PORTFOLIO_KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "annotations",
    "params",
    "portfolio",
    "timeoutSeconds",
    "background",
];

/// Reads a tool object that has `portfolio`: its members are checked later, by [`check`].
pub(super) fn tool(
    o: &Obj<'_>,
    name: String,
    d: &Defaults,
    roots: &BTreeMap<String, PathBuf>,
    errs: &mut Errors,
) -> ToolSpec {
    const MEMBERS_OWN: [&str; 5] = ["program", "args", "stdin", "cwd", "verdict"];
    for k in MEMBERS_OWN {
        if o.map.contains_key(k) {
            errs.add(
                &o.at(k),
                "a portfolio runs its members, each with its own program, arguments and verdict: leave this out (or leave out portfolio)",
            );
        }
    }
    let known: Vec<&str> = PORTFOLIO_KEYS.iter().chain(&MEMBERS_OWN).copied().collect();
    o.only(&known, errs);
    let members = members(o, errs);
    let description = o.required_string("description", errs).unwrap_or_default();
    let params = param::params(o, roots, errs);
    let timeout = o.seconds("timeoutSeconds", errs).unwrap_or(d.timeout);
    let background = super::background::for_tool(o, d.background, timeout, errs);
    ToolSpec {
        name,
        title: o.string("title", errs),
        description,
        annotations: super::fields::annotations(o, errs),
        program: PathBuf::new(),
        args: Vec::new(),
        params,
        cwd: None,
        env: BTreeMap::new(),
        pass_env: Vec::new(),
        stdin: None,
        timeout,
        background,
        kill_grace: d.kill_grace,
        max_output_bytes: d.max_output_bytes,
        success_codes: vec![0],
        progress: None,
        line_buffered: false,
        limits: limits(o, d.limits, errs),
        remote: crate::spec::remote::Remote::default(),
        logs: None,
        verdict: None,
        portfolio: members,
        confine: crate::spec::confine::Rules::default(),
    }
}

fn members(o: &Obj<'_>, errs: &mut Errors) -> Vec<String> {
    let at = o.at("portfolio");
    let shape = "must be an array of at least two names of other tools of this manifest";
    let Some(Value::Array(items)) = o.map.get("portfolio") else {
        errs.add(&at, shape);
        return Vec::new();
    };
    let names: Vec<String> = items
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    if names.len() != items.len() || names.len() < 2 {
        errs.add(&at, shape);
    }
    let mut seen = BTreeSet::new();
    for (i, n) in names.iter().enumerate() {
        if !seen.insert(n) {
            errs.add(&format!("{at}[{i}]"), format!("{n} is named twice"));
        }
    }
    names
}

/// Checks every portfolio's members against the other tools; `paths[i]` is the JSON path of
/// `tools[i]`.
pub(super) fn check(tools: &[ToolSpec], paths: &[String], errs: &mut Errors) {
    let by_name: BTreeMap<&str, &ToolSpec> = tools.iter().map(|t| (t.name.as_str(), t)).collect();
    for (t, path) in tools.iter().zip(paths) {
        for (i, name) in t.portfolio.iter().enumerate() {
            let at = format!("{path}.portfolio[{i}]");
            let Some(m) = by_name.get(name.as_str()) else {
                errs.add(&at, format!("names no tool of this manifest: {name}"));
                continue;
            };
            if name == &t.name || !m.portfolio.is_empty() {
                errs.add(
                    &at,
                    format!("{name} is itself a portfolio: members must run programs"),
                );
                continue;
            }
            match &m.verdict {
                None => errs.add(
                    &at,
                    format!("{name} has no verdict: a portfolio needs each member's verdict to know which one decides"),
                ),
                Some(v) if v.decisive.is_empty() => errs.add(
                    &at,
                    format!("{name}'s verdict lists no decisive verdict, so it could never decide"),
                ),
                Some(_) => {}
            }
            for problem in accepts(&t.params, m) {
                errs.add(&at, problem);
            }
        }
    }
}

/// Why `member` would not accept every call of a portfolio with `params` (nothing: it does).
fn accepts(params: &BTreeMap<String, Param>, member: &ToolSpec) -> Vec<String> {
    let name = &member.name;
    let mut problems = Vec::new();
    for (p, mine) in params {
        let Some(theirs) = member.params.get(p) else {
            problems.push(format!(
                "{name} has no parameter {p}, which the portfolio passes on"
            ));
            continue;
        };
        let (a, b) = (kind_name(&mine.kind), kind_name(&theirs.kind));
        if a != b {
            problems.push(format!(
                "{name}'s parameter {p} is {b}, the portfolio's is {a}"
            ));
        }
        if let (ParamType::Path { root: r1, .. }, ParamType::Path { root: r2, .. }) =
            (&mine.kind, &theirs.kind)
        {
            if r1 != r2 {
                problems.push(format!(
                    "{name}'s parameter {p} is a path in root {r2}, the portfolio's in root {r1}"
                ));
            }
        }
        let given = mine.required || mine.default.is_some();
        if theirs.required && theirs.default.is_none() && !given {
            problems.push(format!(
                "{name} requires parameter {p}, which the portfolio makes optional"
            ));
        }
    }
    for (p, theirs) in &member.params {
        if theirs.required && theirs.default.is_none() && !params.contains_key(p) {
            problems.push(format!(
                "{name} requires parameter {p}, which the portfolio lacks"
            ));
        }
    }
    problems
}

fn kind_name(k: &ParamType) -> String {
    match k {
        ParamType::String => "a string".into(),
        ParamType::Integer { .. } => "an integer".into(),
        ParamType::Number { .. } => "a number".into(),
        ParamType::Boolean => "a boolean".into(),
        ParamType::Enum(_) => "an enum".into(),
        ParamType::Array { items, .. } => format!("an array of {}", kind_name(&items.kind)),
        ParamType::Path { .. } => "a path".into(),
    }
}
