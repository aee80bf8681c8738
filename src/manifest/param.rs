//! Reading a tool's parameters: each keyword checked against the types it applies to,
//! bounds against each other, enum values against each other, and (once the argument
//! template is known) each default against its own parameter, so that a manifest `check`
//! accepts can be called.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::json::{is_env_name, Errors, Obj};
use super::lint;
use crate::spec::{ArgPart, Param, ParamType, PathKind};
use crate::value::{self, Checked, Use};

/// Keywords that apply to some types only.
const KEYWORDS: &[(&str, &[&str])] = &[
    ("values", &["enum"]),
    ("minimum", &["integer", "number"]),
    ("maximum", &["integer", "number"]),
    ("maxLength", &["string", "array", "path"]),
    ("maxItems", &["array"]),
    ("items", &["array"]),
    (
        "allowLeadingDash",
        &["string", "integer", "number", "enum", "array"],
    ),
    ("allowMetacharacters", &["string", "enum", "array", "path"]),
    ("root", &["path"]),
    ("mustExist", &["path"]),
    ("kind", &["path"]),
    ("write", &["path"]),
];

const TYPES: [&str; 7] = [
    "string", "integer", "number", "boolean", "enum", "array", "path",
];

/// The default longest string, in characters.
const MAX_LENGTH: usize = 4096;
/// The default most array items.
const MAX_ITEMS: usize = 64;

/// `a`, `a and b`, `a, b and c`.
fn listing(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

pub(super) fn params(
    o: &Obj<'_>,
    roots: &BTreeMap<String, PathBuf>,
    errs: &mut Errors,
) -> BTreeMap<String, Param> {
    let mut out = BTreeMap::new();
    let Some(v) = o.map.get("params") else {
        return out;
    };
    let Some(ps) = Obj::new(v, &o.at("params"), errs) else {
        return out;
    };
    for (name, v) in ps.map {
        let path = ps.at(name);
        if !is_env_name(name) {
            errs.add(
                &path,
                "a parameter name must be letters, digits and _ (not starting with a digit)",
            );
        }
        if let Some(p) = param(v, &path, roots, false, errs) {
            out.insert(name.clone(), p);
        }
    }
    out
}

/// A parameter, or (`item`) the description of each item of an array.
fn param(
    v: &Value,
    path: &str,
    roots: &BTreeMap<String, PathBuf>,
    item: bool,
    errs: &mut Errors,
) -> Option<Param> {
    let o = Obj::new(v, path, errs)?;
    let mut known = vec!["type", "description", "required", "default", "env"];
    known.extend(KEYWORDS.iter().map(|(k, _)| *k));
    o.only(&known, errs);
    let ty = o.required_string("type", errs)?;
    if TYPES.contains(&ty.as_str()) {
        for (key, types) in KEYWORDS {
            if o.map.contains_key(*key) && !types.contains(&ty.as_str()) {
                errs.add(
                    &o.at(key),
                    format!(
                        "applies only to {} parameters (this one is {ty})",
                        listing(types)
                    ),
                );
            }
        }
    }
    if item {
        for key in ["required", "default", "env"] {
            if o.map.contains_key(key) {
                errs.add(
                    &o.at(key),
                    "does not apply to array items (set it on the array)",
                );
            }
        }
    }
    let kind = kind(&o, &ty, roots, errs)?;
    if item && matches!(kind, ParamType::Array { .. } | ParamType::Boolean) {
        errs.add(
            &o.at("type"),
            "array items cannot be arrays or booleans (string, integer, number, enum or path)",
        );
    }
    let required = o.boolean("required", errs).unwrap_or(false);
    let default = o.map.get("default").cloned();
    if required && default.is_some() {
        errs.add(
            &o.at("default"),
            "a required parameter cannot have a default",
        );
    }
    let env = env_name(&o, &kind, errs);
    Some(Param {
        description: o.string("description", errs),
        kind,
        required,
        default,
        allow_leading_dash: o.boolean("allowLeadingDash", errs).unwrap_or(false),
        allow_metacharacters: o.boolean("allowMetacharacters", errs).unwrap_or(false),
        max_length: o.count("maxLength", errs).unwrap_or(MAX_LENGTH),
        in_code: false,
        env,
    })
}

fn kind(
    o: &Obj<'_>,
    ty: &str,
    roots: &BTreeMap<String, PathBuf>,
    errs: &mut Errors,
) -> Option<ParamType> {
    Some(match ty {
        "string" => ParamType::String,
        "integer" => {
            let (minimum, maximum) = (o.int("minimum", errs), o.int("maximum", errs));
            ordered(o, minimum, maximum, errs);
            ParamType::Integer { minimum, maximum }
        }
        "number" => {
            let minimum = o.number("minimum", f64::MIN, errs);
            let maximum = o.number("maximum", f64::MIN, errs);
            ordered(o, minimum, maximum, errs);
            ParamType::Number { minimum, maximum }
        }
        "boolean" => ParamType::Boolean,
        "enum" => ParamType::Enum(enum_values(o, errs)),
        "array" => array(o, roots, errs),
        "path" => path(o, roots, errs),
        other => {
            errs.add(
                &o.at("type"),
                format!("unknown type {other:?} ({})", TYPES.join(", ")),
            );
            return None;
        }
    })
}

fn ordered<T: PartialOrd + std::fmt::Display>(
    o: &Obj<'_>,
    minimum: Option<T>,
    maximum: Option<T>,
    errs: &mut Errors,
) {
    if let (Some(min), Some(max)) = (minimum, maximum) {
        if min > max {
            errs.add(
                &o.at("maximum"),
                format!("{max} is below the minimum {min}"),
            );
        }
    }
}

fn enum_values(o: &Obj<'_>, errs: &mut Errors) -> Vec<String> {
    let values = o.strings("values", errs);
    if values.is_empty() {
        errs.add(
            &o.at("values"),
            "an enum needs a non-empty array of string values",
        );
    }
    let mut seen = BTreeSet::new();
    for v in &values {
        if !seen.insert(v) {
            errs.add(&o.at("values"), format!("{v:?} is listed twice"));
        }
        if v.chars().any(char::is_control) {
            errs.add(
                &o.at("values"),
                format!("{v:?} contains a control character"),
            );
        }
    }
    values
}

fn array(o: &Obj<'_>, roots: &BTreeMap<String, PathBuf>, errs: &mut Errors) -> ParamType {
    let max_items = o.count("maxItems", errs).unwrap_or(MAX_ITEMS);
    // These keys are also read (and their errors reported) for the array itself.
    let errs_seen = &mut Errors(Vec::new());
    let strings = Param {
        description: None,
        kind: ParamType::String,
        required: false,
        default: None,
        allow_leading_dash: o.boolean("allowLeadingDash", errs_seen).unwrap_or(false),
        allow_metacharacters: o.boolean("allowMetacharacters", errs_seen).unwrap_or(false),
        max_length: o.count("maxLength", errs_seen).unwrap_or(MAX_LENGTH),
        in_code: false,
        env: None,
    };
    let items = match o.map.get("items") {
        None => strings,
        Some(v) => {
            for key in ["maxLength", "allowLeadingDash", "allowMetacharacters"] {
                if o.map.contains_key(key) {
                    errs.add(&o.at(key), "set it in items, which describes each item");
                }
            }
            param(v, &o.at("items"), roots, true, errs).unwrap_or(strings)
        }
    };
    ParamType::Array {
        max_items,
        items: Box::new(items),
    }
}

fn path(o: &Obj<'_>, roots: &BTreeMap<String, PathBuf>, errs: &mut Errors) -> ParamType {
    let root = o.required_string("root", errs).unwrap_or_default();
    if !root.is_empty() && !roots.contains_key(&root) {
        errs.add(&o.at("root"), format!("names no declared root: {root}"));
    }
    let kind = match o.string("kind", errs).as_deref() {
        None | Some("any") => PathKind::Any,
        Some("file") => PathKind::File,
        Some("dir") => PathKind::Dir,
        Some(k) => {
            errs.add(
                &o.at("kind"),
                format!("must be \"file\", \"dir\" or \"any\", not {k:?}"),
            );
            PathKind::Any
        }
    };
    ParamType::Path {
        root,
        must_exist: o.boolean("mustExist", errs).unwrap_or(true),
        kind,
        write: o.boolean("write", errs).unwrap_or(false),
    }
}

/// `env`: the variable a value is put in. Not for arrays and booleans (no one way to spell
/// them), nor the variables that mark a call's processes (`STDMCP_…`) or steer the dynamic
/// loader (`LD_…`).
fn env_name(o: &Obj<'_>, kind: &ParamType, errs: &mut Errors) -> Option<String> {
    let name = o.string("env", errs)?;
    let problem = if !is_env_name(&name) {
        Some("is not a valid environment variable name")
    } else if name.starts_with("STDMCP_") || name.starts_with("LD_") {
        Some("names a variable the server sets or the dynamic loader reads (STDMCP_…, LD_…)")
    } else if matches!(kind, ParamType::Array { .. } | ParamType::Boolean) {
        Some("applies to string, integer, number, enum and path parameters")
    } else {
        None
    };
    match problem {
        Some(p) => {
            errs.add(&o.at("env"), p);
            None
        }
        None => Some(name),
    }
}

/// Once the template is known: marks the parameters spliced into interpreter code, and
/// checks every default as a call would (paths: confinement only, as files may appear later).
pub(super) fn finish(
    o: &Obj<'_>,
    params: &mut BTreeMap<String, Param>,
    program: &Path,
    args: &[ArgPart],
    roots: &BTreeMap<String, PathBuf>,
    errs: &mut Errors,
) {
    for name in lint::code_params(program, args) {
        if let Some(p) = params.get_mut(&name) {
            p.in_code = true;
        }
    }
    for (name, p) in params.iter() {
        let standalone = args.iter().any(|a| {
            matches!(a, ArgPart::Param { name: n, flag, .. }
                if n == name && flag.as_deref().is_none_or(str::is_empty))
        });
        // What each value obeys: the parameter, or each item of an array.
        let each = match &p.kind {
            ParamType::Array { items, .. } => items,
            _ => p,
        };
        // A path is passed resolved and absolute: it never starts with '-'.
        let dash_ok = each.allow_leading_dash || matches!(each.kind, ParamType::Path { .. });
        if let ParamType::Enum(values) = &each.kind {
            enum_fits(
                &format!("{}.params.{name}", o.path),
                values,
                standalone && !dash_ok,
                p.in_code && !each.allow_metacharacters,
                errs,
            );
        }
        let Some(d) = &p.default else { continue };
        let undeclared =
            |k: &ParamType| matches!(k, ParamType::Path { root, .. } if !roots.contains_key(root));
        let root_missing = match &p.kind {
            ParamType::Array { items, .. } => undeclared(&items.kind),
            k => undeclared(k),
        };
        if root_missing {
            continue; // already reported at its `root`
        }
        let at = Use {
            argv: ArgPart::uses(args, name) || p.env.is_some(),
            code: false,
            files: false,
        };
        let at_default = format!("{}.params.{name}.default", o.path);
        let dash = |v: &std::ffi::OsString| {
            standalone && !dash_ok && v.as_encoded_bytes().starts_with(b"-")
        };
        match value::check(p, d, roots, at) {
            Err(e) => errs.add(&at_default, e),
            Ok(Checked::One(v)) if dash(&v) => {
                errs.add(&at_default, "starts with '-' and is passed as a standalone argument: it would always be refused without allowLeadingDash");
            }
            Ok(Checked::Many(vs)) if vs.iter().any(dash) => {
                errs.add(&at_default, "has an item that starts with '-' and is passed as a standalone argument: it would always be refused without allowLeadingDash");
            }
            Ok(_) => {}
        }
    }
}

/// Enum values a call could never pass: a leading '-' where the value stands alone, a
/// shell metacharacter where it is run as code.
fn enum_fits(at: &str, values: &[String], standalone: bool, code: bool, errs: &mut Errors) {
    let at = format!("{at}.values");
    if let Some(v) = values.iter().find(|v| standalone && v.starts_with('-')) {
        errs.add(&at, format!("{v:?} starts with '-' and is passed as a standalone argument: it would always be refused without allowLeadingDash"));
    }
    for v in values.iter().filter(|_| code) {
        if let Some(c) = v.chars().find(|c| value::METACHARACTERS.contains(*c)) {
            errs.add(&at, format!("{v:?} contains the shell metacharacter {c:?} and the value is run as code: it would always be refused without allowMetacharacters"));
        }
    }
}
