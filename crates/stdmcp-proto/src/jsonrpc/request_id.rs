//! Request ids ([`RequestId`]), kept exactly as the sender wrote them.

use std::fmt;
use std::sync::Arc;

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// A request id, exactly as the sender wrote it (MCP 2025-11-25, Base Protocol: Requests: a string or
/// an integer, never null). The text is shared: a call's id is kept in several tables at once
/// (the call table, its timers, the runtime's cancellation tokens), and a copy costs a count,
/// not an allocation.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// An integer id; the text holds its digits as sent (so `9007199254740993` survives).
    Number(Arc<str>),
    /// A string id.
    String(Arc<str>),
}

impl RequestId {
    /// An integer id.
    pub fn number(n: i64) -> RequestId {
        RequestId::Number(n.to_string().into())
    }

    /// A string id.
    pub fn string(s: impl Into<String>) -> RequestId {
        RequestId::String(s.into().into())
    }

    /// Reads an id from its raw JSON text; `None` for anything but a string or an integer.
    pub fn from_raw(raw: &str) -> Option<RequestId> {
        let raw = raw.trim();
        if raw.starts_with('"') {
            let s: String = serde_json::from_str(raw).ok()?;
            return Some(RequestId::String(s.into()));
        }
        let digits = raw.strip_prefix('-').unwrap_or(raw);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return Some(RequestId::Number(raw.into()));
        }
        None
    }

    /// Reads an id from a parsed JSON value (used for `notifications/cancelled` params).
    pub fn from_value(v: &Value) -> Option<RequestId> {
        match v {
            Value::String(s) => Some(RequestId::String(s.as_str().into())),
            Value::Number(n) if n.is_i64() || n.is_u64() => {
                Some(RequestId::Number(n.to_string().into()))
            }
            _ => None,
        }
    }

    /// Appends the id as JSON.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            RequestId::Number(digits) => out.extend_from_slice(digits.as_bytes()),
            RequestId::String(s) => super::write_json_str(out, s),
        }
    }
}

/// Shows string ids quoted, so that `1` and `"1"` look different in logs.
impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(d) => f.write_str(d),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(d) => match RawValue::from_string(d.to_string()) {
                Ok(raw) => raw.serialize(s),
                Err(e) => Err(serde::ser::Error::custom(e)),
            },
            RequestId::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        RequestId::from_value(&v)
            .ok_or_else(|| serde::de::Error::custom("request id must be a string or an integer"))
    }
}
