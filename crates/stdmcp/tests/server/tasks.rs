//! The tasks extension of 2026-07-28 (`io.modelcontextprotocol/tasks`, README "Long runs:
//! Tasks"), served from the job store, against the everything example's fixtures
//! (`slow_compute`, `failing_job`, `protocol_error_job`: a run longer than 0.5 s becomes a
//! task, or a job for a request without the extension).
#![allow(clippy::unwrap_used)]

use crate::support::Proc;
use serde_json::{json, Value};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn meta(tasks: bool) -> Value {
    let caps = if tasks {
        json!({"extensions": {TASKS: {}}})
    } else {
        json!({})
    };
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": caps})
}

fn ask(p: &mut Proc, id: i64, method: &str, mut params: Value, tasks: bool) -> Value {
    params["_meta"] = meta(tasks);
    p.request(json!(id), method, params);
    p.response(&json!(id))
}

fn call(p: &mut Proc, id: i64, tool: &str, args: Value, tasks: bool) -> Value {
    ask(
        p,
        id,
        "tools/call",
        json!({"name": tool, "arguments": args}),
        tasks,
    )
}

/// Blocks until the job behind a task ended, through `job_wait` on the same store.
fn wait_ended(p: &mut Proc, id: i64, task: &str) {
    let r = call(p, id, "job_wait", json!({"id": task}), true);
    assert!(
        r["result"]["_meta"]["stdmcp/job"].is_null(),
        "still running: {r}"
    );
}

#[test]
fn a_declaring_request_gets_a_task_and_polls_it_to_the_end() {
    let mut p = Proc::everything();
    let d = ask(&mut p, 1, "server/discover", json!({}), false);
    assert_eq!(
        d["result"]["capabilities"]["extensions"][TASKS],
        json!({}),
        "{d}"
    );
    assert!(d["result"]["capabilities"].get("tasks").is_none(), "{d}");

    let r = call(
        &mut p,
        2,
        "slow_compute",
        json!({"seconds": 2, "label": "x"}),
        true,
    );
    let t = &r["result"];
    assert_eq!(t["resultType"], "task", "{r}");
    assert_eq!(t["status"], "working", "{r}");
    let id = t["taskId"].as_str().unwrap().to_owned();
    assert!(t["ttlMs"].as_u64().unwrap() > 0, "{r}");
    assert!(t["pollIntervalMs"].as_u64().unwrap() > 0, "{r}");
    assert!(t["createdAt"].as_str().unwrap().ends_with('Z'), "{r}");
    for absent in ["task", "result", "content", "requestState", "ttl"] {
        assert!(t.get(absent).is_none(), "{absent} in {r}");
    }
    let g = ask(&mut p, 3, "tasks/get", json!({"taskId": id}), true);
    assert_eq!(g["result"]["resultType"], "complete", "{g}");
    assert_eq!(g["result"]["status"], "working", "{g}");
    assert!(g["result"].get("result").is_none(), "{g}");

    wait_ended(&mut p, 4, &id);
    let g = ask(&mut p, 5, "tasks/get", json!({"taskId": id}), true);
    assert_eq!(g["result"]["status"], "completed", "{g}");
    assert_eq!(
        g["result"]["result"]["content"][0]["text"], "x: computed for 2 s",
        "{g}"
    );
    p.finish();
}

#[test]
fn tool_errors_complete_and_protocol_errors_fail() {
    let mut p = Proc::everything();
    let r = call(&mut p, 1, "failing_job", json!({}), true);
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    wait_ended(&mut p, 2, &id);
    let g = ask(&mut p, 3, "tasks/get", json!({"taskId": id}), true);
    assert_eq!(g["result"]["status"], "completed", "{g}");
    assert_eq!(g["result"]["result"]["isError"], true, "{g}");

    let r = call(&mut p, 4, "protocol_error_job", json!({}), true);
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    wait_ended(&mut p, 5, &id);
    let g = ask(&mut p, 6, "tasks/get", json!({"taskId": id}), true);
    assert_eq!(g["result"]["status"], "failed", "{g}");
    assert!(g["result"]["error"]["code"].is_i64(), "{g}");
    assert!(g["result"].get("result").is_none(), "{g}");
    p.finish();
}

#[test]
fn tasks_cancel_acks_and_the_task_ends_cancelled() {
    let mut p = Proc::everything();
    let r = call(&mut p, 1, "slow_compute", json!({"seconds": 600}), true);
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    let c = ask(&mut p, 2, "tasks/cancel", json!({"taskId": id}), true);
    assert_eq!(c["result"]["resultType"], "complete", "{c}");
    assert!(c["result"].get("status").is_none(), "{c}");
    let g = ask(&mut p, 3, "tasks/get", json!({"taskId": id}), true);
    assert_eq!(g["result"]["status"], "cancelled", "{g}");
    // Idempotent on an ended task; unknown ids are -32602.
    let c = ask(&mut p, 4, "tasks/cancel", json!({"taskId": id}), true);
    assert_eq!(c["result"]["resultType"], "complete", "{c}");
    let e = ask(&mut p, 5, "tasks/get", json!({"taskId": "nope"}), true);
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let e = ask(
        &mut p,
        6,
        "tasks/update",
        json!({"taskId": "nope", "inputResponses": {}}),
        true,
    );
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let e = ask(&mut p, 7, "tasks/result", json!({"taskId": id}), true);
    assert_eq!(e["error"]["code"], -32601, "{e}");
    p.finish();
}

#[test]
fn no_task_without_the_extension() {
    let mut p = Proc::everything();
    // 2026-07-28 without the extension: a job, not a task; the tasks methods need it.
    let r = call(&mut p, 1, "slow_compute", json!({"seconds": 600}), false);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert!(r["result"].get("taskId").is_none(), "{r}");
    let job = r["result"]["_meta"]["stdmcp/job"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let e = ask(&mut p, 2, "tasks/get", json!({"taskId": job}), false);
    assert_eq!(e["error"]["code"], -32021, "{e}");
    assert_eq!(
        e["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({}),
        "{e}"
    );
    // A tool that needs the extension is refused without it.
    let e = call(&mut p, 3, "failing_job", json!({}), false);
    assert_eq!(e["error"]["code"], -32021, "{e}");
    // A quick run is answered directly even with the extension.
    let r = call(&mut p, 4, "slow_compute", json!({"seconds": 0}), true);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let r = call(&mut p, 5, "job_cancel", json!({"id": job}), false);
    assert!(r["result"]["isError"].is_null(), "{r}");
    p.finish();
}

#[test]
fn the_handshake_era_gets_jobs_never_tasks() {
    let mut p = Proc::everything();
    p.request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25",
        "capabilities": {"tasks": {"requests": {}}, "extensions": {TASKS: {}}},
        "clientInfo": {"name": "t", "version": "0"}}),
    );
    let init = p.response(&json!(0));
    assert!(
        init["result"]["capabilities"].get("extensions").is_none(),
        "{init}"
    );
    assert!(
        init["result"]["capabilities"].get("tasks").is_none(),
        "{init}"
    );
    p.notify("notifications/initialized", json!({}));
    p.call(json!(1), "slow_compute", json!({"seconds": 600}), None);
    let r = p.response(&json!(1));
    assert!(r["result"].get("taskId").is_none(), "{r}");
    let job = r["result"]["_meta"]["stdmcp/job"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    p.request(json!(2), "tasks/get", json!({"taskId": job}));
    assert_eq!(p.response(&json!(2))["error"]["code"], -32601);
    p.call(json!(3), "job_cancel", json!({"id": job}), None);
    p.response(&json!(3));
    p.finish();
}

/// Polls `tasks/get` (as `wait_gone` polls /proc) until the task has `status`.
fn wait_status(p: &mut Proc, ids: &mut i64, task: &str, status: &str) -> Value {
    let deadline = std::time::Instant::now() + crate::support::PATIENCE;
    loop {
        *ids += 1;
        let g = ask(p, *ids, "tasks/get", json!({"taskId": task}), true);
        if g["result"]["status"] == status {
            return g;
        }
        assert!(std::time::Instant::now() < deadline, "never {status}: {g}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_task_asks_through_tasks_get_and_tasks_update() {
    let mut p = Proc::everything();
    let mut ids = 100;
    let caps = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}}});
    p.request(
        json!(1),
        "tools/call",
        json!({"name": "multi_input", "arguments": {}, "_meta": caps}),
    );
    let r = p.response(&json!(1));
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    let g = wait_status(&mut p, &mut ids, &id, "input_required");
    let keys: Vec<&String> = g["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["confirm", "name"], "{g}");
    assert_eq!(
        g["result"]["inputRequests"]["name"]["method"],
        "elicitation/create"
    );
    // A partial answer (and an unknown key) leaves the other question pending.
    let answer = |v: Value| json!({"action": "accept", "content": v});
    let u = ask(
        &mut p,
        2,
        "tasks/update",
        json!({"taskId": id,
        "inputResponses": {"name": answer(json!({"name": "Ada"})), "other": {}}}),
        true,
    );
    assert_eq!(u["result"]["resultType"], "complete", "{u}");
    let g = ask(&mut p, 3, "tasks/get", json!({"taskId": id}), true);
    assert_eq!(g["result"]["status"], "input_required", "{g}");
    let keys: Vec<&String> = g["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["confirm"], "{g}");
    ask(
        &mut p,
        4,
        "tasks/update",
        json!({"taskId": id,
        "inputResponses": {"confirm": answer(json!({"confirm": true}))}}),
        true,
    );
    let g = wait_status(&mut p, &mut ids, &id, "completed");
    let text = g["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("Ada") && text.contains("true"), "{g}");
    p.finish();
}
