//! The timer table driven through `step()` only: the fake clock jumps to `poll_timeout()` and
//! the peer fires what is due, so each timer's time and effect come from the table itself.

use super::jobs::{init, with_jobs};
use super::*;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn progress_message(out: &Out) -> Vec<String> {
    out.sent
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["message"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn heartbeats_come_every_interval_until_the_call_ends() {
    let mut h = H::handshake("2025-11-25");
    let t0 = h.now;
    let out = h.req(call(
        json!(1),
        "echo",
        json!({"text": "x"}),
        Some(json!("p")),
    ));
    assert_eq!(out.started.len(), 1);
    for n in 1..=3 {
        let out = h.step().unwrap();
        assert_eq!(h.now, t0 + secs(5 * n));
        assert_eq!(
            progress_message(&out),
            vec![format!("running for {} s", 5 * n)]
        );
    }
    // Progress the work reports moves the next heartbeat.
    h.now += secs(2);
    assert!(h
        .peer
        .progress(h.now, &RequestId::number(1), 100.0, None, None));
    h.drain();
    h.step().unwrap();
    assert_eq!(h.now, t0 + secs(22));
    h.peer
        .finish_tool(h.now, &RequestId::number(1), CallToolResult::text("ok"));
    assert_eq!(h.drain().sent.len(), 1);
    assert!(h.step().is_none(), "no timer after the call ended");
}

#[test]
fn a_deadline_fires_once_at_its_time_before_the_heartbeat_due_with_it() {
    let mut h = H::handshake("2025-11-25");
    let t0 = h.now;
    h.req(call(json!(1), "sleep", json!({}), Some(json!("p"))));
    for _ in 0..5 {
        let out = h.step().unwrap();
        assert!(out.other.is_empty(), "{out:?}");
    }
    assert_eq!(h.now, t0 + secs(25));
    // At 30 s the deadline and the sixth heartbeat are due: the deadline fires first.
    let out = h.step().unwrap();
    assert_eq!(h.now, t0 + secs(30));
    assert_eq!(out.other, vec![Effect::Deadline(RequestId::number(1))]);
    assert_eq!(progress_message(&out).len(), 1);
    // The call still runs (its tool says how it ended): heartbeats go on, the deadline not.
    let out = h.step().unwrap();
    assert_eq!(h.now, t0 + secs(35));
    assert!(out.other.is_empty(), "{out:?}");
}

#[test]
fn a_parked_call_is_released_when_its_time_is_up_and_a_retry_restarts_heartbeats() {
    let mut h = H::new();
    let t0 = h.now;
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}});
    let ask = |id: i64, extra: Value| {
        let mut params = json!({"name":"echo","arguments":{"text":"x"},"_meta":meta.clone()});
        if let Value::Object(m) = extra {
            params.as_object_mut().unwrap().extend(m);
        }
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
    };
    let question = || InputRequest {
        key: "name".into(),
        method: "elicitation/create".into(),
        params: json!({"message":"name?"}),
    };
    // First call: parked, never retried.
    let out = h.req(ask(1, json!({})));
    let call1 = out.started[0].id.clone();
    let Ok(Asked::Parked(park)) = h.peer.ask(h.now, &call1, vec![question()]) else {
        panic!("not parked")
    };
    h.drain();
    let out = h.step().unwrap();
    assert_eq!(h.now, t0 + DEFAULT_PARK_TTL);
    assert_eq!(out.cancelled, vec![call1.clone()]);
    let released = out.other.iter().any(|e| {
        matches!(e, Effect::Response(r) if r.id == park
            && r.result.as_ref().is_err_and(|e| e.message.contains("did not retry")))
    });
    assert!(released, "{out:?}");
    assert!(h.step().is_none());
    h.peer
        .finish_tool(h.now, &call1, CallToolResult::text("late"));
    assert!(h.drain().sent.is_empty());
    // Second call: parked, then retried with a progress token: heartbeats start from the retry.
    let out = h.req(ask(2, json!({})));
    let call2 = out.started[0].id.clone();
    let r = match h.peer.ask(h.now, &call2, vec![question()]) {
        Ok(Asked::Parked(_)) => h.drain().sent[0].clone(),
        other => panic!("not parked: {other:?}"),
    };
    let t1 = h.now;
    let mut retry_meta = meta.clone();
    retry_meta["progressToken"] = json!("t");
    let extra = json!({
        "inputResponses": {"name": {"action":"accept","content":{"name":"Al"}}},
        "requestState": r["result"]["requestState"],
        "_meta": retry_meta,
    });
    h.now += secs(1);
    h.req(ask(3, extra));
    let out = h.step().unwrap();
    assert_eq!(h.now, t1 + secs(6));
    assert_eq!(out.sent[0]["params"]["progressToken"], "t", "{out:?}");
}

#[test]
fn a_job_is_made_by_its_delay_and_forgotten_after_its_retention() {
    let mut h = with_jobs(Config {
        job_retention: secs(60),
        ..Config::default()
    });
    init(&mut h);
    let t0 = h.now;
    h.req(call(json!(1), "sleep", json!({"ms": 1}), None));
    let out = h.step().unwrap();
    assert_eq!(h.now, t0 + secs(2));
    assert_eq!(out.sent[0]["result"]["_meta"]["stdmcp/job"]["id"], "job-1");
    // A job_wait ends at its own time when the job does not.
    let out = h.req(call(
        json!(2),
        "job_wait",
        json!({"id":"job-1","seconds":3}),
        None,
    ));
    assert!(out.sent.is_empty(), "{out:?}");
    let out = h.step().unwrap();
    assert_eq!(h.now, t0 + secs(5));
    assert_eq!(out.sent[0]["id"], 2);
    h.peer.finish(
        h.now,
        &RequestId::number(1),
        Reply::Tool(CallToolResult::text("slept")),
    );
    h.drain();
    let r = h.one(call(json!(3), "job_wait", json!({"id":"job-1"}), None));
    assert_eq!(r["result"]["content"][0]["text"], "slept", "{r}");
    // Retention: kept until 60 s after it ended, then forgotten.
    assert!(h.step().unwrap().sent.is_empty());
    assert_eq!(h.now, t0 + secs(65));
    let r = h.one(call(json!(4), "job_wait", json!({"id":"job-1"}), None));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(h.step().is_none());
}

#[test]
fn a_job_wait_with_a_token_beats_with_its_jobs_latest_line_until_its_end() {
    let mut h = with_jobs(Config::default());
    init(&mut h);
    h.req(call(json!(1), "sleep", json!({"ms": 1}), None));
    h.step().unwrap();
    let t0 = h.now;
    h.peer
        .set_status(h.now, &RequestId::number(1), "step 3 of 9".into());
    let out = h.req(call(
        json!(2),
        "job_wait",
        json!({"id":"job-1","seconds":12}),
        Some(json!("w")),
    ));
    assert!(out.sent.is_empty(), "{out:?}");
    assert_eq!(h.peer.calls_in_flight(), 2);
    for n in 1..=2 {
        let out = h.step().unwrap();
        assert_eq!(h.now, t0 + secs(5 * n));
        assert_eq!(progress_message(&out), vec!["step 3 of 9".to_owned()]);
        assert_eq!(out.sent[0]["params"]["progress"], json!(5.0 * n as f64));
    }
    let out = h.step().unwrap();
    assert_eq!(h.now, t0 + secs(12));
    assert_eq!(out.sent[0]["id"], 2, "{out:?}");
    assert_eq!(h.peer.calls_in_flight(), 1);
    // A finish for the wait's id is no call's: ignored.
    h.peer
        .finish(h.now, &RequestId::number(2), Reply::Value(json!({})));
    assert!(h.drain().sent.is_empty());
}
