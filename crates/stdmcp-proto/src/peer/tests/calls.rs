#![allow(clippy::unwrap_used)]
//! Calls: errors that keep the stream going, invalid arguments, cancellation, progress and heartbeats.

use serde_json::{json, Value};

use super::*;

#[test]
fn error_paths_keep_the_stream_going() {
    let mut h = H::handshake("2025-06-18");
    let out = h.raw(b"{not json\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n");
    assert_eq!(out.sent[0]["error"]["code"], -32700);
    // JSON-RPC 2.0: the id member is there, null when it could not be read.
    assert_eq!(out.sent[0].get("id"), Some(&Value::Null));
    assert_eq!(out.sent[1]["id"], 7);
    let r = h.one(json!({"jsonrpc":"1.0","id":8,"method":"ping"}));
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!(8), json!(-32600))
    );
    let r = h.one(json!({"jsonrpc":"2.0","id":9,"method":"nope/nope"}));
    assert_eq!(r["error"]["code"], -32601);
    assert!(h
        .req(json!({"jsonrpc":"2.0","method":"nope/notify"}))
        .sent
        .is_empty());
    let r = h.one(call(json!(10), "missing", json!({}), None));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Unknown tool: missing"));
    let r = h.one(json!({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":[1]}}));
    assert_eq!(r["error"]["code"], -32602);
    let r = h.one(json!({"jsonrpc":"2.0","id":12,"method":"resources/read","params":{}}));
    assert_eq!(r["error"]["code"], -32602);
    let r = h.one(json!({"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"cursor":"zz"}}));
    assert_eq!(r["error"]["code"], -32602);
    let r = h.one(json!({"jsonrpc":"2.0","id":14,"method":"prompts/get","params":{"name":"p"}}));
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Missing required argument"));
    let r = h.one(
        json!({"jsonrpc":"2.0","id":15,"method":"logging/setLevel","params":{"level":"loud"}}),
    );
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn invalid_arguments_are_tool_errors_in_every_version() {
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut h = H::handshake(v);
        let r = h.one(call(json!(1), "add", json!({"a": 1, "b": "x"}), None));
        assert_eq!(r["result"]["isError"], true, "{v}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("argument `b`: expected integer, got string"),
            "{text}"
        );
    }
    let mut h = H::new();
    let mut req = call(json!(1), "echo", json!({}), None);
    req["params"]["_meta"] = stateless_meta();
    let r = h.one(req);
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(r["result"]["resultType"], "complete");
}

#[test]
fn a_cancelled_call_is_never_answered() {
    let mut h = H::handshake("2025-11-25");
    let out = h.req(call(
        json!(5),
        "sleep",
        json!({"ms": 1000}),
        Some(json!("tok")),
    ));
    assert_eq!(out.started.len(), 1);
    assert!(h
        .peer
        .progress(h.now, &RequestId::number(5), 1.0, None, Some("one".into())));
    let p = h.drain().sent;
    assert_eq!(
        p[0]["params"],
        json!({"progressToken":"tok","progress":1.0,"message":"one"})
    );
    // The string id "5" is a different request: its cancel touches nothing.
    let out = h.req(
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"5"}}),
    );
    assert!(out.cancelled.is_empty() && out.sent.is_empty());
    let out = h.req(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user"}}));
    assert_eq!(out.cancelled, vec![RequestId::number(5)]);
    assert!(out.sent.is_empty());
    assert!(!h
        .peer
        .progress(h.now, &RequestId::number(5), 2.0, None, None));
    h.now += Duration::from_secs(60);
    assert_eq!(h.peer.poll_timeout(), None);
    h.peer.handle_timeout(h.now);
    h.peer
        .finish_tool(h.now, &RequestId::number(5), CallToolResult::text("slept"));
    assert!(h.drain().sent.is_empty());
    assert_eq!(h.peer.calls_in_flight(), 0);
    // The next call is answered as usual.
    h.req(call(json!(6), "echo", json!({"text": "hi"}), None));
    h.peer
        .finish_tool(h.now, &RequestId::number(6), CallToolResult::text("hi"));
    assert_eq!(h.drain().sent[0]["result"]["content"][0]["text"], "hi");
}

#[test]
fn progress_increases_and_stops_after_the_response() {
    let mut h = H::handshake("2025-11-25");
    let id = RequestId::number(1);
    h.req(call(json!(1), "sleep", json!({"ms": 1}), Some(json!(77))));
    assert!(h.peer.progress(h.now, &id, 1.0, Some(10.0), None));
    assert!(
        !h.peer.progress(h.now, &id, 1.0, Some(10.0), None),
        "equal value"
    );
    assert!(
        !h.peer.progress(h.now, &id, 0.5, Some(10.0), None),
        "smaller value"
    );
    assert!(!h.peer.progress(h.now, &id, f64::NAN, None, None));
    assert!(h.peer.progress(h.now, &id, 2.0, Some(10.0), None));
    h.peer.finish_tool(h.now, &id, CallToolResult::text("done"));
    assert!(!h.peer.progress(h.now, &id, 3.0, Some(10.0), None));
    let sent = h.drain().sent;
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[2]["id"], 1);
    // Without a token, no progress at all.
    h.req(call(json!(2), "sleep", json!({"ms": 1}), None));
    assert!(!h
        .peer
        .progress(h.now, &RequestId::number(2), 1.0, None, None));
}

#[test]
fn heartbeats_follow_the_interval() {
    let mut h = H::handshake("2025-11-25");
    let t0 = h.now;
    h.req(call(
        json!(1),
        "sleep",
        json!({"ms": 60000}),
        Some(json!("hb")),
    ));
    h.req(call(json!(2), "sleep", json!({"ms": 60000}), None));
    assert_eq!(h.peer.poll_timeout(), Some(t0 + DEFAULT_HEARTBEAT));
    h.peer.handle_timeout(t0 + Duration::from_secs(4));
    assert!(h.drain().sent.is_empty());
    h.peer.handle_timeout(t0 + Duration::from_secs(5));
    let sent = h.drain().sent;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["params"]["progress"], 5.0);
    assert_eq!(sent[0]["params"]["message"], "running for 5 s");
    h.peer
        .set_status(h.now, &RequestId::number(1), "line 42".into());
    h.peer.handle_timeout(t0 + Duration::from_secs(10));
    let sent = h.drain().sent;
    assert_eq!(sent[0]["params"]["progress"], 10.0);
    assert_eq!(sent[0]["params"]["message"], "line 42");
    // A tool's own report resets the clock; with a total the heartbeat creeps towards it.
    assert!(h.peer.progress(
        t0 + Duration::from_secs(11),
        &RequestId::number(1),
        50.0,
        Some(100.0),
        None
    ));
    assert_eq!(h.peer.poll_timeout(), Some(t0 + Duration::from_secs(16)));
    h.peer.handle_timeout(t0 + Duration::from_secs(16));
    let sent = h.drain().sent;
    let p = sent[1]["params"]["progress"].as_f64().unwrap();
    assert!(p > 50.0 && p < 100.0, "{p}");
    assert_eq!(sent[1]["params"]["total"], 100.0);
}
