//! Field readers shared by a manifest's tools and session kinds: programs found on `PATH`,
//! paths relative to the manifest, argument templates, environments and annotations.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::json::{Errors, Obj};
use crate::spec::{ArgPart, Cwd, Defaults, Param, ParamType};
use stdmcp::mcp::ToolAnnotations;

/// What every tool and session kind of a manifest is read against: its defaults, its roots,
/// and the directory its relative paths start from.
#[derive(Clone, Copy)]
pub(super) struct Scope<'a> {
    pub(super) defaults: &'a Defaults,
    pub(super) roots: &'a BTreeMap<String, PathBuf>,
    /// The names of the roots declared writable.
    pub(super) writable_roots: &'a BTreeSet<String>,
    pub(super) base: &'a Path,
}

pub(super) fn resolve(base: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Finds a program: a path with a `/` (relative to the manifest), or a name on `PATH`.
pub(super) fn find_program(name: &str, base: &Path) -> Result<PathBuf, String> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = resolve(base, name);
        return match std::fs::canonicalize(&p) {
            Ok(c) if is_exec(&c) => Ok(c),
            Ok(c) => Err(format!("{} is not an executable file", c.display())),
            Err(e) => Err(format!("cannot use {}: {e}", p.display())),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_exec(p))
        .ok_or_else(|| {
            format!(
                "`{name}` was not found on PATH ({})",
                path.to_string_lossy()
            )
        })
}

/// The required `program`, found on PATH or relative to the manifest (empty when it is not).
pub(super) fn program(o: &Obj<'_>, base: &Path, errs: &mut Errors) -> PathBuf {
    match o.required_string("program", errs) {
        Some(p) => match find_program(&p, base) {
            Ok(p) => p,
            Err(e) => {
                errs.add(&o.at("program"), e);
                PathBuf::new()
            }
        },
        None => PathBuf::new(),
    }
}

/// Every declared parameter must reach the program: through args, stdin or cwd.
pub(super) fn check_all_used(
    o: &Obj<'_>,
    params: &BTreeMap<String, Param>,
    args: &[ArgPart],
    stdin: Option<&str>,
    cwd: Option<&Cwd>,
    errs: &mut Errors,
) {
    let mut used: BTreeSet<&str> = args
        .iter()
        .filter_map(|a| match a {
            ArgPart::Param { name, .. } => Some(name.as_str()),
            ArgPart::Literal(_) => None,
        })
        .collect();
    used.extend(stdin);
    if let Some(Cwd::Param(p)) = cwd {
        used.insert(p);
    }
    for (name, p) in params {
        if !used.contains(name.as_str()) && p.env.is_none() {
            errs.add(
                &format!("{}.params.{name}", o.path),
                "is declared but used by neither args, stdin, cwd nor env",
            );
        }
    }
}

/// `env` and `passEnv`, each added to the manifest's defaults.
pub(super) fn environment(
    o: &Obj<'_>,
    d: &Defaults,
    errs: &mut Errors,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut env = d.env.clone();
    env.extend(o.env("env", errs));
    let mut pass_env = d.pass_env.clone();
    pass_env.extend(o.strings("passEnv", errs));
    (env, pass_env)
}

pub(super) fn annotations(o: &Obj<'_>, errs: &mut Errors) -> ToolAnnotations {
    let a = o
        .map
        .get("annotations")
        .and_then(|v| Obj::new(v, &o.at("annotations"), errs));
    let get = |k: &str, errs: &mut Errors| a.as_ref().and_then(|a| a.boolean(k, errs));
    if let Some(a) = &a {
        a.only(
            &["readOnly", "destructive", "idempotent", "openWorld"],
            errs,
        );
    }
    let read_only = get("readOnly", errs).unwrap_or(false);
    ToolAnnotations {
        title: None,
        read_only_hint: Some(read_only),
        destructive_hint: Some(get("destructive", errs).unwrap_or(!read_only)),
        idempotent_hint: Some(get("idempotent", errs).unwrap_or(read_only)),
        open_world_hint: Some(get("openWorld", errs).unwrap_or(false)),
    }
}

pub(super) fn args(
    o: &Obj<'_>,
    params: &BTreeMap<String, Param>,
    errs: &mut Errors,
) -> Vec<ArgPart> {
    let mut out = Vec::new();
    let Some(v) = o.map.get("args") else {
        return out;
    };
    let Value::Array(items) = v else {
        errs.add(
            &o.at("args"),
            "must be an array of strings and {\"param\": …} objects",
        );
        return out;
    };
    for (i, item) in items.iter().enumerate() {
        let path = format!("{}.args[{i}]", o.path);
        match item {
            Value::String(s) if s.contains('\0') => errs.add(&path, "must not contain NUL"),
            Value::String(s) => out.push(ArgPart::Literal(s.clone())),
            Value::Object(_) => {
                let Some(a) = Obj::new(item, &path, errs) else { continue };
                a.only(&["param", "flag", "joined"], errs);
                let Some(name) = a.required_string("param", errs) else { continue };
                if !params.contains_key(&name) {
                    errs.add(&a.at("param"), format!("names no declared parameter: {name}"));
                }
                let flag = a.string("flag", errs);
                if flag.as_deref() == Some("") {
                    errs.add(&a.at("flag"), "must not be empty (leave it out to pass the value as an argument of its own)");
                }
                let joined = a.boolean("joined", errs).unwrap_or(false);
                if joined && flag.is_none() {
                    errs.add(&a.at("joined"), "needs a flag to join the value to");
                }
                if matches!(params.get(&name).map(|p| &p.kind), Some(ParamType::Boolean)) && flag.is_none() {
                    errs.add(&path, "a boolean parameter needs a flag (emitted when it is true)");
                }
                out.push(ArgPart::Param { name, flag, joined });
            }
            _ => errs.add(&path, "must be a string or an object {\"param\": name, \"flag\"?: string, \"joined\"?: bool}"),
        }
    }
    out
}

/// The directory `dir` (relative to `base`) a fixed `cwd` names, resolved; `None` (with the
/// error at `path`) when it is not a directory.
pub(super) fn fixed_dir(path: &str, base: &Path, dir: &str, errs: &mut Errors) -> Option<PathBuf> {
    match std::fs::canonicalize(resolve(base, dir)) {
        Ok(c) if c.is_dir() => Some(c),
        Ok(c) => {
            errs.add(path, format!("{} is not a directory", c.display()));
            None
        }
        Err(e) => {
            errs.add(path, format!("cannot use {dir}: {e}"));
            None
        }
    }
}
