//! Jobs and tasks in the sans-IO peer: the background delay is a peer timer, the job
//! answer, `job_wait` held by the peer, cancels, expiry.

use super::*;
use crate::peer::Reply;

/// The test catalog with `sleep` (index 2) becoming a job after 2 s, and the job tools.
pub(super) fn with_jobs(config: Config) -> H {
    let mut c = catalog();
    c.tool_background = vec![None, None, Some(Duration::from_secs(2)), None];
    c.add_job_tools().unwrap();
    H {
        peer: Peer::server(Arc::new(c), config),
        now: Instant::now(),
    }
}

pub(super) fn init(h: &mut H) {
    let out = h.req(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}));
    assert_eq!(out.sent.len(), 1);
    h.req(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
}

/// `sleep` as request 1, turned into job-1 by its delay.
fn start_job(h: &mut H) {
    init(h);
    h.req(call(json!(1), "sleep", json!({"ms": 1}), None));
    h.now += Duration::from_secs(2);
    h.peer.handle_timeout(h.now);
    h.drain();
}

fn finish_sleep(h: &mut H, id: Value, text: &str) -> Out {
    let id = RequestId::from_value(&id).unwrap();
    h.peer
        .finish(h.now, &id, Reply::Tool(CallToolResult::text(text)));
    h.drain()
}

#[test]
fn the_background_delay_is_a_peer_timer() {
    let mut h = with_jobs(Config::default());
    init(&mut h);
    let out = h.req(call(json!(1), "sleep", json!({"ms": 1}), None));
    assert_eq!(out.started.len(), 1);
    assert!(out.sent.is_empty());
    let due = h.now + Duration::from_secs(2);
    assert_eq!(h.peer.poll_timeout(), Some(due));
    // Not yet: nothing happens a moment before.
    h.peer.handle_timeout(due - Duration::from_millis(1));
    assert!(h.drain().sent.is_empty());
    h.now = due;
    h.peer.handle_timeout(due);
    let out = h.drain();
    assert_eq!(out.sent.len(), 1, "{out:?}");
    let r = &out.sent[0];
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["_meta"]["stdmcp/job"]["id"], "job-1", "{r}");
    assert!(out.cancelled.is_empty());
    // The work goes on: its end is not sent to request 1 again; job_wait gets it.
    assert!(finish_sleep(&mut h, json!(1), "slept").sent.is_empty());
    let r = h.one(call(json!(2), "job_wait", json!({"id": "job-1"}), None));
    assert_eq!(r["result"]["content"][0]["text"], "slept", "{r}");
}

#[test]
fn a_call_that_ends_in_time_is_answered_as_usual() {
    let mut h = with_jobs(Config::default());
    init(&mut h);
    h.req(call(json!(1), "sleep", json!({"ms": 1}), None));
    let out = finish_sleep(&mut h, json!(1), "slept");
    assert_eq!(out.sent[0]["result"]["content"][0]["text"], "slept");
    assert_eq!(h.peer.poll_timeout(), None, "no timer left");
}

#[test]
fn job_wait_is_held_by_the_peer_and_answered_when_the_job_ends_or_its_time_is_up() {
    let mut h = with_jobs(Config::default());
    start_job(&mut h);
    let out = h.req(call(
        json!(2),
        "job_wait",
        json!({"id": "job-1", "seconds": 5}),
        None,
    ));
    assert!(out.sent.is_empty() && out.started.is_empty(), "{out:?}");
    // Its time is up first: the job's state.
    h.now += Duration::from_secs(5);
    assert_eq!(h.peer.poll_timeout(), Some(h.now));
    h.peer.handle_timeout(h.now);
    let r = h.drain().sent.remove(0);
    assert_eq!(r["id"], 2);
    assert_eq!(
        r["result"]["_meta"]["stdmcp/job"]["state"], "working",
        "{r}"
    );
    // The next wait is answered by the job's end.
    assert!(h
        .req(call(json!(3), "job_wait", json!({"id": "job-1"}), None))
        .sent
        .is_empty());
    let out = finish_sleep(&mut h, json!(1), "slept");
    assert_eq!(out.sent.len(), 1, "{out:?}");
    assert_eq!(out.sent[0]["id"], 3);
    assert_eq!(out.sent[0]["result"]["content"][0]["text"], "slept");
}

#[test]
fn cancels_reach_a_job_only_through_job_cancel() {
    let mut h = with_jobs(Config::default());
    start_job(&mut h);
    let out =
        h.req(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}));
    assert!(
        out.cancelled.is_empty(),
        "the answered request's cancel stopped the job"
    );
    assert!(h
        .req(call(json!(2), "job_wait", json!({"id": "job-1"}), None))
        .sent
        .is_empty());
    let out =
        h.req(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}));
    assert!(out.cancelled.is_empty() && out.sent.is_empty(), "{out:?}");
    let out = h.req(call(json!(3), "job_cancel", json!({"id": "job-1"}), None));
    assert_eq!(
        out.cancelled,
        vec![RequestId::from_value(&json!(1)).unwrap()]
    );
    assert_eq!(out.sent.len(), 1, "{out:?}");
    // The cancelled job's late result is dropped.
    assert!(finish_sleep(&mut h, json!(1), "slept").sent.is_empty());
    let r = h.one(call(json!(4), "job_wait", json!({"id": "job-1"}), None));
    assert_eq!(r["result"]["isError"], true, "{r}");
}

#[test]
fn ended_jobs_expire_after_the_retention_time() {
    let config = Config {
        job_retention: Duration::from_secs(60),
        ..Config::default()
    };
    let mut h = with_jobs(config);
    start_job(&mut h);
    finish_sleep(&mut h, json!(1), "slept");
    assert_eq!(h.peer.poll_timeout(), Some(h.now + Duration::from_secs(60)));
    h.now += Duration::from_secs(59);
    let r = h.one(call(json!(2), "job_wait", json!({"id": "job-1"}), None));
    assert_eq!(
        r["result"]["content"][0]["text"], "slept",
        "kept until it expires"
    );
    h.now += Duration::from_secs(1);
    h.peer.handle_timeout(h.now);
    let r = h.one(call(json!(3), "job_wait", json!({"id": "job-1"}), None));
    assert_eq!(r["result"]["isError"], true, "{r}");
}

#[test]
fn a_task_only_for_a_request_declaring_the_extension() {
    let mut h = with_jobs(Config::default());
    let meta = |tasks: bool| {
        let caps = if tasks {
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        } else {
            json!({})
        };
        json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":caps})
    };
    for (id, tasks) in [(1, true), (2, false)] {
        h.req(json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1},"_meta":meta(tasks)}}));
    }
    h.now += Duration::from_secs(2);
    h.peer.handle_timeout(h.now);
    let mut sent = h.drain().sent;
    sent.sort_by_key(|r| r["id"].as_i64());
    assert_eq!(sent[0]["result"]["resultType"], "task", "{sent:?}");
    assert_eq!(sent[0]["result"]["status"], "working");
    assert_eq!(sent[1]["result"]["resultType"], "complete", "{sent:?}");
    assert!(sent[1]["result"].get("taskId").is_none());
    let task = sent[0]["result"]["taskId"].clone();
    finish_sleep(&mut h, json!(1), "slept");
    let r = h.one(json!({"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":task,"_meta":meta(true)}}));
    assert_eq!(r["result"]["status"], "completed", "{r}");
    assert_eq!(r["result"]["result"]["content"][0]["text"], "slept");
    let r = h.one(json!({"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":task,"_meta":meta(false)}}));
    assert_eq!(r["error"]["code"], -32021, "{r}");
}

#[test]
fn nothing_more_is_sent_for_the_answered_request() {
    let mut h = with_jobs(Config::default());
    init(&mut h);
    h.req(json!({"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"debug"}}));
    h.req(call(json!(1), "sleep", json!({"ms": 1}), Some(json!("t"))));
    let id = RequestId::from_value(&json!(1)).unwrap();
    assert!(h
        .peer
        .log(&id, crate::mcp::LogLevel::Info, None, json!("before")));
    h.drain();
    h.now += Duration::from_secs(2);
    h.peer.handle_timeout(h.now);
    assert_eq!(h.drain().sent.len(), 1);
    assert!(!h
        .peer
        .log(&id, crate::mcp::LogLevel::Info, None, json!("after")));
    assert!(!h.peer.progress(h.now, &id, 5.0, None, Some("line".into())));
    h.now += Duration::from_secs(60);
    h.peer.handle_timeout(h.now);
    assert!(
        h.drain().sent.is_empty(),
        "a heartbeat for the answered request"
    );
}

#[test]
fn a_job_answer_goes_into_its_2025_03_26_batch() {
    let mut c = catalog();
    c.tool_background = vec![None, None, Some(Duration::from_secs(2)), None];
    c.add_job_tools().unwrap();
    let mut h = H {
        peer: Peer::server(Arc::new(c), Config::default()),
        now: Instant::now(),
    };
    let out = h.req(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}));
    assert_eq!(out.sent.len(), 1);
    let out = h.req(json!([
        {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1}}},
        {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}
    ]));
    assert!(out.sent.is_empty());
    h.peer
        .finish_tool(h.now, &RequestId::number(2), CallToolResult::text("b"));
    assert!(h.drain().sent.is_empty(), "held for the job answer");
    h.now += Duration::from_secs(2);
    h.peer.handle_timeout(h.now);
    let sent = h.drain().sent;
    assert_eq!(sent.len(), 1, "{sent:?}");
    let arr = sent[0].as_array().unwrap();
    assert_eq!(arr.len(), 2, "{sent:?}");
    assert!(arr
        .iter()
        .any(|r| r["id"] == 1 && r["result"]["_meta"]["stdmcp/job"]["id"] == "job-1"));
    // The job's end goes to job_wait, never to the batch again.
    assert!(finish_sleep(&mut h, json!(1), "slept").sent.is_empty());
}

#[test]
fn task_times_follow_the_now_the_peer_is_given() {
    let start = Instant::now();
    let wall = std::time::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let mut h = with_jobs(Config {
        wall_origin: Some((start, wall)),
        ..Config::default()
    });
    h.now = start;
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    h.req(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1},"_meta":meta}}));
    h.now += Duration::from_secs(2);
    h.peer.handle_timeout(h.now);
    let created = h.drain().sent.remove(0);
    assert_eq!(
        created["result"]["createdAt"], "2026-11-18T11:06:42.000Z",
        "{created}"
    );
    let task = created["result"]["taskId"].clone();
    h.now += Duration::from_millis(3_250);
    finish_sleep(&mut h, json!(1), "slept");
    let r = h.one(
        json!({"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":task,"_meta":meta}}),
    );
    assert_eq!(r["result"]["createdAt"], "2026-11-18T11:06:42.000Z", "{r}");
    assert_eq!(
        r["result"]["lastUpdatedAt"], "2026-11-18T11:06:45.250Z",
        "{r}"
    );
}
