//! From a tool's template and a call's arguments to what runs: argv, working directory,
//! stdin and environment. Everything a caller controls is checked before anything runs:
//! each value against its parameter (`value`: types, limits, characters, paths
//! confined to their root), then option injection (a standalone value starting with `-`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::spec::{ArgPart, Cwd, Param, ParamType, ToolSpec};
use crate::value::{check, short, Checked, Use};
use stdmcp::process::minimal_environment;

/// What one call runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Arguments after the program.
    pub argv: Vec<OsString>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Bytes for stdin (`None`: /dev/null).
    pub stdin: Option<Vec<u8>>,
    /// The whole environment of the program.
    pub env: Vec<(OsString, OsString)>,
    /// Each single-valued parameter's checked value (given or default; a path resolved in
    /// its root), for the verdict rules that read the call's input.
    pub values: Vec<(String, OsString)>,
    /// What the program may write (the values of path parameters with `"write": true`),
    /// each with its root.
    pub writable: Writable,
}

/// Builds what a call runs, or says why it must not run.
pub fn plan(
    spec: &ToolSpec,
    roots: &BTreeMap<String, PathBuf>,
    args: &Value,
) -> Result<Plan, String> {
    let empty = Map::new();
    let given = args.as_object().unwrap_or(&empty);
    if let Some(unknown) = given.keys().find(|k| !spec.params.contains_key(*k)) {
        return Err(format!("unknown argument `{unknown}`"));
    }
    let values = values(&spec.params, &spec.args, roots, given)?;
    let argv = argv(&spec.params, &spec.args, &values)?;
    let stdin = spec
        .stdin
        .as_ref()
        .and_then(|s| match values.get(s.as_str()) {
            Some(Checked::One(t)) => Some(t.clone().into_vec()),
            _ => None,
        });
    let cwd = match &spec.cwd {
        None => None,
        Some(Cwd::Fixed(d)) => Some(d.clone()),
        Some(Cwd::Param(p)) => match values.get(p.as_str()) {
            Some(Checked::One(d)) => Some(PathBuf::from(d)),
            _ => return Err(format!("missing argument `{p}` (the working directory)")),
        },
    };
    let mut env = environment(spec);
    set_env(&mut env, param_env(&spec.params, &values));
    let writable = writable(&spec.params, roots, &values);
    let values = values
        .into_iter()
        .filter_map(|(name, v)| match v {
            Checked::One(v) => Some((name.to_owned(), v)),
            _ => None,
        })
        .collect();
    Ok(Plan {
        argv,
        cwd,
        stdin,
        env,
        values,
        writable,
    })
}

/// The checked values of the path parameters (and path items) declared writable, each with
/// its root.
pub(crate) fn writable(
    params: &BTreeMap<String, Param>,
    roots: &BTreeMap<String, PathBuf>,
    values: &BTreeMap<&str, Checked>,
) -> Writable {
    let mut out = Vec::new();
    for (name, p) in params {
        let kind = match &p.kind {
            ParamType::Array { items, .. } => &items.kind,
            k => k,
        };
        let ParamType::Path {
            root, write: true, ..
        } = kind
        else {
            continue;
        };
        let Some(root) = roots.get(root) else {
            continue;
        };
        let items = match values.get(name.as_str()) {
            Some(Checked::One(v)) => vec![v.clone()],
            Some(Checked::Many(l)) => l.clone(),
            _ => Vec::new(),
        };
        out.extend(items.into_iter().map(|v| (root.clone(), PathBuf::from(v))));
    }
    out
}

/// Environment variables: (name, value).
pub(crate) type Vars = Vec<(OsString, OsString)>;

/// What a program may write: each checked path with its root.
pub(crate) type Writable = Vec<(PathBuf, PathBuf)>;

/// What a session's start parameters give: the arguments after its program, the variables
/// they set (README "Sessions", `params`) and what its program may write (root and path).
pub(crate) fn start_plan(
    params: &BTreeMap<String, Param>,
    template: &[ArgPart],
    roots: &BTreeMap<String, PathBuf>,
    given: &Map<String, Value>,
) -> Result<(Vec<OsString>, Vars, Writable), String> {
    if let Some(unknown) = given.keys().find(|k| !params.contains_key(*k)) {
        return Err(format!("unknown argument `{unknown}`"));
    }
    let values = values(params, template, roots, given)?;
    Ok((
        argv(params, template, &values)?,
        param_env(params, &values),
        writable(params, roots, &values),
    ))
}

/// Sets (or replaces) each of `vars` in `env`.
pub(crate) fn set_env(env: &mut Vars, vars: Vars) {
    for (k, v) in vars {
        env.retain(|(name, _)| *name != k);
        env.push((k, v));
    }
}

/// Each parameter's value (given, else its default), checked.
fn values<'a>(
    params: &'a BTreeMap<String, Param>,
    template: &[ArgPart],
    roots: &BTreeMap<String, PathBuf>,
    given: &Map<String, Value>,
) -> Result<BTreeMap<&'a str, Checked>, String> {
    let mut values = BTreeMap::new();
    for (name, p) in params {
        let v = match given
            .get(name)
            .filter(|v| !v.is_null())
            .or(p.default.as_ref())
        {
            Some(v) => v,
            None if p.required => return Err(format!("missing required argument `{name}`")),
            None => continue,
        };
        let at = Use {
            argv: ArgPart::uses(template, name) || p.env.is_some(),
            code: false,
            files: true,
        };
        let checked = check(p, v, roots, at).map_err(|e| format!("argument `{name}`: {e}"))?;
        values.insert(name.as_str(), checked);
    }
    Ok(values)
}

/// The variables the parameters with an `env` set.
fn param_env(params: &BTreeMap<String, Param>, values: &BTreeMap<&str, Checked>) -> Vars {
    params
        .iter()
        .filter_map(|(name, p)| match (&p.env, values.get(name.as_str())) {
            (Some(var), Some(Checked::One(v))) => Some((OsString::from(var), v.clone())),
            _ => None,
        })
        .collect()
}

/// The arguments after the program: the template with the checked values put in.
fn argv(
    params: &BTreeMap<String, Param>,
    template: &[ArgPart],
    values: &BTreeMap<&str, Checked>,
) -> Result<Vec<OsString>, String> {
    let mut argv = Vec::new();
    for part in template {
        match part {
            ArgPart::Literal(s) => argv.push(OsString::from(s)),
            ArgPart::Param { name, flag, joined } => {
                let (Some(v), Some(p)) = (values.get(name.as_str()), params.get(name)) else {
                    continue;
                };
                let (items, dash_ok) = match (v, &p.kind) {
                    (Checked::Flag(true), _) => {
                        argv.extend(flag.iter().map(OsString::from));
                        continue;
                    }
                    (Checked::Flag(false), _) => continue,
                    (Checked::One(t), _) => (vec![t.clone()], p.allow_leading_dash),
                    (Checked::Many(l), ParamType::Array { items, .. }) => {
                        (l.clone(), items.allow_leading_dash)
                    }
                    (Checked::Many(l), _) => (l.clone(), p.allow_leading_dash),
                };
                // The value is an argument of its own (no flag, or an empty one: refused at
                // load, checked here too): starting with '-', it would be read as an option.
                let bare = flag.as_deref().is_none_or(str::is_empty);
                for item in items {
                    if bare && !dash_ok && item.as_encoded_bytes().starts_with(b"-") {
                        return Err(format!(
                            "argument `{name}`: the value {:?} starts with '-' and would be read as an option",
                            short(&item.to_string_lossy())
                        ));
                    }
                    match (flag, joined) {
                        (Some(f), true) => {
                            let mut joined = OsString::from(f);
                            joined.push(&item);
                            argv.push(joined);
                        }
                        (Some(f), false) => argv.extend([OsString::from(f), item]),
                        (None, _) => argv.push(item),
                    }
                }
            }
        }
    }
    Ok(argv)
}

fn environment(spec: &ToolSpec) -> Vec<(OsString, OsString)> {
    minimal_environment(&spec.pass_env, [], &spec.env)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::call::schema::tool_definition;
    use crate::spec::Manifest;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn schemas_carry_bounds_and_refusals_name_the_argument() {
        let m = Manifest::parse(
            r#"{"name": "t", "tools": [{"name": "n", "description": "d", "program": "true",
                "args": [{"param": "count", "flag": "-n"}, {"param": "word"}],
                "params": {"count": {"type": "integer", "minimum": 1, "maximum": 9},
                           "ratio": {"type": "number", "maximum": 0.5},
                           "word": {"type": "string", "maxLength": 5}},
                "stdin": "ratio"}]}"#,
            Path::new("."),
        );
        // A number parameter cannot feed stdin: the loader says so.
        let errors = m.unwrap_err();
        assert!(
            errors.iter().any(|e| e.path == "tools[0].stdin"),
            "{errors:?}"
        );

        let m = Manifest::parse(
            r#"{"name": "t", "tools": [{"name": "n", "description": "d", "program": "true",
                "args": [{"param": "count", "flag": "-n"}, {"param": "ratio"}, {"param": "word"}],
                "params": {"count": {"type": "integer", "minimum": 1, "maximum": 9},
                           "ratio": {"type": "number", "maximum": 0.5},
                           "word": {"type": "string", "maxLength": 5}}}]}"#,
            Path::new("."),
        )
        .unwrap();
        let tool = &m.tools[0];
        let def = tool_definition(tool, &m.roots);
        let props = &def.input_schema["properties"];
        assert_eq!(
            props["count"],
            json!({"type": "integer", "minimum": 1, "maximum": 9})
        );
        assert_eq!(props["ratio"], json!({"type": "number", "maximum": 0.5}));
        assert_eq!(props["word"], json!({"type": "string", "maxLength": 5}));

        let ok = plan(tool, &m.roots, &json!({"count": 3, "word": "abc"})).unwrap();
        assert_eq!(
            ok.argv,
            vec![OsString::from("-n"), "3".into(), "abc".into()]
        );
        assert_eq!(
            plan(tool, &m.roots, &json!({"count": 10})).unwrap_err(),
            "argument `count`: 10 is outside the allowed range 1..=9"
        );
        assert!(plan(tool, &m.roots, &json!({"word": "-x"}))
            .unwrap_err()
            .contains("starts with '-'"));
    }

    #[test]
    fn a_value_emitted_bare_is_checked_for_a_dash_whatever_its_flag() {
        // The loader refuses an empty flag; a spec built otherwise is still checked.
        let m = Manifest::parse(
            r#"{"name": "t", "tools": [{"name": "n", "description": "d", "program": "true",
                "args": [{"param": "s", "flag": "-k", "joined": true}],
                "params": {"s": {"type": "string"}}}]}"#,
            Path::new("."),
        )
        .unwrap();
        for joined in [true, false] {
            let mut tool = m.tools[0].clone();
            tool.args = vec![ArgPart::Param {
                name: "s".into(),
                flag: Some(String::new()),
                joined,
            }];
            let e = plan(&tool, &m.roots, &json!({"s": "--output=FILE"})).unwrap_err();
            assert!(e.contains("starts with '-'"), "{e}");
        }
        let ok = plan(&m.tools[0], &m.roots, &json!({"s": "-1"})).unwrap();
        assert_eq!(ok.argv, vec![OsString::from("-k-1")]);
    }
}
