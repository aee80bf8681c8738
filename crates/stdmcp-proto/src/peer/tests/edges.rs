//! Calls waiting for a slot, duplicate ids, unknown methods before the handshake, and
//! bounded quotes of the client's input in errors.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{call, catalog, H};
use crate::jsonrpc::{RequestId, QUOTE_MAX};
use crate::peer::{Config, Effect, Level, Peer, Reply};

/// A server peer after `initialize` whose `max_running` is `max_running`.
pub(super) fn limited(max_running: usize) -> H {
    limited_with(catalog(), max_running)
}

/// An initialized server peer over catalog `c` that runs at most `max_running` calls at once.
pub(super) fn limited_with(c: crate::peer::Catalog, max_running: usize) -> H {
    let config = Config {
        max_running,
        ..Config::default()
    };
    let mut h = H {
        peer: Peer::server(Arc::new(c), config),
        now: Instant::now(),
    };
    h.req(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}));
    h
}

#[test]
fn heartbeats_of_waiting_calls_say_they_are_queued() {
    let mut h = limited(1);
    let t0 = h.now;
    for (id, token) in [(1, "a"), (2, "b"), (3, "c")] {
        let started = h.req(call(json!(id), "sleep", json!({}), Some(json!(token))));
        // Only an admitted call's work starts: the runtime has no queue of its own.
        let ids: Vec<_> = started.started.iter().map(|c| c.id.clone()).collect();
        let expected = if id == 1 {
            vec![RequestId::number(1)]
        } else {
            vec![]
        };
        assert_eq!(ids, expected, "call {id}");
    }
    h.peer.handle_timeout(t0 + Duration::from_secs(5));
    let sent = h.drain().sent;
    let message = |token: &str| {
        sent.iter()
            .find(|m| m["params"]["progressToken"] == token)
            .map(|m| m["params"]["message"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(message("a"), "running for 5 s");
    assert_eq!(
        message("b"),
        "queued for 5 s (next in line; at most 1 call runs at once)"
    );
    assert_eq!(
        message("c"),
        "queued for 5 s (1 call ahead; at most 1 call runs at once)"
    );
    // The running call ends at 7 s: the oldest waiting one starts then.
    let t7 = t0 + Duration::from_secs(7);
    h.peer
        .finish(t7, &RequestId::number(1), Reply::Value(json!({})));
    let started = h.drain().started;
    assert_eq!(started.len(), 1, "{started:?}");
    assert_eq!(started[0].id, RequestId::number(2));
    h.peer.handle_timeout(t0 + Duration::from_secs(10));
    let sent = h.drain().sent;
    assert_eq!(sent.len(), 2, "{sent:?}");
    for m in &sent {
        let (token, text) = (&m["params"]["progressToken"], &m["params"]["message"]);
        if token == "b" {
            assert_eq!(text, "running for 3 s");
            // The value counts from the request, so it keeps increasing.
            assert_eq!(m["params"]["progress"], 10.0);
        } else {
            assert_eq!(
                text,
                "queued for 10 s (next in line; at most 1 call runs at once)"
            );
        }
    }
}

#[test]
fn a_duplicate_id_is_refused_before_anything_else() {
    let mut h = H::handshake("2025-11-25");
    assert_eq!(
        h.req(call(json!(7), "sleep", json!({}), None))
            .started
            .len(),
        1
    );
    for dup in [
        call(json!(7), "sleep", json!({}), None),
        call(json!(7), "sleep", json!({"ms": "x"}), None),
        call(json!(7), "nope", json!({}), None),
        json!({"jsonrpc":"2.0","id":7,"method":"ping"}),
    ] {
        let r = h.one(dup);
        assert_eq!(r["error"]["code"], -32600, "{r}");
    }
    // Once the first is answered, the id is free again.
    h.peer
        .finish(h.now, &RequestId::number(7), Reply::Value(json!({})));
    h.drain();
    assert_eq!(
        h.one(json!({"jsonrpc":"2.0","id":7,"method":"ping"}))["result"],
        json!({})
    );
}

#[test]
fn before_initialize_unknown_methods_are_not_found() {
    let mut h = H::new();
    let r = h.one(json!({"jsonrpc":"2.0","id":1,"method":"nope"}));
    assert_eq!(r["error"]["code"], -32601);
    let r = h.one(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("initialize"));
}

#[test]
fn errors_quote_a_bounded_part_of_the_input() {
    let mut h = H::handshake("2025-11-25");
    let huge = "é".repeat(1 << 20);
    for (method, params) in [
        (huge.as_str(), json!({})),
        ("tools/call", json!({"name": huge})),
        ("tools/list", json!({"cursor": huge})),
        ("prompts/get", json!({"name": huge})),
        (
            "ping",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": huge}}),
        ),
    ] {
        let r = h.one(json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}));
        let text = r.to_string();
        assert!(text.len() < 2 * QUOTE_MAX + 300, "{method}: {}", text.len());
        assert!(text.contains("(2097152 bytes)"), "{text}");
    }
}

#[test]
fn deadlines_are_timers_of_the_peer() {
    let mut h = H::handshake("2025-11-25");
    let t0 = h.now;
    // The test catalog's `sleep` has a 30 s deadline.
    let out = h.req(call(json!(1), "sleep", json!({}), None));
    assert_eq!(out.started[0].deadline, Some(t0 + Duration::from_secs(30)));
    let out = h.req(call(json!(2), "echo", json!({"text": "x"}), None));
    assert_eq!(out.started[0].deadline, None);
    assert_eq!(h.peer.poll_timeout(), Some(t0 + Duration::from_secs(30)));
    h.peer.handle_timeout(t0 + Duration::from_secs(29));
    assert!(h.drain().other.is_empty());
    h.peer.handle_timeout(t0 + Duration::from_secs(30));
    let out = h.drain();
    assert_eq!(out.other, [Effect::Deadline(RequestId::number(1))]);
    assert_eq!(h.peer.poll_timeout(), None, "a deadline fires once");
    // Unlike a cancel, the call is still answered.
    let t31 = t0 + Duration::from_secs(31);
    h.peer
        .finish(t31, &RequestId::number(1), Reply::Value(json!({"done": 1})));
    assert_eq!(h.drain().sent[0]["result"]["done"], 1);
}

#[test]
fn a_queued_call_is_answered_at_its_deadline_as_never_started() {
    let mut h = limited(1);
    let t0 = h.now;
    // `sleep` has a 30 s deadline: call 1 runs, call 2 waits for the one slot.
    h.req(call(json!(1), "sleep", json!({}), None));
    h.now = t0 + Duration::from_secs(10);
    h.req(call(json!(2), "sleep", json!({}), Some(json!("b"))));
    h.now = t0 + Duration::from_secs(20);
    h.req(call(json!(3), "sleep", json!({}), None));
    // Call 1 is still running at 30 s: its work is stopped, it answers itself.
    h.peer.handle_timeout(t0 + Duration::from_secs(30));
    let out = h.drain();
    assert_eq!(out.other, [Effect::Deadline(RequestId::number(1))]);
    assert!(out.sent.iter().all(|m| m.get("id").is_none()), "{out:?}");
    // Call 2 waited all its 30 s: answered at its deadline, its work never started.
    let t40 = t0 + Duration::from_secs(40);
    h.peer.handle_timeout(t40 - Duration::from_millis(1));
    assert!(h.drain().other.is_empty(), "not before its deadline");
    h.peer.handle_timeout(t40);
    let out = h.drain();
    assert_eq!(out.other, [Effect::Unstarted(RequestId::number(2))]);
    assert_eq!(out.sent.len(), 1, "{out:?}");
    let r = &out.sent[0];
    assert_eq!(r["id"], 2);
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "sleep never started: it waited 30 s for a free slot behind 1 running call (at most 1 \
         at once), and its time limit of 30 s counts time spent queued. No process was started. \
         Try again when fewer calls are running."
    );
    // Its late end (if its work ever ran) is ignored; no heartbeat follows.
    h.peer
        .finish(t40, &RequestId::number(2), Reply::Value(json!({})));
    h.peer.handle_timeout(t40 + Duration::from_secs(5));
    assert!(h.drain().sent.is_empty());
    // Call 3 is next in line: it starts when call 1 ends, and is answered by its work.
    let t41 = t0 + Duration::from_secs(41);
    h.peer
        .finish(t41, &RequestId::number(1), Reply::Value(json!({"n": 1})));
    assert_eq!(h.drain().sent[0]["id"], 1);
    h.peer
        .finish(t41, &RequestId::number(3), Reply::Value(json!({"n": 3})));
    assert_eq!(h.drain().sent[0]["result"]["n"], 3);
    assert_eq!(h.peer.calls_in_flight(), 0);
}

#[test]
fn a_queued_call_ends_at_its_deadline_even_when_it_became_a_job() {
    let mut c = catalog();
    c.tool_background = vec![None, None, Some(Duration::from_secs(2)), None];
    c.add_job_tools().unwrap();
    let mut h = limited_with(c, 1);
    let t0 = h.now;
    h.req(call(json!(1), "sleep", json!({}), None));
    h.req(call(json!(2), "sleep", json!({}), None));
    h.peer.handle_timeout(t0 + Duration::from_secs(2));
    let out = h.drain();
    assert_eq!(out.sent.len(), 2, "both became jobs: {out:?}");
    let job2 = out.sent.iter().find(|m| m["id"] == 2).unwrap();
    // The jobs' numbers follow the call table's order.
    let job_id = job2["result"]["_meta"]["stdmcp/job"]["id"]
        .as_str()
        .unwrap();
    let text = job2["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("Tool sleep is waiting for a free slot after 2.0 s (at most 1 call runs at once), so it goes on in the background as job {job_id}")),
        "{text}"
    );
    h.now = t0 + Duration::from_secs(3);
    let list = h.one(call(json!(9), "jobs", json!({}), None));
    let list = list["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        list.contains(&format!(
            "{job_id}  sleep  working  3 s  waiting for a free slot"
        )),
        "{list}"
    );
    assert!(h
        .req(call(json!(3), "job_wait", json!({"id": job_id}), None))
        .sent
        .is_empty());
    // At 30 s job-1 is stopped (it runs) and job-2 ends: it never started.
    h.peer.handle_timeout(t0 + Duration::from_secs(30));
    let out = h.drain();
    assert_eq!(out.other.len(), 2, "{out:?}");
    assert!(out.other.contains(&Effect::Deadline(RequestId::number(1))));
    assert!(out.other.contains(&Effect::Unstarted(RequestId::number(2))));
    assert_eq!(out.sent.len(), 1, "{out:?}");
    let r = &out.sent[0];
    assert_eq!(r["id"], 3, "the job_wait is answered: {r}");
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("sleep never started"), "{text}");
}

/// A server peer whose catalog also has the template `test://t/{id}`.
fn with_template() -> H {
    let mut c = catalog();
    c.resource_templates = vec![crate::mcp::ResourceTemplate {
        uri_template: "test://t/{id}".into(),
        name: "t".into(),
        title: None,
        description: None,
        mime_type: None,
    }];
    H {
        peer: Peer::server(Arc::new(c), Config::default()),
        now: Instant::now(),
    }
}

#[test]
fn a_subscription_to_a_resource_the_server_does_not_have_is_refused() {
    let mut h = with_template();
    h.req(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}));
    let sub = |uri: &str| json!({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":uri}});
    for uri in ["test://r", "test://t/7"] {
        assert_eq!(h.one(sub(uri))["result"], json!({}), "{uri}");
    }
    // MCP 2025-11-25, Resources: Error Handling: -32002, with the URI.
    for uri in ["test://nope", "test://t/", "test://r/x"] {
        let r = h.one(sub(uri));
        assert_eq!(r["error"]["code"], -32002, "{r}");
        assert_eq!(r["error"]["message"], format!("Resource not found: {uri}"));
        assert_eq!(r["error"]["data"]["uri"], uri);
    }
    // Unsubscribing from anything is harmless.
    let r = h.one(json!({"jsonrpc":"2.0","id":2,"method":"resources/unsubscribe","params":{"uri":"test://nope"}}));
    assert_eq!(r["result"], json!({}));
}

#[test]
fn subscribers_are_told_of_updates_to_what_they_subscribed_to_and_no_more() {
    let mut h = with_template();
    // Nothing before a handshake (and 2026-07-28 has no subscriptions).
    assert_eq!(h.peer.resources_updated(|_| true), 0);
    h.req(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}));
    let sub = |id: usize, m: &str, uri: &str| json!({"jsonrpc":"2.0","id":id,"method":m,"params":{"uri":uri}});
    for i in 0..crate::peer::MAX_SUBSCRIPTIONS {
        let r = h.one(sub(i, "resources/subscribe", &format!("test://t/{i}")));
        assert_eq!(r["result"], json!({}), "{r}");
    }
    // One more is refused, saying why; the same again is no new one.
    let r = h.one(sub(5000, "resources/subscribe", "test://t/x"));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most 1024"));
    let r = h.one(sub(5001, "resources/subscribe", "test://t/1"));
    assert_eq!(r["result"], json!({}), "{r}");
    // Updates go to subscribed URIs the server names, once each.
    assert_eq!(
        h.peer.resources_updated(|u| u.starts_with("test://t/1")),
        1 + 10 + 100 + 24
    );
    let out = h.drain();
    assert_eq!(out.sent.len(), 135);
    assert!(out
        .sent
        .iter()
        .all(|m| m["method"] == "notifications/resources/updated"));
    assert!(out.sent.iter().any(|m| m["params"]["uri"] == "test://t/1"));
    let r = h.one(sub(5002, "resources/unsubscribe", "test://t/1"));
    assert_eq!(r["result"], json!({}));
    assert_eq!(h.peer.resources_updated(|u| u == "test://t/1"), 0);
    assert!(h.drain().sent.is_empty());
}

#[test]
fn diagnostics_are_queued_for_the_runtime_at_the_level_asked() {
    let mut h = H::new();
    h.peer = Peer::server(
        Arc::new(catalog()),
        Config {
            diagnostics: Some(Level::Debug),
            ..Config::default()
        },
    );
    h.peer
        .finish(h.now, &RequestId::number(99), Reply::Value(json!({})));
    let d = h.peer.poll_diagnostic().unwrap();
    assert_eq!(d.level, Level::Debug);
    assert_eq!(d.message, "finish for unknown request 99");
    assert_eq!(h.peer.poll_diagnostic(), None);
    // Not wanted: not even formatted.
    let mut h = H::new();
    h.peer
        .finish(h.now, &RequestId::number(99), Reply::Value(json!({})));
    assert_eq!(h.peer.poll_diagnostic(), None);
}

#[test]
fn arguments_checked_before_the_peer_is_handed_the_frame_are_not_validated_again() {
    let mut h = limited(4);
    let frame = |body: Value| {
        let body = body.to_string().into_bytes();
        crate::jsonrpc::parse(&body)
    };
    let bad = frame(call(json!(1), "echo", json!({"text": 5}), None));
    let good = frame(call(json!(2), "echo", json!({"text": "x"}), None));
    let catalog = h.peer.catalog().clone();
    // The verdicts are the peer's own.
    let now = h.now;
    let checks = catalog.check_arguments(bad.as_ref().unwrap());
    h.peer
        .handle_checked(now, crate::framing::Framing::Newline, bad, checks);
    let out = h.drain();
    let text = out.sent[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.starts_with("Invalid arguments for tool echo: "),
        "{text}"
    );
    assert_eq!(out.sent[0]["result"]["isError"], true);
    let checks = catalog.check_arguments(good.as_ref().unwrap());
    h.peer
        .handle_checked(now, crate::framing::Framing::Newline, good, checks);
    assert_eq!(h.drain().started.len(), 1);
    // A verdict given is taken as it is: the peer does not validate under its lock.
    let again = frame(call(json!(3), "echo", json!({"text": 5}), None));
    let checks = catalog
        .check_arguments(&frame(call(json!(3), "echo", json!({"text": "y"}), None)).unwrap());
    h.peer
        .handle_checked(now, crate::framing::Framing::Newline, again, checks);
    assert_eq!(h.drain().started.len(), 1);
}
