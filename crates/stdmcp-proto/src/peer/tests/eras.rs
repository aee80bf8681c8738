#![allow(clippy::unwrap_used)]
//! Both eras: the handshake at each revision, stateless requests, what each revision may carry (batches, output, logging, framing, caching hints).

use serde_json::{json, Value};

use super::*;

#[test]
fn handshake_for_each_version() {
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let mut h = H::new();
        let r = h.one(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":asked,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}));
        assert_eq!(r["id"], 1);
        assert_eq!(r["result"]["protocolVersion"], answered, "{asked}");
        assert_eq!(r["result"]["serverInfo"]["name"], "test-server");
        assert_eq!(
            r["result"]["capabilities"]["tools"],
            json!({"listChanged": false})
        );
        let old = asked == "2024-11-05";
        assert_eq!(r["result"].get("instructions").is_none(), old);
        assert_eq!(
            r["result"]["capabilities"].get("completions").is_none(),
            old
        );
        assert_eq!(
            r["result"]["serverInfo"].get("title").is_some(),
            answered >= "2025-06-18"
        );
        assert!(r["result"].get("resultType").is_none());
    }
}

#[test]
fn stateless_discover_and_errors() {
    let mut h = H::new();
    let r = h.one(json!({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta":stateless_meta()}}));
    let res = &r["result"];
    assert_eq!(res["resultType"], "complete");
    assert_eq!(res["supportedVersions"][0], "2026-07-28");
    assert!(res["ttlMs"].is_u64());
    assert_eq!(res["cacheScope"], "public");
    assert_eq!(
        res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test-server"
    );
    assert!(res["capabilities"]["resources"].get("subscribe").is_none());

    let mut bad = stateless_meta();
    bad["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let r =
        h.one(json!({"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":bad}}));
    assert_eq!(r["error"]["code"], -32022);
    assert_eq!(r["error"]["data"]["requested"], "1999-01-01");
    assert_eq!(r["error"]["data"]["supported"][0], "2026-07-28");

    let r = h.one(json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("clientCapabilities"));

    for m in [
        "ping",
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
        "tasks/list",
    ] {
        let r =
            h.one(json!({"jsonrpc":"2.0","id":4,"method":m,"params":{"_meta":stateless_meta()}}));
        assert_eq!(r["error"]["code"], -32601, "{m}");
    }
    let r = h.one(
        json!({"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":stateless_meta()}}),
    );
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 4);
    assert_eq!(r["result"]["cacheScope"], "public");
    let mut meta = stateless_meta();
    meta["io.modelcontextprotocol/logLevel"] = json!("loud");
    let r = h.one(json!({"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":meta}}));
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn requests_before_any_handshake_are_answered() {
    let mut h = H::new();
    assert_eq!(
        h.one(json!({"jsonrpc":"2.0","id":1,"method":"ping"}))["result"],
        json!({})
    );
    let r = h.one(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"]["supported"].as_array().unwrap().len(), 5);
    assert!(h
        .req(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .sent
        .is_empty());
}

#[test]
fn batches_only_in_2025_03_26() {
    let mut h = H::handshake("2025-03-26");
    let out = h.raw(
        br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}},{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-03-26"}},7]
"#,
    );
    assert!(out.sent.is_empty(), "held until every response is ready");
    assert_eq!(out.started.len(), 1);
    h.peer
        .finish_tool(h.now, &RequestId::number(2), CallToolResult::text("b"));
    let sent = h.drain().sent;
    assert_eq!(sent.len(), 1);
    let arr = sent[0].as_array().unwrap();
    assert_eq!(arr.len(), 4);
    assert_eq!(arr[0]["id"], 1);
    assert_eq!(arr[1]["id"], 3);
    assert_eq!(arr[1]["error"]["code"], -32600);
    assert_eq!(arr[2]["error"]["code"], -32600);
    assert_eq!(arr[2].get("id"), Some(&Value::Null));
    assert_eq!(arr[3]["id"], 2);
    let r = h.one(json!([]));
    assert_eq!(r["error"]["code"], -32600);
    for v in ["2024-11-05", "2025-06-18", "2025-11-25"] {
        let mut h = H::handshake(v);
        let r = h.one(json!([{"jsonrpc":"2.0","id":1,"method":"ping"}]));
        assert_eq!(r["error"]["code"], -32600, "{v}");
        assert_eq!(r.get("id"), Some(&Value::Null));
    }
    // An id that is a number but not an integer: named as sent, answered with a null id.
    for (id, shown) in [("8.0", "8.0"), ("1e400", "1e400")] {
        let out =
            h.raw(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes());
        let r = &out.sent[0];
        assert_eq!(r.get("id"), Some(&Value::Null), "{r}");
        assert_eq!(r["error"]["code"], -32600);
        assert_eq!(
            r["error"]["message"],
            format!("Invalid request: id must be a string or an integer, not a non-integer number ({shown})")
        );
    }
}

#[test]
fn output_is_gated_by_version() {
    let list = |v: &str| {
        let mut h = H::handshake(v);
        h.one(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))["result"]["tools"][1].clone()
    };
    let old = list("2024-11-05");
    assert!(
        old.get("title").is_none()
            && old.get("annotations").is_none()
            && old.get("outputSchema").is_none()
    );
    let mid = list("2025-03-26");
    assert!(mid.get("annotations").is_some() && mid.get("outputSchema").is_none());
    let new = list("2025-06-18");
    assert!(new.get("title").is_some() && new.get("outputSchema").is_some());

    for (v, structured, message) in [
        ("2024-11-05", false, false),
        ("2025-03-26", false, true),
        ("2025-06-18", true, true),
    ] {
        let mut h = H::handshake(v);
        h.req(call(
            json!(1),
            "add",
            json!({"a": 2, "b": 3}),
            Some(json!(1)),
        ));
        h.peer
            .progress(h.now, &RequestId::number(1), 1.0, None, Some("m".into()));
        h.peer.finish_tool(
            h.now,
            &RequestId::number(1),
            CallToolResult::structured(json!({"sum": 5})),
        );
        let sent = h.drain().sent;
        assert_eq!(sent[0]["params"].get("message").is_some(), message, "{v}");
        assert_eq!(
            sent[1]["result"].get("structuredContent").is_some(),
            structured,
            "{v}"
        );
        assert_eq!(sent[1]["result"]["content"][0]["text"], r#"{"sum":5}"#);
    }
}

#[test]
fn logging_follows_each_era() {
    let mut h = H::handshake("2025-11-25");
    h.req(call(json!(1), "sleep", json!({}), None));
    let id = RequestId::number(1);
    assert!(!h
        .peer
        .log(&id, LogLevel::Info, None, json!("before setLevel")));
    h.one(json!({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}));
    assert!(!h.peer.log(&id, LogLevel::Debug, None, json!("too low")));
    assert!(h.peer.log(&id, LogLevel::Warning, Some("t"), json!("sent")));
    let sent = h.drain().sent;
    assert_eq!(
        sent[0]["params"],
        json!({"level":"warning","logger":"t","data":"sent"})
    );

    let mut h = H::new();
    let mut meta = stateless_meta();
    let mut req = call(json!(1), "sleep", json!({}), None);
    req["params"]["_meta"] = meta.clone();
    h.req(req);
    assert!(!h
        .peer
        .log(&id, LogLevel::Emergency, None, json!("no level asked")));
    meta["io.modelcontextprotocol/logLevel"] = json!("debug");
    let mut req = call(json!(2), "sleep", json!({}), None);
    req["params"]["_meta"] = meta;
    h.req(req);
    assert!(h
        .peer
        .log(&RequestId::number(2), LogLevel::Debug, None, json!("asked")));
}

#[test]
fn content_length_clients_get_content_length_replies() {
    let mut h = H::new();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    h.raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    assert_eq!(h.peer.framing(), Framing::ContentLength);
    let mut dec = FrameDecoder::default();
    h.peer.handle_frame(
        h.now,
        Frame {
            body: body.as_bytes().to_vec(),
            framing: Framing::ContentLength,
        },
    );
    let Some(Effect::Send(bytes)) = h.peer.poll_effect() else {
        panic!()
    };
    assert!(bytes.starts_with(b"Content-Length: "));
    dec.push(&bytes);
    assert_eq!(
        dec.next_frame().unwrap().unwrap().framing,
        Framing::ContentLength
    );
}

#[test]
fn listen_is_acknowledged_and_closed_at_shutdown() {
    let mut h = H::new();
    let r = h.one(json!({"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"_meta":stateless_meta(),"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://r","test://nope"]}}}));
    assert_eq!(r["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        r["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    assert_eq!(
        r["params"]["notifications"],
        json!({"toolsListChanged":true,"resourceSubscriptions":["test://r"]})
    );
    let mut req = call(json!(9), "sleep", json!({}), None);
    req["params"]["_meta"] = stateless_meta();
    assert_eq!(h.req(req).started.len(), 1);
    h.peer.shutdown();
    let out = h.drain();
    assert_eq!(out.sent[0]["id"], "L");
    assert_eq!(out.cancelled, vec![RequestId::number(9)]);
    let r = h.one(json!({"jsonrpc":"2.0","id":10,"method":"ping"}));
    assert_eq!(r["error"]["code"], -32603);
}

#[test]
fn tools_needing_a_client_capability() {
    let mut h = H::new();
    let mut req = call(json!(1), "ask", json!({}), None);
    req["params"]["_meta"] = stateless_meta();
    let r = h.one(req.clone());
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"sampling": {}}})
    );
    req["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"sampling": {}});
    assert_eq!(h.req(req).started.len(), 1);
    // Before 2026-07-28 the code does not exist: a tool error says what is missing.
    let mut h = H::new();
    h.one(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}));
    let r = h.one(call(json!(2), "ask", json!({}), None));
    assert_eq!(r["result"]["isError"], true);
    assert!(r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("`sampling`"));
}

#[test]
fn stateless_resource_reads_carry_caching_hints() {
    let mut h = H::new();
    let out = h.req(json!({"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"test://r","_meta":stateless_meta()}}));
    assert_eq!(out.started.len(), 1);
    h.peer.finish(
        h.now,
        &RequestId::number(1),
        Reply::Value(json!({"contents": []})),
    );
    let sent = h.drain().sent;
    assert_eq!(sent[0]["result"]["cacheScope"], "public");
    assert!(sent[0]["result"]["ttlMs"].is_u64());
    // Tool results are not cacheable.
    let mut req = call(json!(2), "echo", json!({"text": "x"}), None);
    req["params"]["_meta"] = stateless_meta();
    h.req(req);
    h.peer
        .finish_tool(h.now, &RequestId::number(2), CallToolResult::text("x"));
    assert!(h.drain().sent[0]["result"].get("ttlMs").is_none());
}
