//! A small JSON Schema (2020-12) validator for tool arguments (MCP 2025-11-25, Tools: Input Schema;
//! JSON Schema Usage).
//!
//! It checks the keywords tools actually use: `type`, `enum`, `const`, `required`,
//! `properties`, `additionalProperties`, `items`, `minItems`/`maxItems`,
//! `minLength`/`maxLength`, `minimum`/`maximum`, `exclusiveMinimum`/`exclusiveMaximum`,
//! `allOf`/`anyOf`/`oneOf`, `not`, and local `$ref` (`#/$defs/…`, `#/definitions/…`).
//! Other keywords (`pattern`, `format`, …) are accepted and not checked. `$ref` never fetches
//! anything. Nesting is bounded, so a hostile schema cannot exhaust the stack.

use serde_json::Value;
use std::fmt::{self, Write as _};

/// The keywords of one (sub)schema that this validator checks, found in one pass over its
/// members. Tool arguments are checked for every call, and looking each keyword up in the
/// schema's map cost about twenty lookups per value, a tenth of the reader thread's time in
/// pipelined calls (docs/bench.md).
#[derive(Default)]
struct Keywords<'a> {
    reference: Option<&'a Value>,
    ty: Option<&'a Value>,
    enumeration: Option<&'a Value>,
    constant: Option<&'a Value>,
    minimum: Option<&'a Value>,
    maximum: Option<&'a Value>,
    exclusive_minimum: Option<&'a Value>,
    exclusive_maximum: Option<&'a Value>,
    min_length: Option<&'a Value>,
    max_length: Option<&'a Value>,
    min_items: Option<&'a Value>,
    max_items: Option<&'a Value>,
    items: Option<&'a Value>,
    required: Option<&'a Value>,
    properties: Option<&'a Value>,
    additional_properties: Option<&'a Value>,
    all_of: Option<&'a Value>,
    any_of: Option<&'a Value>,
    one_of: Option<&'a Value>,
    not: Option<&'a Value>,
}

impl<'a> Keywords<'a> {
    fn of(schema: &'a serde_json::Map<String, Value>) -> Self {
        let mut k = Keywords::default();
        for (key, value) in schema {
            let slot = match key.as_str() {
                "$ref" => &mut k.reference,
                "type" => &mut k.ty,
                "enum" => &mut k.enumeration,
                "const" => &mut k.constant,
                "minimum" => &mut k.minimum,
                "maximum" => &mut k.maximum,
                "exclusiveMinimum" => &mut k.exclusive_minimum,
                "exclusiveMaximum" => &mut k.exclusive_maximum,
                "minLength" => &mut k.min_length,
                "maxLength" => &mut k.max_length,
                "minItems" => &mut k.min_items,
                "maxItems" => &mut k.max_items,
                "items" => &mut k.items,
                "required" => &mut k.required,
                "properties" => &mut k.properties,
                "additionalProperties" => &mut k.additional_properties,
                "allOf" => &mut k.all_of,
                "anyOf" => &mut k.any_of,
                "oneOf" => &mut k.one_of,
                "not" => &mut k.not,
                _ => continue,
            };
            *slot = Some(value);
        }
        k
    }
}

const MAX_DEPTH: usize = 64;

/// Checks `value` against `schema`; the error names the offending argument and the rule.
pub fn validate(schema: &Value, value: &Value) -> Result<(), SchemaError> {
    Validator { root: schema }.check(schema, value, &mut String::new(), 0)
}

/// Why a value fails a schema: the argument at fault and what is wrong with it. Its
/// `Display` is the sentence a model reads (``argument `a`: expected integer, got string``).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    path: String,
    broken: Broken,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Broken {
    /// A rule of the schema, said after the argument's name.
    Rule(String),
    /// A `false` schema.
    NotAllowed,
    /// A `required` member is absent.
    Missing,
    /// A member `additionalProperties: false` refuses.
    Unknown,
}

impl SchemaError {
    fn rule(path: &str, text: String) -> Self {
        let path = path.to_owned();
        SchemaError {
            path,
            broken: Broken::Rule(text),
        }
    }

    /// The argument at fault, as `a.b[2]`; empty for the arguments as a whole.
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = &self.path;
        match &self.broken {
            Broken::Rule(text) => write!(f, "{}: {text}", describe(path)),
            Broken::NotAllowed => write!(f, "{} is not allowed", describe(path)),
            Broken::Missing => write!(f, "missing required argument `{path}`"),
            Broken::Unknown => write!(f, "unknown argument `{path}`"),
        }
    }
}

impl std::error::Error for SchemaError {}

struct Validator<'a> {
    root: &'a Value,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_type(v: &Value, ty: &str) -> bool {
    let actual = type_name(v);
    actual == ty || (ty == "number" && actual == "integer")
}

fn describe(path: &str) -> String {
    if path.is_empty() {
        "the arguments".to_owned()
    } else {
        format!("argument `{path}`")
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        let cut: String = s.chars().take(57).collect();
        format!("{cut}...")
    } else {
        s
    }
}

impl Validator<'_> {
    fn resolve<'s>(&'s self, reference: &str) -> Option<&'s Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }

    fn check(
        &self,
        schema: &Value,
        v: &Value,
        path: &mut String,
        depth: usize,
    ) -> Result<(), SchemaError> {
        if depth > MAX_DEPTH {
            return Err(SchemaError::rule(
                path,
                "the schema nests too deeply".into(),
            ));
        }
        let Value::Object(members) = schema else {
            return match schema {
                Value::Bool(false) => Err(SchemaError {
                    path: path.clone(),
                    broken: Broken::NotAllowed,
                }),
                _ => Ok(()),
            };
        };
        let s = &Keywords::of(members);
        if let Some(Value::String(r)) = s.reference {
            let target = self.resolve(r).ok_or_else(|| {
                SchemaError::rule(path, format!("schema reference {r} cannot be resolved"))
            })?;
            self.check(target, v, path, depth + 1)?;
        }
        if let Some(ty) = s.ty {
            let ok = match ty {
                Value::String(t) => is_type(v, t),
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| is_type(v, t)),
                _ => true,
            };
            if !ok {
                let want = match ty {
                    Value::Array(ts) => {
                        let names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
                        names.join(" or ")
                    }
                    other => other.as_str().unwrap_or("?").to_owned(),
                };
                let got = type_name(v);
                return Err(SchemaError::rule(
                    path,
                    format!("expected {want}, got {got}"),
                ));
            }
        }
        if let Some(Value::Array(options)) = s.enumeration {
            if !options.iter().any(|o| o == v) {
                let list: Vec<String> = options.iter().map(short).collect();
                let text = format!("{} is not one of {}", short(v), list.join(", "));
                return Err(SchemaError::rule(path, text));
            }
        }
        if let Some(c) = s.constant {
            if c != v {
                return Err(SchemaError::rule(path, format!("must be {}", short(c))));
            }
        }
        self.check_number(s, v, path)?;
        self.check_string(s, v, path)?;
        self.check_array(s, v, path, depth)?;
        self.check_object(s, v, path, depth)?;
        self.check_combinators(s, v, path, depth)
    }

    fn check_number(&self, s: &Keywords<'_>, v: &Value, path: &str) -> Result<(), SchemaError> {
        let Some(x) = v.as_f64() else { return Ok(()) };
        let bound = |k: Option<&Value>| k.and_then(Value::as_f64);
        let fail = |rule: String| Err(SchemaError::rule(path, format!("{} {rule}", short(v))));
        if let Some(m) = bound(s.minimum).filter(|m| x < *m) {
            return fail(format!("is less than the minimum {m}"));
        }
        if let Some(m) = bound(s.maximum).filter(|m| x > *m) {
            return fail(format!("is greater than the maximum {m}"));
        }
        if let Some(m) = bound(s.exclusive_minimum).filter(|m| x <= *m) {
            return fail(format!("must be greater than {m}"));
        }
        if let Some(m) = bound(s.exclusive_maximum).filter(|m| x >= *m) {
            return fail(format!("must be less than {m}"));
        }
        Ok(())
    }

    fn check_string(&self, s: &Keywords<'_>, v: &Value, path: &str) -> Result<(), SchemaError> {
        let Value::String(text) = v else {
            return Ok(());
        };
        let (min, max) = (
            s.min_length.and_then(Value::as_u64),
            s.max_length.and_then(Value::as_u64),
        );
        if min.is_none() && max.is_none() {
            return Ok(());
        }
        let len = text.chars().count() as u64;
        if let Some(m) = min.filter(|m| len < *m) {
            return Err(SchemaError::rule(
                path,
                format!("must be at least {m} characters long"),
            ));
        }
        if let Some(m) = max.filter(|m| len > *m) {
            return Err(SchemaError::rule(
                path,
                format!("is {len} characters long, more than the maximum of {m}"),
            ));
        }
        Ok(())
    }

    fn check_array(
        &self,
        s: &Keywords<'_>,
        v: &Value,
        path: &mut String,
        depth: usize,
    ) -> Result<(), SchemaError> {
        let Value::Array(items) = v else {
            return Ok(());
        };
        let n = items.len() as u64;
        if let Some(m) = s.min_items.and_then(Value::as_u64).filter(|m| n < *m) {
            return Err(SchemaError::rule(path, format!("needs at least {m} items")));
        }
        if let Some(m) = s.max_items.and_then(Value::as_u64).filter(|m| n > *m) {
            return Err(SchemaError::rule(
                path,
                format!("has {n} items, more than the maximum of {m}"),
            ));
        }
        if let Some(item_schema) = s.items {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                // Writing to a String cannot fail.
                let _ = write!(path, "[{i}]");
                self.check(item_schema, item, path, depth + 1)?;
                path.truncate(len);
            }
        }
        Ok(())
    }

    fn check_object(
        &self,
        s: &Keywords<'_>,
        v: &Value,
        path: &mut String,
        depth: usize,
    ) -> Result<(), SchemaError> {
        let Value::Object(obj) = v else { return Ok(()) };
        if let Some(Value::Array(required)) = s.required {
            for name in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(name) {
                    let full = if path.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{path}.{name}")
                    };
                    return Err(SchemaError {
                        path: full,
                        broken: Broken::Missing,
                    });
                }
            }
        }
        let props = s.properties.and_then(Value::as_object);
        for (key, val) in obj {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            let result = match props.and_then(|p| p.get(key)) {
                Some(prop_schema) => self.check(prop_schema, val, path, depth + 1),
                None => match s.additional_properties {
                    Some(Value::Bool(false)) => Err(SchemaError {
                        path: path.clone(),
                        broken: Broken::Unknown,
                    }),
                    Some(extra @ Value::Object(_)) => self.check(extra, val, path, depth + 1),
                    _ => Ok(()),
                },
            };
            path.truncate(len);
            result?;
        }
        Ok(())
    }

    fn check_combinators(
        &self,
        s: &Keywords<'_>,
        v: &Value,
        path: &mut String,
        depth: usize,
    ) -> Result<(), SchemaError> {
        if let Some(Value::Array(all)) = s.all_of {
            for sub in all {
                self.check(sub, v, path, depth + 1)?;
            }
        }
        let passing = |subs: &Vec<Value>, path: &mut String| {
            subs.iter()
                .filter(|sub| self.check(sub, v, path, depth + 1).is_ok())
                .count()
        };
        if let Some(Value::Array(any)) = s.any_of {
            if passing(any, path) == 0 {
                return Err(SchemaError::rule(
                    path,
                    "matches none of the allowed forms".into(),
                ));
            }
        }
        if let Some(Value::Array(one)) = s.one_of {
            if passing(one, path) != 1 {
                return Err(SchemaError::rule(
                    path,
                    "must match exactly one of the allowed forms".into(),
                ));
            }
        }
        if let Some(not) = s.not {
            if self.check(not, v, path, depth + 1).is_ok() {
                return Err(SchemaError::rule(
                    path,
                    "matches a form that is not allowed".into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": 0, "maximum": 10},
                "s": {"type": "string", "minLength": 2, "maxLength": 4},
                "e": {"enum": ["x", "y"]},
                "l": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "r": {"$ref": "#/$defs/pos"}
            },
            "required": ["a"],
            "additionalProperties": false,
            "$defs": {"pos": {"type": "number", "exclusiveMinimum": 0}}
        })
    }

    #[test]
    fn accepts_valid_arguments() {
        let ok = json!({"a": 3, "s": "abc", "e": "x", "l": ["p"], "r": 0.5});
        assert_eq!(validate(&schema(), &ok), Ok(()));
        assert_eq!(validate(&schema(), &json!({"a": 3.0})), Ok(()));
    }

    #[test]
    fn names_the_problem() {
        let cases = [
            (json!({}), "missing required argument `a`"),
            (
                json!({"a": "3"}),
                "argument `a`: expected integer, got string",
            ),
            (
                json!({"a": 1.5}),
                "argument `a`: expected integer, got number",
            ),
            (
                json!({"a": 11}),
                "argument `a`: 11 is greater than the maximum 10",
            ),
            (
                json!({"a": -1}),
                "argument `a`: -1 is less than the minimum 0",
            ),
            (
                json!({"a": 1, "s": "a"}),
                "argument `s`: must be at least 2 characters long",
            ),
            (
                json!({"a": 1, "s": "abcde"}),
                "argument `s`: is 5 characters long, more than the maximum of 4",
            ),
            (
                json!({"a": 1, "e": "z"}),
                "argument `e`: \"z\" is not one of \"x\", \"y\"",
            ),
            (
                json!({"a": 1, "l": [1]}),
                "argument `l[0]`: expected string, got integer",
            ),
            (
                json!({"a": 1, "l": ["a", "b", "c"]}),
                "argument `l`: has 3 items, more than the maximum of 2",
            ),
            (json!({"a": 1, "zz": 1}), "unknown argument `zz`"),
            (
                json!({"a": 1, "r": 0}),
                "argument `r`: 0 must be greater than 0",
            ),
            (json!([1]), "the arguments: expected object, got array"),
        ];
        for (args, want) in cases {
            let got = validate(&schema(), &args).map_err(|e| e.to_string());
            assert_eq!(got, Err(want.to_owned()), "{args}");
        }
    }

    #[test]
    fn every_keyword_is_read() {
        // One case per keyword the validator checks (the ones `schema()` has not).
        let cases = [
            (json!({"const": 1}), json!(2), "the arguments: must be 1"),
            (
                json!({"exclusiveMaximum": 5}),
                json!(5),
                "the arguments: 5 must be less than 5",
            ),
            (
                json!({"minItems": 2}),
                json!([1]),
                "the arguments: needs at least 2 items",
            ),
            (
                json!({"additionalProperties": {"type": "string"}}),
                json!({"x": 1}),
                "argument `x`: expected string, got integer",
            ),
            (
                json!({"allOf": [{"type": "integer"}, {"minimum": 3}]}),
                json!(2),
                "the arguments: 2 is less than the minimum 3",
            ),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "boolean"}]}),
                json!(1),
                "the arguments: matches none of the allowed forms",
            ),
            (
                json!({"oneOf": [{"type": "integer"}, {"minimum": 0}]}),
                json!(1),
                "the arguments: must match exactly one of the allowed forms",
            ),
            (
                json!({"not": {"type": "null"}}),
                json!(null),
                "the arguments: matches a form that is not allowed",
            ),
            (
                json!({"type": ["string", "null"]}),
                json!(1),
                "the arguments: expected string or null, got integer",
            ),
        ];
        for (schema, value, want) in cases {
            let got = validate(&schema, &value).map_err(|e| e.to_string());
            assert_eq!(got, Err(want.to_owned()), "{schema} {value}");
        }
        // And what they let through.
        let passes = [
            (json!({"const": 1}), json!(1)),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
                json!(1),
            ),
            (
                json!({"oneOf": [{"type": "integer"}, {"type": "string"}]}),
                json!(1),
            ),
            (json!({"not": {"type": "null"}}), json!(0)),
            (json!({"pattern": "^a$", "format": "email"}), json!("b")),
        ];
        for (schema, value) in passes {
            assert_eq!(validate(&schema, &value), Ok(()), "{schema} {value}");
        }
    }

    #[test]
    fn hostile_schemas_are_bounded() {
        let looping = json!({"$ref": "#"});
        assert!(validate(&looping, &json!(1))
            .unwrap_err()
            .to_string()
            .contains("nests too deeply"));
        let dangling = json!({"$ref": "https://example.com/s.json"});
        assert!(validate(&dangling, &json!(1))
            .unwrap_err()
            .to_string()
            .contains("cannot be resolved"));
    }
}
