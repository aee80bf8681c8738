//! JSON-RPC 2.0 wire types, as MCP restricts them (MCP 2025-11-25, Base Protocol: Messages).
//!
//! Parsing goes from one frame body to [`Incoming`]; writing goes from typed values to compact
//! JSON text (no newline: framing adds that). Ids are kept exactly as sent: `1` and `"1"` are
//! different ids, and a large integer comes back byte-for-byte because the digits are kept as
//! text rather than converted to a machine number.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer};
use serde::ser::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON-RPC error code. Open: codes this crate does not name are kept as they are.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// Not a valid JSON-RPC request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// Unknown, removed or unadvertised method.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid params: unknown tool or prompt, bad cursor, missing 2026-07-28 `_meta` fields.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// Resource not found (handshake era only; MCP 2025-11-25, Resources: Error Handling).
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// A client capability this request needs was not declared (2026-07-28).
    pub const MISSING_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// The request's protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// URL elicitation required (2025-11-25 only).
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);
}

/// The `error` member of a response.
#[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct ErrorObject {
    /// The code.
    pub code: ErrorCode,
    /// One concise sentence.
    pub message: String,
    /// Extra detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with no data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ErrorObject {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> ErrorObject {
        self.data = Some(data);
        self
    }

    /// -32602 with a message.
    pub fn invalid_params(message: impl Into<String>) -> ErrorObject {
        ErrorObject::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// -32601 naming the method (quoted with [`quote`]).
    pub fn method_not_found(method: &str) -> ErrorObject {
        ErrorObject::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {}", quote(method)),
        )
    }

    /// -32600 with a message.
    pub fn invalid_request(message: impl Into<String>) -> ErrorObject {
        ErrorObject::new(ErrorCode::INVALID_REQUEST, message)
    }

    /// -32603 with a message.
    pub fn internal(message: impl Into<String>) -> ErrorObject {
        ErrorObject::new(ErrorCode::INTERNAL_ERROR, message)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code.0)
    }
}

/// The most bytes of the other side's input an error quotes (a method name, a tool name, a
/// cursor…); longer input is cut, and the quote says how long it was.
pub const QUOTE_MAX: usize = 200;

/// The longest error message written, in bytes: a safety net behind [`quote`] for messages
/// that embed text from elsewhere (a parser's error, a handler's message).
pub const MESSAGE_MAX: usize = 4096;

/// `s` as an error message quotes it: whole when at most [`QUOTE_MAX`] bytes, else its
/// start, cut at a character boundary, and its length, in at most [`QUOTE_MAX`] bytes.
pub fn quote(s: &str) -> Cow<'_, str> {
    clip(s, QUOTE_MAX)
}

fn clip(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    // The whole result, marker included, stays within `max`, so clipping twice changes
    // nothing (a message read back and written again is the same message).
    let marker = format!("… ({} bytes)", s.len());
    let mut end = max.saturating_sub(marker.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}{marker}", &s[..end]))
}

/// A request: it expects a response with the same id.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The id.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params; `Value::Null` when absent.
    pub params: Value,
}

/// A notification: never answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params; `Value::Null` when absent.
    pub params: Value,
}

/// A response to a request this side sent.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The id of the request it answers.
    pub id: RequestId,
    /// The result, or the error.
    pub result: Result<Value, ErrorObject>,
}

/// One JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

/// A message that could not be accepted, with the id when it could be read.
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    /// The id of the offending request, when readable.
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: ErrorObject,
}

/// What one frame body holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// One message, or why it is not one.
    Single(Result<Message, Invalid>),
    /// A JSON array of messages (a batch; only 2025-03-26 allows them).
    Batch(Vec<Result<Message, Invalid>>),
}

#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// Makes an explicit `null` member `Some(null)`, so that it differs from an absent one.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Parses one frame body.
///
/// Bad JSON is `Err` (the caller answers -32700 and goes on); a well-formed JSON value that is
/// not a valid message is an [`Invalid`] entry (the caller answers -32600, with its id if known).
pub fn parse(body: &[u8]) -> Result<Incoming, ErrorObject> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        let items: Vec<&RawValue> = serde_json::from_slice(body).map_err(parse_error)?;
        return Ok(Incoming::Batch(
            items.into_iter().map(|raw| parse_one(raw.get())).collect(),
        ));
    }
    // Validate the JSON as a whole first: a syntax error anywhere is a parse error, even when
    // the envelope's own fields would have been readable.
    let envelope: Result<Envelope<'_>, _> = serde_json::from_slice(body);
    match envelope {
        Ok(env) => Ok(Incoming::Single(from_envelope(env))),
        Err(e) if e.is_data() => {
            // Valid JSON, wrong shape (a number, a string, a member of the wrong type).
            serde_json::from_slice::<serde::de::IgnoredAny>(body).map_err(parse_error)?;
            Ok(Incoming::Single(Err(Invalid {
                id: salvage_id(body),
                error: ErrorObject::invalid_request(format!(
                    "Invalid request: {}",
                    quote(&e.to_string())
                )),
            })))
        }
        Err(e) => Err(parse_error(e)),
    }
}

fn parse_error(e: serde_json::Error) -> ErrorObject {
    ErrorObject::new(ErrorCode::PARSE_ERROR, format!("Parse error: {e}"))
}

fn parse_one(text: &str) -> Result<Message, Invalid> {
    match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(env) => from_envelope(env),
        Err(e) => Err(Invalid {
            id: salvage_id(text.as_bytes()),
            error: ErrorObject::invalid_request(format!(
                "Invalid request: {}",
                quote(&e.to_string())
            )),
        }),
    }
}

/// Tries to read an `id` from a JSON object whose other members are malformed.
fn salvage_id(body: &[u8]) -> Option<RequestId> {
    let v: Value = serde_json::from_slice(body).ok()?;
    RequestId::from_value(v.get("id")?)
}

fn from_envelope(env: Envelope<'_>) -> Result<Message, Invalid> {
    let id = match env.id {
        None => None,
        Some(raw) => match RequestId::from_raw(raw.get()) {
            Some(id) => Some(id),
            None => {
                return Err(Invalid {
                    id: None,
                    error: ErrorObject::invalid_request(format!(
                        "Invalid request: id must be a string or an integer, not {}",
                        json_kind(raw.get())
                    )),
                })
            }
        },
    };
    let fail = |id: Option<RequestId>, msg: &str| {
        Err(Invalid {
            id,
            error: ErrorObject::invalid_request(format!("Invalid request: {msg}")),
        })
    };
    if env.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return fail(id, "jsonrpc must be \"2.0\"");
    }
    let params = match env.params {
        None => Value::Null,
        Some(p @ (Value::Object(_) | Value::Array(_))) => p,
        Some(_) => return fail(id, "params must be an object or an array"),
    };
    match (env.method, env.result, env.error) {
        (Some(Value::String(method)), None, None) => Ok(match id {
            Some(id) => Message::Request(Request { id, method, params }),
            None => Message::Notification(Notification { method, params }),
        }),
        (Some(_), None, None) => fail(id, "method must be a string"),
        (None, Some(result), None) => match id {
            Some(id) => Ok(Message::Response(Response {
                id,
                result: Ok(result),
            })),
            None => fail(None, "a response needs an id"),
        },
        (None, None, Some(error)) => match (id, serde_json::from_value::<ErrorObject>(error)) {
            (Some(id), Ok(error)) => Ok(Message::Response(Response {
                id,
                result: Err(error),
            })),
            (id, _) => fail(
                id,
                "error must be an object with an integer code and a message",
            ),
        },
        (None, None, None) => fail(id, "no method, result or error"),
        _ => fail(id, "a message has exactly one of method, result and error"),
    }
}

/// What a JSON value is, for a message about a value of the wrong kind: `null`, `a boolean`,
/// `an object`, `an array`, or, for a number, what it is with its bounded spelling
/// (`a non-integer number (8.0)`).
fn json_kind(raw: &str) -> String {
    let raw = raw.trim();
    match raw.as_bytes().first() {
        Some(b'n') => "null".to_owned(),
        Some(b't' | b'f') => "a boolean".to_owned(),
        Some(b'{') => "an object".to_owned(),
        Some(b'[') => "an array".to_owned(),
        _ => format!("a non-integer number ({})", quote(raw)),
    }
}

/// Appends a JSON string literal.
pub fn write_json_str(out: &mut Vec<u8>, s: &str) {
    // Serializing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn write_value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> Result<(), ErrorObject> {
    serde_json::to_writer(&mut *out, v)
        .map_err(|e| ErrorObject::internal(format!("could not serialize a message: {e}")))
}

/// Writes a success response: `{"jsonrpc":"2.0","id":…,"result":…}`.
pub fn write_result<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    result: &T,
) -> Result<(), ErrorObject> {
    let start = out.len();
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    id.write_json(out);
    out.extend_from_slice(br#","result":"#);
    if let Err(e) = write_value(out, result) {
        out.truncate(start);
        return Err(e);
    }
    out.push(b'}');
    Ok(())
}

/// Writes an error response. When the request's id could not be read (a parse error, an
/// id of the wrong kind), the id is `null`: JSON-RPC 2.0 (section 5, Response object)
/// requires the member, and null where the id could not be determined.
pub fn write_error(out: &mut Vec<u8>, id: Option<&RequestId>, error: &ErrorObject) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    match id {
        Some(id) => id.write_json(out),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","error":"#);
    let clipped;
    let error = match clip(&error.message, MESSAGE_MAX) {
        Cow::Borrowed(_) => error,
        Cow::Owned(message) => {
            clipped = ErrorObject {
                message,
                ..error.clone()
            };
            &clipped
        }
    };
    if write_value(out, error).is_err() {
        out.extend_from_slice(br#"{"code":-32603,"message":"Internal error"}"#);
    }
    out.push(b'}');
}

/// Writes a request.
pub fn write_request<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    method: &str,
    params: &T,
) -> Result<(), ErrorObject> {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    id.write_json(out);
    out.extend_from_slice(br#","method":"#);
    write_json_str(out, method);
    write_params(out, params)?;
    out.push(b'}');
    Ok(())
}

/// Writes a notification.
pub fn write_notification<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    method: &str,
    params: &T,
) -> Result<(), ErrorObject> {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    write_json_str(out, method);
    write_params(out, params)?;
    out.push(b'}');
    Ok(())
}

/// Appends `,"params":…`, or nothing for `null` params: JSON-RPC 2.0 §4.2 allows only a
/// structured value or no member at all, and [`parse`] reads absent params as `null`.
fn write_params<T: Serialize + ?Sized>(out: &mut Vec<u8>, params: &T) -> Result<(), ErrorObject> {
    let start = out.len();
    out.extend_from_slice(br#","params":"#);
    let value_start = out.len();
    write_value(out, params)?;
    if &out[value_start..] == b"null" {
        out.truncate(start);
    }
    Ok(())
}

mod id_map;
mod request_id;
pub use id_map::{IdHasher, IdHashing, IdMap};
pub use request_id::RequestId;

#[cfg(test)]
mod tests;
