//! From a tool's template and a call's arguments to what runs: argv, working directory,
//! stdin and environment. Everything a caller controls is checked here, before anything runs:
//! types and limits, option injection (a standalone value starting with `-`), shell
//! metacharacters, NUL bytes, and paths that leave their root (`..`, symlinks).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{ArgPart, Cwd, Kind, Param, PathKind, ToolSpec};
use crate::mcp::Tool;

/// Variables of the server's environment every tool gets (when set): enough to find programs
/// and pick a locale, nothing that carries credentials.
pub const INHERITED_ENV: [&str; 9] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];

/// Characters a shell would interpret. stdmcp never runs a shell, but a program may hand its
/// arguments to one (`sh -c`, make variables, git aliases), so argv values carrying them are
/// refused unless the parameter sets `allowMetacharacters`.
pub const METACHARACTERS: &str = "`$;|&<>(){}[]\\'\"*?!~#\n\r";

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
}

/// A checked parameter value.
#[derive(Clone, Debug, PartialEq)]
enum Checked {
    Text(String),
    Flag(bool),
    List(Vec<String>),
}

/// The `tools/list` definition of a manifest tool: an input schema generated from its
/// parameters and the output schema of every manifest tool's `structuredContent`.
pub fn tool_definition(spec: &ToolSpec, roots: &BTreeMap<String, PathBuf>) -> Tool {
    let mut props = Map::new();
    let mut required = Vec::new();
    for (name, p) in &spec.params {
        props.insert(name.clone(), param_schema(p, roots));
        if p.required {
            required.push(json!(name));
        }
    }
    Tool {
        name: spec.name.clone(),
        title: spec.title.clone(),
        description: Some(spec.description.clone()),
        input_schema: json!({"type": "object", "properties": props, "required": required, "additionalProperties": false}),
        output_schema: Some(output_schema()),
        annotations: Some(spec.annotations.clone()),
        icons: None,
        meta: None,
    }
}

fn param_schema(p: &Param, roots: &BTreeMap<String, PathBuf>) -> Value {
    let mut s = match &p.kind {
        Kind::String => json!({"type": "string", "maxLength": p.max_length}),
        Kind::Integer { minimum, maximum } => ranged("integer", json!(minimum), json!(maximum)),
        Kind::Number { minimum, maximum } => ranged("number", json!(minimum), json!(maximum)),
        Kind::Boolean => json!({"type": "boolean"}),
        Kind::Enum(values) => json!({"type": "string", "enum": values}),
        Kind::Array { max_items } => {
            json!({"type": "array", "items": {"type": "string", "maxLength": p.max_length}, "maxItems": max_items})
        }
        Kind::Path { .. } => json!({"type": "string", "maxLength": p.max_length}),
    };
    let mut description = p.description.clone().unwrap_or_default();
    if let Kind::Path { root, kind, .. } = &p.kind {
        let what = match kind {
            PathKind::File => "a file",
            PathKind::Dir => "a directory",
            PathKind::Any => "a path",
        };
        let dir = roots
            .get(root)
            .map_or_else(|| root.clone(), |d| d.display().to_string());
        description = format!("{description} ({what} inside {dir}, relative to it or absolute)")
            .trim()
            .to_owned();
    }
    if !description.is_empty() {
        s["description"] = json!(description);
    }
    if let Some(d) = &p.default {
        s["default"] = d.clone();
    }
    s
}

/// `{"type": ty}` with the bounds that are not null.
fn ranged(ty: &str, minimum: Value, maximum: Value) -> Value {
    let mut s = json!({ "type": ty });
    for (k, v) in [("minimum", minimum), ("maximum", maximum)] {
        if !v.is_null() {
            s[k] = v;
        }
    }
    s
}

/// The schema of `structuredContent` for every manifest tool.
pub fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "exitCode": {"type": ["integer", "null"], "description": "Exit code; null when killed by a signal or not started"},
            "signal": {"type": ["integer", "null"], "description": "Signal that ended the program, if any"},
            "stdout": {"type": "string", "description": "Standard output (head and tail kept when over the cap)"},
            "stderr": {"type": "string", "description": "Standard error (head and tail kept when over the cap)"},
            "durationMs": {"type": "integer"},
            "timedOut": {"type": "boolean", "description": "The server-side deadline passed and the process group was killed"},
            "truncated": {
                "type": "object",
                "description": "Bytes cut from the middle of each stream (0: nothing cut)",
                "properties": {"stdout": {"type": "integer"}, "stderr": {"type": "integer"}},
                "required": ["stdout", "stderr"]
            }
        },
        "required": ["exitCode", "signal", "stdout", "stderr", "durationMs", "timedOut", "truncated"]
    })
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
    let mut values = BTreeMap::new();
    for (name, p) in &spec.params {
        let v = match given
            .get(name)
            .filter(|v| !v.is_null())
            .or(p.default.as_ref())
        {
            Some(v) => v,
            None if p.required => return Err(format!("missing required argument `{name}`")),
            None => continue,
        };
        let in_argv = spec
            .args
            .iter()
            .any(|a| matches!(a, ArgPart::Param { name: n, .. } if n == name));
        let checked = check(p, v, roots, in_argv).map_err(|e| format!("argument `{name}`: {e}"))?;
        values.insert(name.as_str(), checked);
    }
    let mut argv = Vec::new();
    for part in &spec.args {
        match part {
            ArgPart::Literal(s) => argv.push(OsString::from(s)),
            ArgPart::Param { name, flag, joined } => {
                let (Some(v), Some(p)) = (values.get(name.as_str()), spec.params.get(name)) else {
                    continue;
                };
                let items = match v {
                    Checked::Flag(true) => {
                        argv.extend(flag.iter().map(OsString::from));
                        continue;
                    }
                    Checked::Flag(false) => continue,
                    Checked::Text(t) => vec![t.clone()],
                    Checked::List(l) => l.clone(),
                };
                for item in items {
                    match (flag, joined) {
                        (Some(f), true) => argv.push(format!("{f}{item}").into()),
                        (Some(f), false) => argv.extend([OsString::from(f), item.into()]),
                        (None, _) => {
                            // A standalone value that starts with '-' would be read as an option.
                            if item.starts_with('-') && !p.allow_leading_dash {
                                return Err(format!(
                                    "argument `{name}`: the value {:?} starts with '-' and would be read as an option",
                                    short(&item)
                                ));
                            }
                            argv.push(item.into());
                        }
                    }
                }
            }
        }
    }
    let stdin = spec
        .stdin
        .as_ref()
        .and_then(|s| match values.get(s.as_str()) {
            Some(Checked::Text(t)) => Some(t.clone().into_bytes()),
            _ => None,
        });
    let cwd = match &spec.cwd {
        None => None,
        Some(Cwd::Fixed(d)) => Some(d.clone()),
        Some(Cwd::Param(p)) => match values.get(p.as_str()) {
            Some(Checked::Text(d)) => Some(PathBuf::from(d)),
            _ => return Err(format!("missing argument `{p}` (the working directory)")),
        },
    };
    Ok(Plan {
        argv,
        cwd,
        stdin,
        env: environment(spec),
    })
}

fn environment(spec: &ToolSpec) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = BTreeMap::new();
    for k in INHERITED_ENV
        .iter()
        .copied()
        .chain(spec.pass_env.iter().map(String::as_str))
    {
        if let Some(v) = std::env::var_os(k) {
            env.insert(k.into(), v);
        }
    }
    for (k, v) in &spec.env {
        env.insert(k.into(), v.into());
    }
    env.into_iter().collect()
}

fn short(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(37).collect::<String>())
    } else {
        s.to_owned()
    }
}

fn check_text(p: &Param, s: &str, argv_value: bool) -> Result<String, String> {
    let n = s.chars().count();
    if n > p.max_length {
        return Err(format!(
            "is {n} characters long, more than the maximum of {}",
            p.max_length
        ));
    }
    if s.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    if argv_value && !p.allow_metacharacters {
        if let Some(c) = s.chars().find(|c| METACHARACTERS.contains(*c)) {
            return Err(format!(
                "{:?} contains the shell metacharacter {c:?}, which this parameter does not allow",
                short(s)
            ));
        }
    }
    Ok(s.to_owned())
}

fn check(
    p: &Param,
    v: &Value,
    roots: &BTreeMap<String, PathBuf>,
    in_argv: bool,
) -> Result<Checked, String> {
    let type_err = |want: &str| Err(format!("expected {want}, got {v}"));
    match &p.kind {
        Kind::String => match v {
            // A value only sent on stdin never reaches a shell through argv.
            Value::String(s) => Ok(Checked::Text(check_text(p, s, in_argv)?)),
            _ => type_err("a string"),
        },
        Kind::Integer { minimum, maximum } => {
            let Some(i) = v.as_i64().or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                    .map(|f| f as i64)
            }) else {
                return type_err("an integer");
            };
            if minimum.is_some_and(|m| i < m) || maximum.is_some_and(|m| i > m) {
                return Err(format!(
                    "{i} is outside the allowed range {}..={}",
                    fmt_bound(*minimum),
                    fmt_bound(*maximum)
                ));
            }
            Ok(Checked::Text(i.to_string()))
        }
        Kind::Number { minimum, maximum } => {
            let Some(x) = v.as_f64() else {
                return type_err("a number");
            };
            if minimum.is_some_and(|m| x < m) || maximum.is_some_and(|m| x > m) {
                return Err(format!("{x} is outside the allowed range"));
            }
            Ok(Checked::Text(v.to_string()))
        }
        Kind::Boolean => v
            .as_bool()
            .map(Checked::Flag)
            .ok_or_else(|| format!("expected true or false, got {v}")),
        Kind::Enum(values) => match v.as_str() {
            Some(s) if values.iter().any(|x| x == s) => Ok(Checked::Text(s.to_owned())),
            _ => Err(format!("{v} is not one of {}", values.join(", "))),
        },
        Kind::Array { max_items } => {
            let Some(items) = v.as_array() else {
                return type_err("an array of strings");
            };
            if items.len() > *max_items {
                return Err(format!(
                    "has {} items, more than the maximum of {max_items}",
                    items.len()
                ));
            }
            let mut out = Vec::new();
            for item in items {
                let Some(s) = item.as_str() else {
                    return Err(format!("expected strings, got {item}"));
                };
                out.push(check_text(p, s, true)?);
            }
            Ok(Checked::List(out))
        }
        Kind::Path {
            root,
            must_exist,
            kind,
        } => {
            let Some(s) = v.as_str() else {
                return type_err("a path (a string)");
            };
            check_text(p, s, false)?;
            let root_dir = roots
                .get(root)
                .ok_or_else(|| format!("root {root} is not declared"))?;
            let resolved = confine(root_dir, Path::new(s), *must_exist)?;
            let is_dir = resolved.is_dir();
            match kind {
                PathKind::File if *must_exist && !resolved.is_file() => {
                    Err(format!("{s} is not a file"))
                }
                PathKind::Dir if *must_exist && !is_dir => Err(format!("{s} is not a directory")),
                _ => Ok(Checked::Text(resolved.to_string_lossy().into_owned())),
            }
        }
    }
}

fn fmt_bound(b: Option<i64>) -> String {
    b.map_or_else(String::new, |b| b.to_string())
}

/// Resolves `p` (relative to `root`, or absolute) with symlinks followed, and checks that the
/// result is inside `root` (itself canonical).
pub fn confine(root: &Path, p: &Path, must_exist: bool) -> Result<PathBuf, String> {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    };
    let resolved = if must_exist {
        std::fs::canonicalize(&joined)
            .map_err(|e| format!("{} cannot be used: {e}", p.display()))?
    } else {
        // The parent must exist; the last component must be a plain name.
        let name = match joined.components().next_back() {
            Some(Component::Normal(n)) => n.to_owned(),
            _ => return Err(format!("{} does not end in a file name", p.display())),
        };
        let parent = joined
            .parent()
            .ok_or_else(|| format!("{} has no parent directory", p.display()))?;
        let parent = std::fs::canonicalize(parent)
            .map_err(|e| format!("the directory of {} cannot be used: {e}", p.display()))?;
        let candidate = parent.join(name);
        // An existing symlink in the last place is followed too.
        std::fs::canonicalize(&candidate).unwrap_or(candidate)
    };
    if resolved.starts_with(root) {
        Ok(resolved)
    } else {
        Err(format!(
            "{} resolves to {}, outside the allowed directory {}",
            p.display(),
            resolved.display(),
            root.display()
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::manifest::Manifest;

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
}
