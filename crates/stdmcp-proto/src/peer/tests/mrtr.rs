//! Multi-round-trip requests (2026-07-28, Multi Round-Trip Requests), on fake time.

use super::*;

const ELICIT: &str = "elicitation/create";

fn meta_with(caps: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":caps})
}

fn all_caps() -> Value {
    json!({"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}})
}

/// A 2026-07-28 `tools/call` of `echo` with these extra params.
fn stateless_call(id: i64, caps: Value, extra: Value) -> Value {
    let mut params = json!({"name":"echo","arguments":{"text":"x"},"_meta":meta_with(caps)});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            params[k] = v;
        }
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

fn ask(key: &str, method: &str) -> InputRequest {
    InputRequest {
        key: key.into(),
        method: method.into(),
        params: json!({"message":"name?"}),
    }
}

fn accept(name: &str) -> Value {
    json!({"action":"accept","content":{"name":name}})
}

impl H {
    /// Starts a stateless-era call and makes its work ask `requests`; returns the call id, the park
    /// id and the input_required result.
    fn park(&mut self, id: i64, requests: Vec<InputRequest>) -> (RequestId, RequestId, Value) {
        let out = self.req(stateless_call(id, all_caps(), json!({})));
        assert_eq!(out.started.len(), 1, "{out:?}");
        let call = out.started[0].id.clone();
        let asked = self.peer.ask(self.now, &call, requests).unwrap();
        let Asked::Parked(park) = asked else {
            panic!("not parked: {asked:?}")
        };
        let out = self.drain();
        assert_eq!(out.sent.len(), 1, "{out:?}");
        (call, park, out.sent[0].clone())
    }

    fn retry(&mut self, id: i64, state: &Value, responses: Value) -> Out {
        let extra = json!({"inputResponses": responses, "requestState": state});
        self.req(stateless_call(id, all_caps(), extra))
    }
}

fn answers_for(out: &Out, park: &RequestId) -> Result<Value, jsonrpc::ErrorObject> {
    let found = out.other.iter().find_map(|e| match e {
        Effect::Response(r) if r.id == *park => Some(r.result.clone()),
        _ => None,
    });
    found.expect("no answers for the park")
}

#[test]
fn a_parked_call_resumes_on_the_retry_and_answers_it() {
    let mut h = H::new();
    let (call, park, r) = h.park(1, vec![ask("user_name", ELICIT)]);
    assert_eq!(r["id"], 1);
    let res = &r["result"];
    assert_eq!(res["resultType"], "input_required");
    assert_eq!(res["inputRequests"]["user_name"]["method"], ELICIT);
    assert_eq!(
        res["inputRequests"]["user_name"]["params"]["message"],
        "name?"
    );
    assert!(res["requestState"].is_string());
    assert!(res["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
    assert_eq!(h.peer.calls_parked(), 1);
    // The retry (new id) carries the answer plus one nobody asked for.
    let responses = json!({"user_name": accept("Al"), "extra": accept("ignored")});
    let out = h.retry(2, &res["requestState"], responses);
    assert!(out.sent.is_empty() && out.started.is_empty(), "{out:?}");
    let answers = answers_for(&out, &park).unwrap();
    assert_eq!(answers, json!({"user_name": accept("Al")}));
    assert_eq!(h.peer.calls_parked(), 0);
    // The work's result answers the retried request.
    h.peer
        .finish_tool(h.now, &call, CallToolResult::text("Hello, Al!"));
    let out = h.drain();
    assert_eq!(out.sent.len(), 1);
    assert_eq!(out.sent[0]["id"], 2);
    assert_eq!(out.sent[0]["result"]["resultType"], "complete");
    assert_eq!(out.sent[0]["result"]["content"][0]["text"], "Hello, Al!");
}

#[test]
fn tampered_foreign_and_misbound_state_is_refused() {
    let mut h = H::new();
    let (_call, park, r) = h.park(1, vec![ask("k", ELICIT)]);
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let mut tampered = state.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == '0' { '1' } else { '0' });
    let mut other = H {
        peer: Peer::server(
            Arc::new(catalog()),
            Config {
                fill_random: |b| b.fill(7),
                ..Config::default()
            },
        ),
        now: h.now,
    };
    let (_, _, foreign) = other.park(1, vec![ask("k", ELICIT)]);
    for (id, bad) in [
        (2, json!(tampered)),
        (3, json!(format!("{state}-TAMPERED"))),
        (4, foreign["result"]["requestState"].clone()),
        (5, json!("v1.1.1.00")),
    ] {
        let out = h.retry(id, &bad, json!({"k": accept("x")}));
        assert_eq!(out.sent.len(), 1, "{out:?}");
        assert_eq!(out.sent[0]["error"]["code"], -32602, "{bad}");
        let msg = out.sent[0]["error"]["message"].as_str().unwrap();
        assert!(msg.contains("integrity check"), "{msg}");
        assert!(out.other.is_empty() && out.started.is_empty());
    }
    let out = h.retry(6, &json!(17), json!({}));
    assert_eq!(out.sent[0]["error"]["code"], -32602);
    // The state of a tools/call of `echo` does not continue a call of another tool.
    let mut wrong = stateless_call(7, all_caps(), json!({"requestState": state}));
    wrong["params"]["name"] = json!("add");
    let r = h.one(wrong);
    assert_eq!(r["error"]["code"], -32602);
    // The call is still parked: the genuine state still works.
    let out = h.retry(8, &json!(state), json!({"k": accept("x")}));
    assert!(answers_for(&out, &park).is_ok());
}

#[test]
fn missing_responses_are_asked_again_in_a_new_round() {
    let mut h = H::new();
    let asks = vec![ask("a", ELICIT), ask("b", "sampling/createMessage")];
    let (call, park, r) = h.park(1, asks);
    let first = r["result"]["requestState"].clone();
    let out = h.retry(2, &first, json!({"a": accept("A")}));
    assert_eq!(out.sent.len(), 1, "{out:?}");
    let again = &out.sent[0];
    assert_eq!(again["id"], 2);
    assert_eq!(again["result"]["resultType"], "input_required");
    let keys: Vec<&String> = again["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["b"]);
    let second = again["result"]["requestState"].clone();
    assert_ne!(first, second);
    // The state of the earlier round is spent.
    let out = h.retry(3, &first, json!({"b": {"role":"assistant"}}));
    assert_eq!(out.sent[0]["error"]["code"], -32602);
    let out = h.retry(4, &second, json!({"b": {"role":"assistant"}}));
    let answers = answers_for(&out, &park).unwrap();
    assert_eq!(
        answers,
        json!({"a": accept("A"), "b": {"role":"assistant"}})
    );
    h.peer
        .finish_tool(h.now, &call, CallToolResult::text("done"));
    assert_eq!(h.drain().sent[0]["id"], 4);
}

#[test]
fn an_abandoned_call_is_released_after_the_park_time() {
    let mut h = H::new();
    let (call, park, r) = h.park(1, vec![ask("k", ELICIT)]);
    let expiry = h.now + DEFAULT_PARK_TTL;
    assert_eq!(h.peer.poll_timeout(), Some(expiry));
    h.now += DEFAULT_PARK_TTL - Duration::from_millis(1);
    h.peer.handle_timeout(h.now);
    assert!(h.drain().other.is_empty());
    h.now += Duration::from_millis(1);
    h.peer.handle_timeout(h.now);
    let out = h.drain();
    let e = answers_for(&out, &park).unwrap_err();
    assert!(
        e.message.contains("did not retry within 300 s"),
        "{}",
        e.message
    );
    assert_eq!(out.cancelled, vec![call.clone()]);
    assert_eq!(h.peer.calls_parked(), 0);
    assert_eq!(h.peer.poll_timeout(), None);
    // The work's result goes nowhere; a late retry is told the call is gone.
    h.peer
        .finish_tool(h.now, &call, CallToolResult::text("late"));
    assert!(h.drain().sent.is_empty());
    let out = h.retry(2, &r["result"]["requestState"], json!({"k": accept("x")}));
    let msg = out.sent[0]["error"]["message"].as_str().unwrap();
    assert!(msg.contains("no longer waits"), "{msg}");
}

#[test]
fn only_declared_capabilities_are_asked_and_errors_say_which() {
    let mut h = H::new();
    // Declares sampling only: elicitation is refused with a message that says so.
    let out = h.req(stateless_call(1, json!({"sampling":{}}), json!({})));
    let call = out.started[0].id.clone();
    let e = h
        .peer
        .ask(h.now, &call, vec![ask("k", ELICIT)])
        .unwrap_err();
    assert_eq!(e.code, jsonrpc::ErrorCode::MISSING_CLIENT_CAPABILITY);
    assert!(e.message.contains("does not declare"), "{}", e.message);
    assert!(h.drain().sent.is_empty());
    // Declares it (with form and url): asked, never that message.
    let caps = json!({"elicitation":{"form":{},"url":{}}});
    let out = h.req(stateless_call(2, caps, json!({})));
    let call = out.started[0].id.clone();
    let asked = h.peer.ask(h.now, &call, vec![ask("k", ELICIT)]).unwrap();
    assert!(matches!(asked, Asked::Parked(_)));
    let r = &h.drain().sent[0];
    assert_eq!(r["result"]["resultType"], "input_required");
    // A retry that no longer declares it while the answer is missing: the work learns so.
    let Asked::Parked(park) = asked else {
        unreachable!()
    };
    let extra = json!({"requestState": r["result"]["requestState"], "inputResponses": {}});
    let out = h.req(stateless_call(3, json!({}), extra));
    let e = answers_for(&out, &park).unwrap_err();
    assert_eq!(e.code, jsonrpc::ErrorCode::MISSING_CLIENT_CAPABILITY);
}

#[test]
fn answers_a_fresh_request_carries_are_taken_without_asking() {
    let mut h = H::new();
    let extra = json!({"inputResponses": {"user_name": accept("Al"), "other": {}}});
    let out = h.req(stateless_call(1, all_caps(), extra));
    let call = out.started[0].id.clone();
    let asked = h
        .peer
        .ask(h.now, &call, vec![ask("user_name", ELICIT)])
        .unwrap();
    assert_eq!(
        asked,
        Asked::Answered(
            json!({"user_name": accept("Al")})
                .as_object()
                .unwrap()
                .clone()
        )
    );
    assert!(h.drain().sent.is_empty());
    // Automatic keys are numbered per call.
    let auto = InputRequest {
        key: String::new(),
        ..ask("", ELICIT)
    };
    h.peer.ask(h.now, &call, vec![auto]).unwrap();
    let r = &h.drain().sent[0];
    assert!(
        r["result"]["inputRequests"]["elicitation-1"].is_object(),
        "{r}"
    );
    // Malformed inputResponses are refused before any work starts.
    for bad in [json!(null), json!(5), json!({"user_name": 12345})] {
        let out = h.req(stateless_call(
            9,
            all_caps(),
            json!({"inputResponses": bad}),
        ));
        assert_eq!(out.sent[0]["error"]["code"], -32602, "{bad}");
        assert!(out.started.is_empty());
    }
}

#[test]
fn nothing_leaks_into_other_methods_or_the_handshake_era() {
    let mut h = H::handshake("2025-11-25");
    let out = h.req(call(json!(1), "echo", json!({"text":"x"}), None));
    let call_id = out.started[0].id.clone();
    let e = h
        .peer
        .ask(h.now, &call_id, vec![ask("k", ELICIT)])
        .unwrap_err();
    assert_eq!(e.code, jsonrpc::ErrorCode::INTERNAL_ERROR);
    // requestState in the handshake era is just an unknown param.
    let mut c = call(json!(2), "echo", json!({"text":"x"}), None);
    c["params"]["requestState"] = json!("v1.1.1.00");
    assert_eq!(h.req(c).started.len(), 1);
    // 2026-07-28 lists ignore them; completion/complete cannot ask.
    let mut h = H::new();
    let list = json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":meta_with(all_caps()),"requestState":"x","inputResponses":5}});
    assert_eq!(h.one(list)["result"]["resultType"], "complete");
    let complete = json!({"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"_meta":meta_with(all_caps()),"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"x","value":""}}});
    let out = h.req(complete);
    let id = out.started[0].id.clone();
    assert!(h.peer.ask(h.now, &id, vec![ask("k", ELICIT)]).is_err());
}

#[test]
fn parked_calls_are_bounded_and_released_when_the_server_closes() {
    let config = Config {
        max_parked: 1,
        ..Config::default()
    };
    let mut h = H {
        peer: Peer::server(Arc::new(catalog()), config),
        now: Instant::now(),
    };
    let (call, _, _) = h.park(1, vec![ask("k", ELICIT)]);
    let out = h.req(stateless_call(2, all_caps(), json!({})));
    let second = out.started[0].id.clone();
    let e = h
        .peer
        .ask(h.now, &second, vec![ask("k", ELICIT)])
        .unwrap_err();
    assert!(e.message.contains("limit 1"), "{}", e.message);
    h.peer.close();
    assert_eq!(h.drain().cancelled, vec![call]);
}

#[test]
fn a_retried_request_can_be_cancelled_by_its_own_id() {
    let mut h = H::new();
    let (call, _, r) = h.park(1, vec![ask("k", ELICIT)]);
    let out = h.retry(2, &r["result"]["requestState"], json!({"k": accept("x")}));
    assert!(out.sent.is_empty());
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}});
    assert_eq!(h.req(cancel.clone()).cancelled, vec![call.clone()]);
    assert!(h.req(cancel).cancelled.is_empty());
    h.peer
        .finish_tool(h.now, &call, CallToolResult::text("late"));
    assert!(h.drain().sent.is_empty());
}

#[test]
fn handshake_only_sends_clients_back_to_initialize() {
    let config = Config {
        handshake_only: true,
        ..Config::default()
    };
    let mut h = H {
        peer: Peer::server(Arc::new(catalog()), config),
        now: Instant::now(),
    };
    let discover = json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":meta_with(json!({}))}});
    assert_eq!(h.one(discover)["error"]["code"], -32601);
    let r = h.one(stateless_call(2, all_caps(), json!({})));
    assert_eq!(r["error"]["code"], -32022);
    let supported = r["error"]["data"]["supported"].as_array().unwrap();
    assert!(supported.contains(&json!("2025-11-25")));
    assert!(!supported.contains(&json!("2026-07-28")));
    let init = json!({"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}});
    assert_eq!(h.one(init)["result"]["protocolVersion"], "2025-11-25");
    // In the connection, a request that also names 2026-07-28 is a connection request.
    assert_eq!(
        h.req(stateless_call(4, all_caps(), json!({})))
            .started
            .len(),
        1
    );
}

#[test]
fn a_call_whose_work_stops_waiting_is_never_answered_twice() {
    let mut h = H::new();
    let (call, park, r) = h.park(1, vec![ask("k", ELICIT)]);
    // A second ask while parked (another thread of the same work) is refused.
    let e = h
        .peer
        .ask(h.now, &call, vec![ask("j", ELICIT)])
        .unwrap_err();
    assert!(e.message.contains("already waits"), "{}", e.message);
    assert!(h.drain().sent.is_empty());
    // The work's deadline passed while it waited: it lets go of the park and ends.
    h.peer.release_park(&park);
    h.peer.finish_tool(
        h.now,
        &call,
        CallToolResult::error("the call's deadline passed"),
    );
    assert!(h.drain().sent.is_empty());
    let out = h.retry(2, &r["result"]["requestState"], json!({"k": accept("x")}));
    assert_eq!(out.sent[0]["error"]["code"], -32602);
}
