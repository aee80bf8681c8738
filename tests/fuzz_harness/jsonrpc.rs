//! JSON-RPC parser: any bytes give a message, an invalid-message answer or a parse error,
//! never a panic; a parse error exactly for bytes that are not JSON (serde_json's limits
//! aside); every accepted message
//! written back out parses to the same message; ids survive their own encoding.

use serde_json::Value;
use stdmcp_proto::jsonrpc::{self, Incoming, Message};

pub(crate) fn check(body: &[u8]) {
    let parsed = jsonrpc::parse(body);
    let json = serde_json::from_slice::<Value>(body);
    // serde_json's limits: numbers beyond f64, nesting beyond 128 in a `Value`, strings that
    // are not Unicode (lone surrogates, invalid UTF-8). The parser may hit them or skip them.
    let limit = |message: &str| {
        [
            "number out of range",
            "recursion limit",
            "unicode",
            "surrogate",
            "hex escape",
        ]
        .iter()
        .any(|l| message.contains(l))
    };
    let is_json = json.is_ok();
    let json_limit = json.as_ref().err().is_some_and(|e| limit(&e.to_string()));
    let items = match parsed {
        Err(e) => {
            assert!(
                !is_json || limit(&e.message),
                "parse error for valid JSON: {}",
                e.message
            );
            assert_eq!(e.code, jsonrpc::ErrorCode::PARSE_ERROR);
            return;
        }
        Ok(Incoming::Single(m)) => vec![m],
        Ok(Incoming::Batch(items)) => items,
    };
    assert!(
        is_json || json_limit,
        "accepted bytes that are not JSON: {:.300}",
        String::from_utf8_lossy(body)
    );
    for item in items {
        match item {
            Ok(m) => round_trip(&m),
            Err(invalid) => {
                assert_eq!(invalid.error.code, jsonrpc::ErrorCode::INVALID_REQUEST);
                if let Some(id) = invalid.id {
                    check_id(&id);
                }
            }
        }
    }
}

fn check_id(id: &jsonrpc::RequestId) {
    let mut out = Vec::new();
    id.write_json(&mut out);
    let text = std::str::from_utf8(&out).unwrap();
    assert_eq!(
        jsonrpc::RequestId::from_raw(text).as_ref(),
        Some(id),
        "id {text}"
    );
}

fn write(m: &Message, out: &mut Vec<u8>) {
    match m {
        Message::Request(r) => {
            check_id(&r.id);
            jsonrpc::write_request(out, &r.id, &r.method, &r.params).unwrap();
        }
        Message::Notification(n) => {
            jsonrpc::write_notification(out, &n.method, &n.params).unwrap();
        }
        Message::Response(r) => {
            check_id(&r.id);
            match &r.result {
                Ok(v) => jsonrpc::write_result(out, &r.id, v).unwrap(),
                Err(e) => jsonrpc::write_error(out, Some(&r.id), e),
            }
        }
    }
}

fn round_trip(m: &Message) {
    let mut out = Vec::new();
    write(m, &mut out);
    let back = match jsonrpc::parse(&out) {
        Ok(Incoming::Single(Ok(back))) => back,
        other => panic!("written message does not parse back: {other:?}"),
    };
    // serde_json's default float parsing may move the last bit of a float: compare the
    // values written, with floats compared to within that.
    let (a, b) = (to_value(m), to_value(&back));
    assert!(same(&a, &b), "{a} written, {b} read back");
}

fn to_value(m: &Message) -> Value {
    let mut out = Vec::new();
    write(m, &mut out);
    serde_json::from_slice(&out).unwrap()
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= x.abs().max(y.abs()) * 1e-15
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
