//! Reading JSON objects field by field, collecting every problem with its JSON path.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::spec::ManifestError;

/// The longest duration a manifest may set, in seconds: a year, far beyond any real run, and
/// small enough that a deadline (`Instant + duration`) never overflows.
pub(super) const MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// Collects problems while reading.
pub(super) struct Errors(pub(super) Vec<ManifestError>);

impl Errors {
    pub(super) fn add(&mut self, path: &str, problem: impl Into<String>) {
        self.0.push(ManifestError {
            path: path.to_owned(),
            problem: problem.into(),
        });
    }
}

/// An object being read, with its path.
pub(super) struct Obj<'a> {
    pub(super) map: &'a Map<String, Value>,
    pub(super) path: String,
}

impl<'a> Obj<'a> {
    pub(super) fn new(v: &'a Value, path: &str, errs: &mut Errors) -> Option<Obj<'a>> {
        match v {
            Value::Object(map) => Some(Obj {
                map,
                path: path.to_owned(),
            }),
            _ => {
                errs.add(path, "must be an object");
                None
            }
        }
    }

    pub(super) fn at(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(super) fn only(&self, known: &[&str], errs: &mut Errors) {
        for k in self.map.keys() {
            if !known.contains(&k.as_str()) && k != "$schema" && k != "$comment" {
                errs.add(
                    &self.at(k),
                    format!("unknown field (expected one of: {})", known.join(", ")),
                );
            }
        }
    }

    pub(super) fn string(&self, key: &str, errs: &mut Errors) -> Option<String> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                errs.add(&self.at(key), "must be a string");
                None
            }
        }
    }

    pub(super) fn required_string(&self, key: &str, errs: &mut Errors) -> Option<String> {
        let s = self.string(key, errs);
        if s.is_none() && !self.map.contains_key(key) {
            errs.add(&self.at(key), "is required");
        }
        s
    }

    pub(super) fn boolean(&self, key: &str, errs: &mut Errors) -> Option<bool> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                errs.add(&self.at(key), "must be true or false");
                None
            }
        }
    }

    pub(super) fn number(&self, key: &str, min: f64, errs: &mut Errors) -> Option<f64> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if x >= min && x.is_finite() => Some(x),
                _ => {
                    errs.add(&self.at(key), format!("must be a number of at least {min}"));
                    None
                }
            },
            Some(_) => {
                errs.add(&self.at(key), "must be a number");
                None
            }
        }
    }

    pub(super) fn int(&self, key: &str, errs: &mut Errors) -> Option<i64> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_i64() {
                Some(i) => Some(i),
                None => {
                    errs.add(&self.at(key), "must be an integer");
                    None
                }
            },
        }
    }

    pub(super) fn count(&self, key: &str, errs: &mut Errors) -> Option<usize> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => match v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n > 0)
            {
                Some(n) => Some(n),
                None => {
                    errs.add(&self.at(key), "must be a positive integer");
                    None
                }
            },
        }
    }

    pub(super) fn seconds(&self, key: &str, errs: &mut Errors) -> Option<Duration> {
        self.duration(key, 0.0, 1.0, errs)
    }

    pub(super) fn millis(&self, key: &str, errs: &mut Errors) -> Option<Duration> {
        self.duration(key, 0.0, 1000.0, errs)
    }

    /// A duration in units of `1/per_second` s, from `min` units to a year ([`MAX_SECONDS`]).
    pub(super) fn duration(
        &self,
        key: &str,
        min: f64,
        per_second: f64,
        errs: &mut Errors,
    ) -> Option<Duration> {
        let x = self.number(key, min, errs)?;
        let max = MAX_SECONDS * per_second;
        if x > max {
            errs.add(&self.at(key), format!("must be at most {max} (a year)"));
            return None;
        }
        Some(Duration::from_secs_f64(x / per_second))
    }

    pub(super) fn strings(&self, key: &str, errs: &mut Errors) -> Vec<String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
                .iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect(),
            Some(_) => {
                errs.add(&self.at(key), "must be an array of strings");
                Vec::new()
            }
        }
    }

    pub(super) fn env(&self, key: &str, errs: &mut Errors) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        let Some(v) = self.map.get(key) else {
            return env;
        };
        let Some(o) = Obj::new(v, &self.at(key), errs) else {
            return env;
        };
        for (k, v) in o.map {
            if !is_env_name(k) {
                errs.add(&o.at(k), "is not a valid environment variable name");
            }
            match v {
                Value::String(s) if !s.contains('\0') => {
                    env.insert(k.clone(), s.clone());
                }
                _ => errs.add(&o.at(k), "must be a string (without NUL)"),
            }
        }
        env
    }
}

pub(super) fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
