//! The runtime over real pipes, against the `everything` example.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::support::{modern_meta, send_signal, Proc};
use serde_json::{json, Value};

#[test]
fn handshake_of_each_legacy_version() {
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut p = Proc::everything();
        let r = p.initialize(v);
        assert_eq!(r["result"]["protocolVersion"], v);
        assert_eq!(r["result"]["serverInfo"]["name"], "stdmcp-everything");
        p.request(json!(1), "tools/list", json!({}));
        let tools = p.response(&json!(1));
        let names: Vec<&str> = tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"echo") && names.contains(&"test_simple_text"),
            "{names:?}"
        );
        p.request(json!(2), "ping", json!({}));
        assert_eq!(p.response(&json!(2))["result"], json!({}));
        let (_, status) = p.finish();
        assert!(status.success());
    }
}

#[test]
fn modern_discover_path() {
    let mut p = Proc::everything();
    p.request(
        json!("d"),
        "server/discover",
        json!({"_meta": modern_meta()}),
    );
    let r = p.response(&json!("d"));
    assert_eq!(r["result"]["resultType"], "complete");
    assert!(r["result"]["supportedVersions"]
        .as_array()
        .unwrap()
        .contains(&json!("2026-07-28")));
    let mut params = json!({"name": "add", "arguments": {"a": 40, "b": 2}});
    params["_meta"] = modern_meta();
    p.request(json!(1), "tools/call", params);
    let r = p.response(&json!(1));
    assert_eq!(r["result"]["structuredContent"], json!({"sum": 42}));
    p.request(json!(2), "ping", json!({"_meta": modern_meta()}));
    assert_eq!(p.response(&json!(2))["error"]["code"], -32601);
    p.finish();
}

#[test]
fn content_length_client_gets_content_length_replies() {
    let mut p = Proc::everything();
    p.use_content_length();
    let r = p.initialize("2025-06-18");
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
    p.call(json!(1), "echo", json!({"text": "framed"}), None);
    assert_eq!(
        p.response(&json!(1))["result"]["content"][0]["text"],
        "framed"
    );
    // The harness accepts either framing; check the raw bytes with a second process.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf 'Content-Length: {}\\r\\n\\r\\n%s' '{body}' | {}",
            body.len(),
            crate::support::everything_bin().display()
        ))
        .output()
        .unwrap();
    let reply = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("Content-Length: {}\r\n\r\n{reply}", reply.len())
    );
    p.finish();
}

#[test]
fn two_hundred_concurrent_sleeps() {
    let mut p = Proc::everything();
    p.initialize("2025-06-18");
    let start = Instant::now();
    for i in 0..200 {
        p.call(json!(i), "sleep", json!({"ms": 1000}), None);
    }
    let mut ids = HashSet::new();
    while ids.len() < 200 {
        let m = p.recv();
        assert_eq!(m["result"]["content"][0]["text"], "slept", "{m}");
        assert!(
            ids.insert(m["id"].as_i64().unwrap()),
            "duplicate response {m}"
        );
    }
    let took = start.elapsed();
    // Sequential would take 200 s; concurrent takes a little over one.
    assert!(
        took < Duration::from_secs(2),
        "200 concurrent 1 s sleeps took {took:?}"
    );
    p.finish();
}

#[test]
fn a_cancelled_call_never_gets_a_response() {
    let mut p = Proc::everything();
    p.initialize("2025-11-25");
    p.call(json!(7), "sleep", json!({"ms": 60_000}), Some(json!("p7")));
    // Wait for a sign of life: the first progress notification.
    p.recv_where("first progress", |m| {
        m["method"] == "notifications/progress"
    });
    p.notify(
        "notifications/cancelled",
        json!({"requestId": 7, "reason": "test"}),
    );
    let begin = Instant::now();
    p.call(json!(8), "echo", json!({"text": "next"}), None);
    assert_eq!(
        p.response(&json!(8))["result"]["content"][0]["text"],
        "next"
    );
    let (rest, status) = p.finish();
    assert!(status.success());
    assert!(
        begin.elapsed() < Duration::from_secs(10),
        "shutdown waited for the cancelled sleep"
    );
    assert!(
        rest.iter().all(|m| m.get("id") != Some(&json!(7))),
        "cancelled request answered: {rest:?}"
    );
    let late_progress = rest
        .iter()
        .filter(|m| m["params"]["progressToken"] == "p7")
        .count();
    assert!(
        late_progress <= 1,
        "progress kept coming after the cancel: {rest:?}"
    );
}

#[test]
fn progress_is_strictly_increasing_and_precedes_the_response() {
    let mut p = Proc::everything();
    p.initialize("2025-06-18");
    p.call(json!(1), "sleep", json!({"ms": 450}), Some(json!(99)));
    let (all, _) = p.finish();
    let pos = all
        .iter()
        .position(|m| m["id"] == json!(1))
        .expect("response");
    let values: Vec<f64> = all
        .iter()
        .filter(|m| m["params"]["progressToken"] == json!(99))
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert!(values.len() >= 3, "{values:?}");
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    let last_progress = all
        .iter()
        .rposition(|m| m["params"]["progressToken"] == json!(99))
        .unwrap();
    assert!(last_progress < pos, "progress after the response");
}

#[test]
fn heartbeats_arrive_for_silent_calls() {
    let mut p = Proc::everything_with(&[("STDMCP_HEARTBEAT_MS", "50")]);
    p.initialize("2025-11-25");
    p.call(
        json!(1),
        "test_tool_with_logging",
        json!({}),
        Some(json!("hb")),
    );
    p.recv_where("a heartbeat", |m| m["params"]["progressToken"] == "hb");
    p.response(&json!(1));
    p.finish();
}

#[test]
fn eof_while_idle_exits_at_once() {
    let mut p = Proc::everything();
    p.initialize("2025-06-18");
    let begin = Instant::now();
    let (rest, status) = p.finish();
    assert!(status.success());
    assert!(rest.is_empty());
    assert!(begin.elapsed() < Duration::from_secs(5));
}

#[test]
fn eof_while_busy_lets_short_calls_finish() {
    let mut p = Proc::everything();
    p.initialize("2025-06-18");
    p.call(json!(1), "sleep", json!({"ms": 200}), None);
    p.call(json!(2), "sleep", json!({"ms": 60_000}), None);
    let (rest, status) = p.finish();
    assert!(status.success());
    assert!(
        rest.iter()
            .any(|m| m["id"] == json!(1) && m["result"]["content"][0]["text"] == "slept"),
        "{rest:?}"
    );
    // The long one was cancelled at the drain deadline: it never answers.
    assert!(rest.iter().all(|m| m["id"] != json!(2)), "{rest:?}");
}

#[test]
fn sigterm_exits_zero_and_sigint_nonzero() {
    for (sig, ok) in [(15, true), (1, true), (2, false)] {
        let mut p = Proc::everything();
        p.initialize("2025-06-18");
        p.call(json!(1), "sleep", json!({"ms": 60_000}), Some(json!(1)));
        p.recv_where("first progress", |m| {
            m["method"] == "notifications/progress"
        });
        send_signal(p.pid(), sig);
        let (_, status) = p.drain_to_exit();
        assert_eq!(status.success(), ok, "signal {sig}: {status:?}");
    }
}

#[test]
fn a_panicking_handler_leaves_the_server_serving() {
    let mut p = Proc::everything();
    p.initialize("2025-06-18");
    p.call(json!(1), "panic", json!({}), None);
    assert_eq!(p.response(&json!(1))["error"]["code"], -32603);
    p.call(json!(2), "echo", json!({"text": "still here"}), None);
    assert_eq!(
        p.response(&json!(2))["result"]["content"][0]["text"],
        "still here"
    );
    p.finish();
}

#[test]
fn garbage_gets_errors_and_the_stream_goes_on() {
    let mut p = Proc::everything();
    p.initialize("2025-06-18");
    p.send_raw(b"this is not json\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"}\n\n\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\r\n");
    let e = p.recv();
    assert_eq!(e["error"]["code"], -32700);
    assert_eq!(p.response(&json!(3))["error"]["code"], -32601);
    assert_eq!(p.response(&json!(4))["result"], json!({}));
    p.call(json!(5), "fail", json!({}), None);
    assert_eq!(p.response(&json!(5))["result"]["isError"], true);
    p.call(json!(6), "echo", json!({"text": 5}), None);
    let r = p.response(&json!(6));
    assert_eq!(r["result"]["isError"], true);
    assert!(r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("expected string"));
    p.finish();
}

#[test]
fn legacy_sampling_round_trip() {
    let mut p = Proc::everything();
    p.initialize("2025-06-18");
    p.call(json!(1), "test_sampling", json!({"prompt": "hi"}), None);
    let req = p.recv_where("a sampling request", |m| {
        m["method"] == "sampling/createMessage"
    });
    assert_eq!(req["params"]["messages"][0]["content"]["text"], "hi");
    let id: Value = req["id"].clone();
    p.send(json!({"jsonrpc": "2.0", "id": id, "result": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}}));
    let r = p.response(&json!(1));
    assert_eq!(r["result"]["content"][0]["text"], "LLM response: hello");
    p.finish();
}

/// A cancel hook that reports progress (as `Ctx::cancel_token` invites) runs without the
/// dispatcher lock: the server goes on answering after the cancel and after a deadline.
#[test]
fn cancel_hooks_may_report_progress() {
    let mut p = Proc::everything();
    p.initialize("2025-06-18");
    p.call(json!(1), "hooked", json!({}), Some(json!("h")));
    p.recv_where("the hooked tool's first progress", |m| {
        m["params"]["progressToken"] == "h"
    });
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    p.request(json!(2), "ping", json!({}));
    assert_eq!(p.response(&json!(2))["result"], json!({}));
    // A deadline fires the token on the timer thread; the hook runs there.
    p.call(json!(3), "hooked_deadline", json!({}), Some(json!("d")));
    let r = p.response(&json!(3));
    assert_eq!(
        r["result"]["content"][0]["text"],
        "cancelled: Some(Deadline), hooks ran: true"
    );
    p.request(json!(4), "ping", json!({}));
    assert_eq!(p.response(&json!(4))["result"], json!({}));
    let (rest, status) = p.finish();
    assert!(status.success());
    assert!(rest.iter().all(|m| m["id"] != json!(1)), "{rest:?}");
}

/// Calls beyond the concurrency limit say in their heartbeats that they are queued, and how
/// many wait before them.
#[test]
fn heartbeats_of_queued_calls_say_so() {
    let mut p = Proc::everything_with(&[
        ("STDMCP_MAX_CONCURRENT_CALLS", "1"),
        ("STDMCP_HEARTBEAT_MS", "50"),
    ]);
    p.initialize("2025-06-18");
    p.call(json!(1), "sleep", json!({"ms": 60_000}), Some(json!("a")));
    p.recv_where("progress of the running call", |m| {
        m["params"]["progressToken"] == "a"
    });
    p.call(json!(2), "echo", json!({"text": "b"}), Some(json!("b")));
    p.call(json!(3), "echo", json!({"text": "c"}), Some(json!("c")));
    let b = p.recv_where("a heartbeat of the first queued call", |m| {
        m["params"]["progressToken"] == "b"
    });
    let b = b["params"]["message"].as_str().unwrap();
    assert!(
        b.starts_with("queued for ") && b.contains("next in line"),
        "{b}"
    );
    let c = p.recv_where("a heartbeat of the second queued call", |m| {
        m["params"]["progressToken"] == "c"
    });
    let c = c["params"]["message"].as_str().unwrap();
    assert!(c.contains("1 call ahead"), "{c}");
    assert!(c.contains("at most 1 call runs at once"), "{c}");
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    assert_eq!(p.response(&json!(2))["result"]["content"][0]["text"], "b");
    assert_eq!(p.response(&json!(3))["result"]["content"][0]["text"], "c");
    p.finish();
}

#[test]
fn a_duplicate_id_in_flight_is_refused_and_the_first_goes_on() {
    let mut p = Proc::everything();
    p.initialize("2025-06-18");
    p.call(json!(7), "sleep", json!({"ms": 300}), None);
    // Valid, invalid arguments, unknown tool: each duplicate is refused before anything else.
    p.call(json!(7), "sleep", json!({"ms": 1}), None);
    p.call(json!(7), "sleep", json!({"ms": "x"}), None);
    p.call(json!(7), "nope", json!({}), None);
    let (all, status) = p.finish();
    assert!(status.success());
    let sevens: Vec<&Value> = all.iter().filter(|m| m["id"] == json!(7)).collect();
    assert_eq!(sevens.len(), 4, "{sevens:?}");
    for dup in &sevens[..3] {
        assert_eq!(dup["error"]["code"], -32600, "{dup}");
    }
    assert_eq!(sevens[3]["result"]["content"][0]["text"], "slept");
}

#[test]
fn errors_quote_a_bounded_part_of_the_input() {
    let mut p = Proc::everything();
    let huge = "m".repeat(10 << 20);
    // Before initialize: an unknown method is -32601, a known one says how to proceed.
    p.request(json!(1), &huge, json!({}));
    let r = p.response(&json!(1));
    assert_eq!(r["error"]["code"], -32601);
    assert!(r.to_string().len() < 1024, "{} bytes", r.to_string().len());
    p.request(json!(2), "nope/nope", json!({}));
    assert_eq!(p.response(&json!(2))["error"]["code"], -32601);
    p.request(json!(3), "tools/list", json!({}));
    assert_eq!(p.response(&json!(3))["error"]["code"], -32602);
    p.initialize("2025-06-18");
    let long_id = json!("i".repeat(1 << 20));
    for (id, method, params) in [
        (json!(4), huge.as_str(), json!({})),
        (json!(5), "tools/call", json!({"name": huge})),
        (json!(6), "tools/list", json!({"cursor": huge})),
        (json!(7), "prompts/get", json!({"name": huge})),
        (json!(8), "resources/read", json!({"uri": huge})),
        (
            json!(9),
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": huge}}),
        ),
        (
            json!(10),
            "tools/call",
            json!({"name": "echo", "arguments": {huge.as_str(): 1, "text": "x"}}),
        ),
    ] {
        p.request(id.clone(), method, params);
        let r = p.response(&id);
        assert!(
            r.to_string().len() < 1024,
            "{id}: {} bytes",
            r.to_string().len()
        );
    }
    p.request(json!(11), "ping", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": huge, "io.modelcontextprotocol/clientCapabilities": {}}}));
    let r = p.response(&json!(11));
    assert!(r.to_string().len() < 1024, "{} bytes", r.to_string().len());
    p.call(long_id.clone(), "sleep", json!({"ms": 200}), None);
    p.call(long_id.clone(), "sleep", json!({"ms": 200}), None);
    let dup = p.recv_where("the duplicate's error", |m| m.get("error").is_some());
    assert!(dup["error"]["message"].as_str().unwrap().len() < 1024);
    p.finish();
}
