#![allow(clippy::unwrap_used)]
//! Parsing and writing JSON-RPC messages, and bounded quotes in errors.

use super::*;
use serde_json::json;

fn single(s: &str) -> Result<Message, Invalid> {
    match parse(s.as_bytes()).unwrap() {
        Incoming::Single(m) => m,
        Incoming::Batch(_) => panic!("batch"),
    }
}

#[test]
fn ids_keep_their_type_and_digits() {
    let m = single(r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}"#).unwrap();
    let Message::Request(r) = m else { panic!() };
    let mut out = Vec::new();
    write_result(&mut out, &r.id, &json!({})).unwrap();
    assert_eq!(
        std::str::from_utf8(&out).unwrap(),
        r#"{"jsonrpc":"2.0","id":9007199254740993,"result":{}}"#
    );
    let huge = "123456789012345678901234567890";
    let m = single(&format!(
        r#"{{"jsonrpc":"2.0","id":{huge},"method":"ping"}}"#
    ))
    .unwrap();
    let Message::Request(r) = m else { panic!() };
    assert_eq!(r.id, RequestId::Number(huge.into()));
    assert_ne!(RequestId::number(1), RequestId::string("1"));
    assert_eq!(
        format!("{} {}", RequestId::number(1), RequestId::string("1")),
        "1 \"1\""
    );
}

#[test]
fn message_kinds() {
    assert!(matches!(
        single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        Ok(Message::Notification(_))
    ));
    assert!(matches!(
        single(r#"{"jsonrpc":"2.0","id":"a","result":null}"#),
        Ok(Message::Response(Response {
            result: Ok(Value::Null),
            ..
        }))
    ));
    let e = single(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"x"}}"#);
    let Ok(Message::Response(Response { result: Err(e), .. })) = e else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
}

#[test]
fn bad_json_is_a_parse_error() {
    for body in ["{", "{\"jsonrpc\":\"2.0\",\"id\":1,", "nope", "{\"a\":1}}"] {
        let e = parse(body.as_bytes()).unwrap_err();
        assert_eq!(e.code, ErrorCode::PARSE_ERROR, "{body}");
    }
}

#[test]
fn bad_envelopes_keep_the_id_when_readable() {
    let cases = [
        (
            r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#,
            Some(RequestId::number(7)),
        ),
        (r#"{"id":7,"method":"ping"}"#, Some(RequestId::number(7))),
        (
            r#"{"jsonrpc":"2.0","id":"x","method":5}"#,
            Some(RequestId::string("x")),
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"a","params":3}"#,
            Some(RequestId::number(7)),
        ),
        (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, None),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, None),
        (r#"{"jsonrpc":"2.0","id":2}"#, Some(RequestId::number(2))),
        (r#"42"#, None),
        (r#""str""#, None),
    ];
    for (body, id) in cases {
        let Err(inv) = single(body) else {
            panic!("{body} accepted")
        };
        assert_eq!(inv.error.code, ErrorCode::INVALID_REQUEST, "{body}");
        assert_eq!(inv.id, id, "{body}");
    }
}

#[test]
fn an_unreadable_id_is_named_as_sent() {
    for (id, what) in [
        ("8.0", "a non-integer number (8.0)"),
        ("1e400", "a non-integer number (1e400)"),
        ("-0.5", "a non-integer number (-0.5)"),
        ("null", "null"),
        ("true", "a boolean"),
        ("[1]", "an array"),
        ("{}", "an object"),
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let Err(inv) = single(&body) else {
            panic!("{body} accepted")
        };
        assert_eq!(inv.id, None, "{body}");
        assert_eq!(
            inv.error.message,
            format!("Invalid request: id must be a string or an integer, not {what}")
        );
    }
}

#[test]
fn batches_parse_each_entry() {
    let Incoming::Batch(items) =
        parse(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5]"#).unwrap()
    else {
        panic!()
    };
    assert!(items[0].is_ok());
    assert!(items[1].is_err());
}

#[test]
fn errors_quote_a_bounded_part_of_the_input() {
    let huge = format!("\"{}\"", "x".repeat(1 << 20));
    let Err(inv) = single(&huge) else { panic!() };
    assert!(
        inv.error.message.len() < QUOTE_MAX + 100,
        "{}",
        inv.error.message
    );
    assert!(
        inv.error.message.ends_with("bytes)"),
        "{}",
        inv.error.message
    );
    assert_eq!(quote("é"), "é");
    let odd = format!("x{}", "é".repeat(200)); // byte 200 falls inside a character
    let cut = quote(&odd);
    assert_eq!(cut, format!("x{}… (401 bytes)", "é".repeat(92)));
    // Within the bound, marker included, so quoting again changes nothing.
    assert!(cut.len() <= QUOTE_MAX);
    assert_eq!(quote(&cut), cut);
    let mut out = Vec::new();
    let long = ErrorObject::internal("m".repeat(MESSAGE_MAX * 2));
    write_error(&mut out, None, &long);
    assert!(out.len() < MESSAGE_MAX + 100);
}

#[test]
fn writers_emit_compact_json() {
    let mut out = Vec::new();
    write_error(
        &mut out,
        None,
        &ErrorObject::new(ErrorCode::PARSE_ERROR, "Parse error"),
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
    );
    let mut out = Vec::new();
    write_notification(&mut out, "a/b", &json!({"x":"line\nbreak"})).unwrap();
    assert!(!out.contains(&b'\n'));
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["params"]["x"], "line\nbreak");
}
