#![allow(clippy::unwrap_used)]
//! Peer tests with fake time: frames in, effects out, nothing else.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;
use crate::mcp::{Implementation, Prompt, Resource, Tool};

mod admission;
mod client;
mod edges;
mod jobs;
mod mrtr;
mod slots;
mod timers;
use super::timers::{Kind, Subject};
use crate::framing::FrameDecoder;
use crate::mcp::{LogLevel, PromptArgument, ToolAnnotations};
use std::collections::HashMap;

pub(super) fn catalog() -> Catalog {
    let tool = |name: &str, schema: Value| Tool {
        name: name.into(),
        title: Some(format!("The {name} tool")),
        description: Some(format!("{name} things")),
        input_schema: schema,
        output_schema: None,
        annotations: Some(ToolAnnotations {
            read_only_hint: Some(true),
            ..Default::default()
        }),
        icons: None,
        meta: None,
    };
    let mut add = tool(
        "add",
        json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}),
    );
    add.output_schema = Some(json!({"type":"object","properties":{"sum":{"type":"integer"}}}));
    let mut info = Implementation::new("test-server", "1.0");
    info.title = Some("Test".into());
    Catalog {
        server_info: info,
        instructions: Some("be nice".into()),
        tools: vec![
            tool(
                "echo",
                json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
            ),
            add,
            tool(
                "sleep",
                json!({"type":"object","properties":{"ms":{"type":"integer","minimum":0}}}),
            ),
            tool("ask", json!({"type":"object"})),
        ],
        tool_requirements: vec![vec![], vec![], vec![], vec!["sampling".into()]],
        tool_timeouts: vec![
            None,
            None,
            Some(Timeout::Fixed(Duration::from_secs(30))),
            None,
        ],
        tool_background: vec![],
        tool_slots: vec![],
        job_tools: None,
        prompts: vec![Prompt {
            name: "p".into(),
            title: None,
            description: Some("a prompt".into()),
            arguments: Some(vec![PromptArgument {
                name: "x".into(),
                title: None,
                description: None,
                required: Some(true),
            }]),
            icons: None,
        }],
        resources: vec![Resource {
            uri: "test://r".into(),
            name: "r".into(),
            title: None,
            description: None,
            mime_type: Some("text/plain".into()),
        }],
        resource_templates: vec![],
    }
}

/// A server peer, a fake clock and a decoder for what it sends.
struct H {
    peer: Peer,
    now: Instant,
}

#[derive(Debug, Default)]
struct Out {
    sent: Vec<Value>,
    started: Vec<CallStart>,
    cancelled: Vec<RequestId>,
    other: Vec<Effect>,
}

impl H {
    fn new() -> H {
        H {
            peer: Peer::server(Arc::new(catalog()), Config::default()),
            now: Instant::now(),
        }
    }

    fn handshake(version: &str) -> H {
        let mut h = H::new();
        let out = h.req(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":version,"capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"0"}}}));
        assert_eq!(out.sent.len(), 1);
        h.req(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        h
    }

    fn raw(&mut self, bytes: &[u8]) -> Out {
        let mut dec = FrameDecoder::default();
        dec.push(bytes);
        while let Some(f) = dec.next_frame() {
            match f {
                Ok(frame) => self.peer.handle_frame(self.now, frame),
                Err(e) => self.peer.handle_frame_error(&e),
            }
        }
        if let Some(Ok(frame)) = dec.finish() {
            self.peer.handle_frame(self.now, frame);
        }
        self.drain()
    }

    fn req(&mut self, v: Value) -> Out {
        self.raw(format!("{v}\n").as_bytes())
    }

    fn drain(&mut self) -> Out {
        check_timers(&self.peer);
        let mut out = Out::default();
        while let Some(e) = self.peer.poll_effect() {
            match e {
                Effect::Send(bytes) | Effect::Progress { bytes, .. } => {
                    let mut dec = FrameDecoder::default();
                    dec.push(&bytes);
                    while let Some(f) = dec.next_frame() {
                        out.sent
                            .push(serde_json::from_slice(&f.unwrap().body).unwrap());
                    }
                }
                Effect::Start(c) => out.started.push(c),
                Effect::Cancel(id) => out.cancelled.push(id),
                other => out.other.push(other),
            }
        }
        out
    }

    /// Advances the fake clock to the peer's next timeout and fires it (quinn-proto's
    /// `step`): the timer table decides what happens, and when. `None` when no timer is set.
    fn step(&mut self) -> Option<Out> {
        let next = self.peer.poll_timeout()?;
        self.now = self.now.max(next);
        self.peer.handle_timeout(self.now);
        Some(self.drain())
    }

    fn one(&mut self, v: Value) -> Value {
        let out = self.req(v);
        assert_eq!(out.sent.len(), 1, "{out:?}");
        out.sent.into_iter().next().unwrap()
    }
}

fn stateless_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}})
}

fn call(id: Value, tool: &str, args: Value, token: Option<Value>) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(t) = token {
        params["_meta"] = json!({"progressToken": t});
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

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

/// The timers the records call for, found by scanning them (as `poll_timeout` did before
/// the timer table): tests check that the table holds exactly these.
fn timers_by_scan(peer: &Peer) -> HashMap<(Kind, Subject), Instant> {
    let mut all = HashMap::new();
    for (id, c) in peer.calls.iter() {
        let call = || Subject::Call(id.clone());
        let background = c.background_at.filter(|_| c.may_background());
        let heartbeat = c
            .live_token()
            .and(c.last_report.checked_add(peer.config.heartbeat));
        for (kind, when) in [
            (Kind::Deadline, c.deadline),
            (Kind::Background, background),
            (Kind::Heartbeat, heartbeat),
        ] {
            if let Some(when) = when {
                all.insert((kind, call()), when);
            }
        }
    }
    for (id, w) in peer.jobs.waits.iter() {
        all.insert((Kind::WaitEnd, Subject::Call(id.clone())), w.until);
        if let Some(when) = w.next_heartbeat(peer.config.heartbeat) {
            all.insert((Kind::Heartbeat, Subject::Call(id.clone())), when);
        }
    }
    for (park, expires) in peer.park_expiries() {
        all.insert((Kind::ParkExpiry, Subject::Park(park)), expires);
    }
    for job in peer.jobs.iter() {
        if let Some(end) = job
            .ended
            .and_then(|e| e.checked_add(peer.config.job_retention))
        {
            all.insert((Kind::JobRetention, Subject::Job(job.id.clone())), end);
        }
    }
    all
}

/// Panics unless the timer table holds exactly the timers the records call for.
pub(super) fn check_timers(peer: &Peer) {
    assert_eq!(
        peer.timers.entries(),
        timers_by_scan(peer),
        "timer table out of line"
    );
}
