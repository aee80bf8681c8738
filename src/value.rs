//! Checking one value against its parameter: the same rules for every type (README
//! "Security model"). NUL is refused everywhere; control characters (newlines…) in argv
//! values unless the parameter allows them; shell metacharacters only where the value is
//! spliced into code an interpreter runs (`sh -c "cat {file}"`), unless allowed; a path,
//! and each path item of an array, must resolve inside its root.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::resolve::{within, Refusal};
use crate::spec::{Param, ParamType, PathKind};

/// Characters a shell would interpret. stdmcp never runs a shell; they matter only in a
/// value that an interpreter runs as code, where they are refused unless
/// `allowMetacharacters`.
pub(crate) const METACHARACTERS: &str = "`$;|&<>(){}[]\\'\"*?!~#\n\r";

/// A checked value.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Checked {
    Flag(bool),
    One(OsString),
    Many(Vec<OsString>),
}

/// Where a value goes, and how much of the file system to check.
#[derive(Clone, Copy, Debug)]
pub(super) struct Use {
    /// It becomes (part of) an argv element.
    pub argv: bool,
    /// It is spliced into interpreter code.
    pub code: bool,
    /// Paths must be usable now (false for defaults checked at load: only confinement).
    pub files: bool,
}

pub(super) fn short(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(37).collect::<String>())
    } else {
        s.to_owned()
    }
}

/// The character rules every value obeys (lengths aside).
fn characters(p: &Param, s: &str, at: Use) -> Result<(), String> {
    if s.contains('\0') {
        return Err(format!("{:?} contains a NUL byte", short(s)));
    }
    if p.allow_metacharacters {
        return Ok(());
    }
    if at.argv {
        if let Some(c) = s.chars().find(|c| c.is_control() && *c != '\t') {
            return Err(format!(
                "{:?} contains the control character {c:?}, which this parameter does not allow in arguments",
                short(s)
            ));
        }
    }
    if at.code {
        if let Some(c) = s.chars().find(|c| METACHARACTERS.contains(*c)) {
            return Err(format!(
                "{:?} contains the shell metacharacter {c:?}, refused in a value run as code",
                short(s)
            ));
        }
    }
    Ok(())
}

fn text(p: &Param, s: &str, at: Use) -> Result<OsString, String> {
    let n = s.chars().count();
    if n > p.max_length {
        return Err(format!(
            "is {n} characters long, more than the maximum of {}",
            p.max_length
        ));
    }
    characters(p, s, at)?;
    Ok(s.into())
}

/// Checks `v` as a value of `p`.
pub(super) fn check(
    p: &Param,
    v: &Value,
    roots: &std::collections::BTreeMap<String, PathBuf>,
    at: Use,
) -> Result<Checked, String> {
    let at = Use {
        code: at.code || p.in_code,
        ..at
    };
    let type_err = |want: &str| Err(format!("expected {want}, got {v}"));
    let one = |s: String| -> Result<Checked, String> {
        characters(p, &s, at)?;
        Ok(Checked::One(s.into()))
    };
    match &p.kind {
        ParamType::String => match v {
            Value::String(s) => Ok(Checked::One(text(p, s, at)?)),
            _ => type_err("a string"),
        },
        ParamType::Integer { minimum, maximum } => {
            let Some(i) = v.as_i64().or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                    .map(|f| f as i64)
            }) else {
                return type_err("an integer");
            };
            in_range(i, minimum, maximum)?;
            one(i.to_string())
        }
        ParamType::Number { minimum, maximum } => {
            let Some(x) = v.as_f64() else {
                return type_err("a number");
            };
            in_range(x, minimum, maximum)?;
            one(v.to_string())
        }
        ParamType::Boolean => v
            .as_bool()
            .map(Checked::Flag)
            .ok_or_else(|| format!("expected true or false, got {v}")),
        ParamType::Enum(values) => match v.as_str() {
            Some(s) if values.iter().any(|x| x == s) => one(s.to_owned()),
            _ => Err(format!("{v} is not one of {}", values.join(", "))),
        },
        ParamType::Array { max_items, items } => {
            let Some(list) = v.as_array() else {
                return type_err("an array");
            };
            array(list, *max_items, items, roots, at)
        }
        ParamType::Path {
            root,
            must_exist,
            kind,
            ..
        } => {
            let Some(s) = v.as_str() else {
                return type_err("a path (a string)");
            };
            text(p, s, at)?;
            let root_dir = roots
                .get(root)
                .ok_or_else(|| format!("root {root} is not declared"))?;
            path(p, s, root_dir, *must_exist, *kind, at)
        }
    }
}

/// Checks `list` as the items of an array parameter.
fn array(
    list: &[Value],
    max_items: usize,
    items: &Param,
    roots: &std::collections::BTreeMap<String, PathBuf>,
    at: Use,
) -> Result<Checked, String> {
    if list.len() > max_items {
        return Err(format!(
            "has {} items, more than the maximum of {max_items}",
            list.len()
        ));
    }
    let mut out = Vec::new();
    for (i, item) in list.iter().enumerate() {
        match check(items, item, roots, at).map_err(|e| format!("item {i}: {e}"))? {
            Checked::One(s) => out.push(s),
            _ => return Err(format!("item {i}: expected a string, got {item}")),
        }
    }
    Ok(Checked::Many(out))
}

fn in_range<T: PartialOrd + ToString>(
    x: T,
    minimum: &Option<T>,
    maximum: &Option<T>,
) -> Result<(), String> {
    let bound = |b: &Option<T>| b.as_ref().map(ToString::to_string).unwrap_or_default();
    if minimum.as_ref().is_some_and(|m| x < *m) || maximum.as_ref().is_some_and(|m| x > *m) {
        return Err(format!(
            "{} is outside the allowed range {}..={}",
            x.to_string(),
            bound(minimum),
            bound(maximum)
        ));
    }
    Ok(())
}

/// A path value: confined, of the right kind, and its resolved form obeying the character
/// rules too (a symlink may lead to a name with a newline or a `$`).
fn path(
    p: &Param,
    s: &str,
    root: &Path,
    must_exist: bool,
    kind: PathKind,
    at: Use,
) -> Result<Checked, String> {
    if s.is_empty() {
        return Err("the path is empty (use . for the root itself)".into());
    }
    let resolved = match within(root, Path::new(s), must_exist) {
        Ok(r) => r,
        // At load time only confinement is checked: the file may appear before the call.
        Err(Refusal::Unusable(_)) if !at.files => return Ok(Checked::One(s.into())),
        Err(e) => return Err(e.to_string()),
    };
    let exists = resolved.exists();
    match kind {
        PathKind::File if exists && !resolved.is_file() => {
            return Err(format!("{s} is not a file"));
        }
        PathKind::Dir if exists && !resolved.is_dir() => {
            return Err(format!("{s} is not a directory"));
        }
        _ => {}
    }
    match resolved.to_str() {
        Some(r) => characters(p, r, at).map_err(|e| format!("{s} resolves to a name that {e}"))?,
        None if at.code => return Err(format!("{s} resolves to a name that is not UTF-8")),
        // Not text, but its bytes may still hold a newline: the same rule, byte by byte.
        None if at.argv && !p.allow_metacharacters => {
            let bytes = resolved.as_os_str().as_encoded_bytes();
            if let Some(b) = bytes
                .iter()
                .find(|b| (**b < 0x20 && **b != b'\t') || **b == 0x7f)
            {
                return Err(format!(
                    "{s} resolves to a name that contains the control character {:?}, which this parameter does not allow in arguments",
                    char::from(*b)
                ));
            }
        }
        None => {}
    }
    Ok(Checked::One(resolved.into_os_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn param(kind: ParamType, allow: bool) -> Param {
        Param {
            description: None,
            kind,
            required: false,
            default: None,
            allow_leading_dash: false,
            allow_metacharacters: allow,
            max_length: 100,
            in_code: false,
            env: None,
        }
    }

    const ARGV: Use = Use {
        argv: true,
        code: false,
        files: true,
    };

    #[test]
    fn one_character_model_for_every_type() {
        let roots = BTreeMap::new();
        let string = param(ParamType::String, false);
        let items = ParamType::Array {
            max_items: 4,
            items: Box::new(param(ParamType::String, false)),
        };
        let enumerated = ParamType::Enum(vec!["a;b".into(), "x$(y)".into()]);
        // Ordinary text, punctuation included, passes in argv and on stdin.
        for (p, v) in [
            (string.clone(), json!("with; semicolon (a|b)?")),
            (param(items.clone(), false), json!(["x&y", "$HOME"])),
            (param(enumerated.clone(), false), json!("x$(y)")),
            (
                param(
                    ParamType::Number {
                        minimum: None,
                        maximum: None,
                    },
                    false,
                ),
                json!(-1.5),
            ),
        ] {
            assert!(check(&p, &v, &roots, ARGV).is_ok(), "{v}");
        }
        // Control characters: refused in argv, allowed on stdin or when the parameter allows.
        let stdin = Use {
            argv: false,
            ..ARGV
        };
        assert!(check(&string, &json!("a\nb"), &roots, ARGV)
            .unwrap_err()
            .contains("control"));
        assert!(check(&string, &json!("a\nb"), &roots, stdin).is_ok());
        assert!(check(
            &param(ParamType::String, true),
            &json!("a\nb"),
            &roots,
            ARGV
        )
        .is_ok());
        let e = check(
            &param(items.clone(), false),
            &json!(["ok", "a\rb"]),
            &roots,
            ARGV,
        );
        assert!(e.unwrap_err().starts_with("item 1: "));
        // NUL: refused everywhere, even when allowed.
        for u in [ARGV, stdin] {
            let e = check(&param(ParamType::String, true), &json!("a\u{0}"), &roots, u);
            assert!(e.unwrap_err().contains("NUL"));
        }
        // Spliced into code: metacharacters refused in every type unless allowed.
        let code = Use { code: true, ..ARGV };
        for (p, v) in [
            (string.clone(), json!("hi; id")),
            (param(items, false), json!(["ok", "`id`"])),
            (param(enumerated, false), json!("x$(y)")),
        ] {
            let e = check(&p, &v, &roots, code).unwrap_err();
            assert!(e.contains("metacharacter"), "{v}: {e}");
        }
        assert!(check(&string, &json!("hello world"), &roots, code).is_ok());
        assert!(check(
            &param(ParamType::String, true),
            &json!("hi; id"),
            &roots,
            code
        )
        .is_ok());
    }

    #[test]
    fn a_resolved_path_that_is_not_utf8_obeys_the_control_character_rule() {
        use std::os::unix::ffi::OsStrExt;
        let dir = std::env::temp_dir().join(format!("stdmcp-value-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = dir.canonicalize().unwrap();
        let bad = std::ffi::OsStr::from_bytes(b"bad\n\xff");
        std::fs::write(dir.join(bad), "").unwrap();
        std::fs::write(dir.join(std::ffi::OsStr::from_bytes(b"ok\xff")), "").unwrap();
        std::os::unix::fs::symlink(bad, dir.join("nl")).unwrap();
        let roots = BTreeMap::from([("r".to_owned(), dir.clone())]);
        let path = |allow| {
            let kind = ParamType::Path {
                root: "r".into(),
                must_exist: true,
                kind: PathKind::Any,
                write: false,
            };
            param(kind, allow)
        };
        let e = check(&path(false), &json!("nl"), &roots, ARGV).unwrap_err();
        assert!(e.contains("control character '\\n'"), "{e}");
        let stdin = Use {
            argv: false,
            ..ARGV
        };
        assert!(check(&path(false), &json!("nl"), &roots, stdin).is_ok());
        assert!(check(&path(true), &json!("nl"), &roots, ARGV).is_ok());
        std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(b"ok\xff"), dir.join("fine"))
            .unwrap();
        assert!(check(&path(false), &json!("fine"), &roots, ARGV).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
