//! The confinement keys (README "Security model"): `confine`, `readable`, `writable` and
//! `network` of `defaults`, a tool or a session kind; a root's `write`; resolved into the
//! [`Rules`] of each tool and session kind once its program and parameters are known.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::fields::{resolve, Scope};
use super::json::{Errors, Obj};
use crate::spec::confine::{Declared, Rules};
use crate::spec::{Param, ParamType};
use stdmcp::process::confine::{Mode, Network};

/// The confinement keys of `o` (`defaults`, a tool, a session kind), as written.
pub(super) fn declared(o: &Obj<'_>, errs: &mut Errors) -> Declared {
    let mode = o.string("confine", errs).and_then(|m| match m.as_str() {
        "on" => Some(Mode::On),
        "off" => Some(Mode::Off),
        "require" => Some(Mode::Require),
        other => {
            errs.add(
                &o.at("confine"),
                format!("must be \"on\", \"off\" or \"require\", not {other:?}"),
            );
            None
        }
    });
    let mut places = |key: &str| {
        let list = o.strings(key, errs);
        for (i, p) in list.iter().enumerate() {
            if p.is_empty() || p.contains('\0') {
                errs.add(
                    &format!("{}[{i}]", o.at(key)),
                    "must be a path (not empty, no NUL)",
                );
            }
        }
        list
    };
    let (readable, writable) = (places("readable"), places("writable"));
    Declared {
        mode,
        readable,
        writable,
        network: network(o, errs),
    }
}

/// `network`: `true`, `false`, or an array of TCP ports.
fn network(o: &Obj<'_>, errs: &mut Errors) -> Option<Network> {
    let bad = |errs: &mut Errors| {
        errs.add(
            &o.at("network"),
            "must be true (any), false (none) or an array of TCP ports (1-65535)",
        );
        None
    };
    match o.map.get("network")? {
        Value::Bool(true) => Some(Network::Any),
        Value::Bool(false) => Some(Network::Denied),
        Value::Array(items) => {
            let ports: Option<Vec<u16>> = items
                .iter()
                .map(|v| {
                    v.as_u64()
                        .and_then(|n| u16::try_from(n).ok())
                        .filter(|&n| n > 0)
                })
                .collect();
            match ports {
                Some(p) => Some(Network::Ports(p)),
                None => bad(errs),
            }
        }
        _ => bad(errs),
    }
}

/// The manifest's `roots`: each a directory (a string), or `{"path": …, "write": true}`;
/// the canonical directories, and the names of the writable ones.
pub(super) fn roots(
    top: &Obj<'_>,
    base: &Path,
    errs: &mut Errors,
) -> (BTreeMap<String, PathBuf>, BTreeSet<String>) {
    let (mut roots, mut writable) = (BTreeMap::new(), BTreeSet::new());
    let Some(o) = top
        .map
        .get("roots")
        .and_then(|v| Obj::new(v, "roots", errs))
    else {
        return (roots, writable);
    };
    for (name, v) in o.map {
        let at = o.at(name);
        let dir = match v {
            Value::String(dir) => dir.clone(),
            Value::Object(_) => {
                let Some(r) = Obj::new(v, &at, errs) else {
                    continue;
                };
                r.only(&["path", "write"], errs);
                if r.boolean("write", errs).unwrap_or(false) {
                    writable.insert(name.clone());
                }
                let Some(dir) = r.required_string("path", errs) else {
                    continue;
                };
                dir
            }
            _ => {
                errs.add(
                    &at,
                    "must be a directory path (a string) or {\"path\": …, \"write\": true}",
                );
                continue;
            }
        };
        match std::fs::canonicalize(resolve(base, &dir)) {
            Ok(c) if c.is_dir() => {
                roots.insert(name.clone(), c);
            }
            Ok(c) => errs.add(&at, format!("{} is not a directory", c.display())),
            Err(e) => errs.add(&at, format!("cannot use {dir}: {e}")),
        }
    }
    (roots, writable)
}

/// What a tool or session kind is confined to.
pub(super) struct Subject<'a> {
    /// Its program (absolute), for `{programDir}`.
    pub(super) program: &'a Path,
    /// Its parameters (the roots they name, which may be written).
    pub(super) params: &'a BTreeMap<String, Param>,
    /// Roots it names otherwise (a session's `workdir`).
    pub(super) roots: Vec<String>,
    /// A fixed working directory.
    pub(super) cwd: Option<&'a Path>,
}

/// The rules of `o` (a tool or session kind) over the defaults' for `subject`.
pub(super) fn rules(
    o: &Obj<'_>,
    scope: Scope<'_>,
    subject: &Subject<'_>,
    errs: &mut Errors,
) -> Rules {
    let own = declared(o, errs);
    let d = &scope.defaults.confine;
    let mut rules = Rules {
        mode: own.mode.or(d.mode).unwrap_or_default(),
        network: own
            .network
            .or_else(|| d.network.clone())
            .unwrap_or_default(),
        ..Rules::default()
    };
    let mut read_exec = d.readable.clone();
    read_exec.extend(own.readable);
    let mut write = d.writable.clone();
    write.extend(own.writable);
    rules.read_exec = places(&read_exec, scope.base, subject.program);
    rules.write = places(&write, scope.base, subject.program);
    let mut named: BTreeSet<&str> = subject.roots.iter().map(String::as_str).collect();
    for (name, p) in subject.params {
        let kind = match &p.kind {
            ParamType::Array { items, .. } => &items.kind,
            k => k,
        };
        if let ParamType::Path { root, write, .. } = kind {
            named.insert(root);
            if *write {
                rules.write_params.push(name.clone());
            }
        }
    }
    for name in named {
        let Some(dir) = scope.roots.get(name) else {
            continue;
        };
        match scope.writable_roots.contains(name) {
            true => rules.write.push(dir.clone()),
            false => rules.read.push(dir.clone()),
        }
    }
    rules.read.extend(subject.cwd.map(Path::to_path_buf));
    rules
}

/// The places `entries` name (each resolved by [`place`]; those naming an unset variable left
/// out).
fn places(entries: &[String], base: &Path, program: &Path) -> Vec<PathBuf> {
    entries
        .iter()
        .filter_map(|e| place(e, base, program))
        .collect()
}

/// The place `entry` names: `{programDir}` is the program's directory (symlinks followed),
/// `${VAR}` the server's variable (unset or empty: no place), a leading `~` the home
/// directory; relative to the manifest's directory. Canonical when it exists.
pub(super) fn place(entry: &str, base: &Path, program: &Path) -> Option<PathBuf> {
    let program_dir = std::fs::canonicalize(program)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let mut out = entry.replace("{programDir}", &program_dir.to_string_lossy());
    while let Some(start) = out.find("${") {
        let end = out[start..].find('}')? + start;
        let value = std::env::var(&out[start + 2..end])
            .ok()
            .filter(|v| !v.is_empty())?;
        out.replace_range(start..=end, &value);
    }
    if out == "~" || out.starts_with("~/") {
        let home = std::env::var("HOME").ok().filter(|h| !h.is_empty())?;
        out = format!("{home}{}", &out[1..]);
    }
    let p = resolve(base, &out);
    Some(std::fs::canonicalize(&p).unwrap_or(p))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn places_expand_the_program_dir_variables_and_home() {
        let base = Path::new("/base");
        let prog = Path::new("/bin/sh");
        let sh_dir = std::fs::canonicalize("/bin/sh").unwrap();
        let sh_dir = sh_dir.parent().unwrap();
        assert_eq!(place("{programDir}", base, prog).unwrap(), sh_dir);
        assert_eq!(
            place("rel/x", base, prog).unwrap(),
            Path::new("/base/rel/x")
        );
        assert_eq!(place("${STDMCP_SURELY_UNSET_VAR}/x", base, prog), None);
        let home = std::env::var("HOME").unwrap();
        let expected = std::fs::canonicalize(&home).unwrap_or_else(|_| PathBuf::from(&home));
        assert_eq!(place("~", base, prog).unwrap(), expected);
        assert_eq!(place("${HOME}", base, prog).unwrap(), expected);
    }
}
