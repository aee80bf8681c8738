//! Asking the client in both eras, over real pipes against the `everything` example:
//! multi-round-trip results at 2026-07-28 (2026-07-28, Multi Round-Trip Requests), server ->
//! client requests in the handshake era (`stdmcp serve --era legacy` is tested with the
//! command's).
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use crate::support::{modern_meta_with, Proc};
use serde_json::{json, Value};

fn all_caps() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}})
}

fn call(p: &mut Proc, id: i64, tool: &str, args: Value, extra: Value) -> Value {
    let mut params =
        json!({"name": tool, "arguments": args, "_meta": modern_meta_with(all_caps())});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            params[k] = v;
        }
    }
    p.request(json!(id), "tools/call", params);
    p.response(&json!(id))
}

/// The answer a client gives to an input request.
fn answer(method: &str) -> Value {
    match method {
        "elicitation/create" => {
            json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.org"}})
        }
        "sampling/createMessage" => {
            json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"})
        }
        "roots/list" => json!({"roots": [{"uri": "file:///work/project", "name": "project"}]}),
        other => panic!("unexpected input request {other}"),
    }
}

/// Calls `test_elicitation` (id 1) declaring every capability: it must ask.
fn elicit_first_round(p: &mut Proc) {
    let r = call(p, 1, "test_elicitation", json!({"message": "m"}), json!({}));
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
}

#[test]
fn elicitation_sampling_and_roots_tools_answer_in_two_round_trips() {
    let mut p = Proc::everything();
    let cases = [
        (
            "test_elicitation",
            json!({"message": "Who are you?"}),
            "elicitation/create",
            "ada@example.org",
        ),
        (
            "test_sampling",
            json!({"prompt": "Capital of France?"}),
            "sampling/createMessage",
            "LLM response: Paris",
        ),
        (
            "test_roots",
            json!({}),
            "roots/list",
            "file:///work/project",
        ),
    ];
    let mut id = 1;
    for (tool, args, method, expected) in cases {
        let first = call(&mut p, id, tool, args.clone(), json!({}));
        let res = &first["result"];
        assert_eq!(res["resultType"], "input_required", "{tool}: {first}");
        let requests = res["inputRequests"].as_object().unwrap();
        assert_eq!(requests.len(), 1, "{first}");
        let (key, request) = requests.iter().next().unwrap();
        assert_eq!(request["method"], method);
        let responses = json!({ key.as_str(): answer(method) });
        let extra = json!({"inputResponses": responses, "requestState": res["requestState"]});
        let second = call(&mut p, id + 1, tool, args, extra);
        assert_eq!(
            second["result"]["resultType"], "complete",
            "{tool}: {second}"
        );
        let text = second["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(expected), "{tool}: {text}");
        id += 2;
    }
    let (rest, status) = p.finish();
    assert!(status.success());
    // 2026-07-28 servers send no requests: nothing but the responses above went out.
    assert!(rest.iter().all(|m| m.get("method").is_none()), "{rest:?}");
}

#[test]
fn a_declared_capability_is_never_reported_missing_and_a_missing_one_is() {
    let mut p = Proc::everything();
    // The reproducer of the issue: elicitation declared with form and url.
    elicit_first_round(&mut p);
    // Declared without elicitation: the error says the request does not declare it.
    let params = json!({"name": "test_elicitation", "arguments": {"message": "m"},
                        "_meta": modern_meta_with(json!({"sampling": {}}))});
    p.request(json!(2), "tools/call", params);
    let r = p.response(&json!(2));
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("does not declare"));
    // A tool that adapts: only what the request declares is asked.
    let params = json!({"name": "test_input_required_result_capabilities", "arguments": {},
                        "_meta": modern_meta_with(json!({"sampling": {}}))});
    p.request(json!(3), "tools/call", params);
    let r = p.response(&json!(3));
    let methods: Vec<&Value> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| &v["method"])
        .collect();
    assert_eq!(methods, [&json!("sampling/createMessage")]);
}

#[test]
fn several_rounds_tampered_state_and_a_prompt() {
    let mut p = Proc::everything();
    let tool = "test_input_required_result_multi_round";
    let r1 = call(&mut p, 1, tool, json!({}), json!({}));
    let s1 = r1["result"]["requestState"].clone();
    let step1 = json!({"step1": {"action": "accept", "content": {"name": "Ada"}}});
    let r2 = call(
        &mut p,
        2,
        tool,
        json!({}),
        json!({"inputResponses": step1, "requestState": s1}),
    );
    assert!(r2["result"]["inputRequests"]["step2"].is_object(), "{r2}");
    let s2 = r2["result"]["requestState"].as_str().unwrap().to_owned();
    let step2 = json!({"step2": {"action": "accept", "content": {"color": "blue"}}});
    let bad = json!({"inputResponses": step2, "requestState": format!("{s2}-TAMPERED")});
    let r = call(&mut p, 3, tool, json!({}), bad);
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r3 = call(
        &mut p,
        4,
        tool,
        json!({}),
        json!({"inputResponses": step2, "requestState": s2}),
    );
    let text = r3["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Ada") && text.contains("blue"), "{text}");
    // prompts/get asks too.
    let params =
        json!({"name": "test_input_required_result_prompt", "_meta": modern_meta_with(all_caps())});
    p.request(json!(5), "prompts/get", params.clone());
    let r = p.response(&json!(5));
    let mut retry = params;
    retry["inputResponses"] =
        json!({"user_context": {"action": "accept", "content": {"context": "proofs"}}});
    retry["requestState"] = r["result"]["requestState"].clone();
    p.request(json!(6), "prompts/get", retry);
    let r = p.response(&json!(6));
    let text = r["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("proofs"), "{r}");
}

#[test]
fn a_parked_call_ends_with_the_session_and_is_never_answered_again() {
    let mut p = Proc::everything();
    elicit_first_round(&mut p);
    let (rest, status) = p.finish();
    assert!(status.success());
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn the_handshake_era_still_sends_requests() {
    let mut p = Proc::everything();
    p.request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25",
        "capabilities": {"roots": {}}, "clientInfo": {"name": "tests", "version": "0"}}),
    );
    p.response(&json!(0));
    p.notify("notifications/initialized", json!({}));
    p.call(json!(1), "test_roots", json!({}), None);
    let req = p.recv_where("roots/list", |m| m["method"] == "roots/list");
    p.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": answer("roots/list")}));
    let r = p.response(&json!(1));
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("file:///work/project"), "{r}");
    assert!(r["result"].get("resultType").is_none());
}

#[test]
fn an_abandoned_call_is_released_after_the_input_wait() {
    let mut p =
        Proc::everything_with(&[("STDMCP_INPUT_WAIT_MS", "50"), ("RUST_LOG", "stdmcp=info")]);
    p.request(
        json!(1),
        "tools/call",
        json!({"name": "test_elicitation",
        "arguments": {"message": "m"}, "_meta": modern_meta_with(all_caps())}),
    );
    let r = p.response(&json!(1));
    let state = r["result"]["requestState"].clone();
    // Wait for the release (logged on stderr); the deadline only detects a failure.
    let deadline = std::time::Instant::now() + crate::support::PATIENCE;
    while !p
        .stderr
        .lock()
        .unwrap()
        .contains("the client did not retry in time")
    {
        assert!(std::time::Instant::now() < deadline, "never released");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let extra = json!({"inputResponses": {"elicitation-1": answer("elicitation/create")},
                       "requestState": state});
    let r = call(
        &mut p,
        2,
        "test_elicitation",
        json!({"message": "m"}),
        extra,
    );
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("no longer waits"), "{r}");
    let (rest, status) = p.finish();
    assert!(status.success());
    assert!(rest.is_empty(), "{rest:?}");
}
