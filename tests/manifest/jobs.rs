//! Jobs (README "Long runs"): a call still running after its tool's background delay is
//! answered with a job while its work goes on; `job_wait`, `job_cancel` and `jobs` reach it;
//! jobs die with the server. Driven through `stdmcp serve` with a manifest whose tool runs
//! for three minutes (tests/fixtures/long_job.sh) unless a release file appears.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use crate::common::{
    alive, fixture, pids_from_progress, send_signal, serve_manifest, stdmcp_check, temp_dir,
    wait_gone, Proc,
};
use serde_json::{json, Value};

fn manifest(dir: &Path) -> Value {
    json!({
        "name": "jobs-test",
        "defaults": {"killGraceMs": 300, "heartbeatSeconds": 0.05},
        "tools": [
            {"name": "long", "description": "runs for three minutes", "program": fixture("long_job.sh"),
             "progress": {"prefix": "PROGRESS "}, "env": {"RELEASE": dir.join("release")},
             "timeoutSeconds": 600, "background": {"afterSeconds": 2}},
            {"name": "quick", "description": "exits at once", "program": "true"}
        ]
    })
}

fn serve(env: &[(&str, &str)]) -> (Proc, PathBuf) {
    let dir = temp_dir("jobs");
    let p = serve_manifest(&manifest(&dir), &dir, env);
    (p, dir)
}

fn text(r: &Value) -> &str {
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

fn job_of(r: &Value) -> &Value {
    &r["result"]["_meta"]["stdmcp/job"]
}

/// Starts `long` as request 1 and returns its pids once it was answered with job-1, checking
/// that the answer came while both processes still ran.
fn start_job(p: &mut Proc) -> Vec<i32> {
    p.call(json!(1), "long", json!({}), Some(json!("t")));
    let pids = pids_from_progress(p, "t");
    let r = p.response(&json!(1));
    assert!(
        pids.iter().all(|pid| alive(*pid)),
        "the work must still run when the job answer arrives"
    );
    assert_eq!(job_of(&r)["id"], "job-1", "{r}");
    assert_eq!(job_of(&r)["state"], "working", "{r}");
    assert_eq!(job_of(&r)["tool"], "long", "{r}");
    assert!(r["result"]["isError"].is_null(), "{r}");
    let t = text(&r);
    assert!(t.contains("job_wait") && t.contains("job-1"), "{t}");
    assert!(t.contains("pids "), "the latest output lines: {t}");
    pids
}

#[test]
fn a_long_call_becomes_a_job_and_job_wait_returns_its_result() {
    let (mut p, dir) = serve(&[]);
    let pids = start_job(&mut p);

    // Listed without the output schema its job answers do not follow (clients check it).
    p.request(json!(9), "tools/list", json!({}));
    let tools = p.response(&json!(9));
    let listed = |name: &str| {
        let all = tools["result"]["tools"].as_array().unwrap();
        all.iter().find(|t| t["name"] == name).unwrap().clone()
    };
    assert!(listed("long").get("outputSchema").is_none(), "{tools}");
    assert!(listed("quick").get("outputSchema").is_some(), "{tools}");

    p.call(json!(2), "jobs", json!({}), None);
    let r = p.response(&json!(2));
    let jobs = &r["result"]["structuredContent"]["jobs"];
    assert_eq!(jobs[0]["id"], "job-1", "{r}");
    assert_eq!(jobs[0]["state"], "working", "{r}");
    assert!(text(&r).contains("job-1  long  working"), "{r}");

    // While it waits, job_wait's heartbeats carry the job's latest output line.
    p.call(
        json!(3),
        "job_wait",
        json!({"id": "job-1", "seconds": 1}),
        Some(json!("w")),
    );
    let beat = p.recv_where("a job_wait heartbeat", |m| {
        m["params"]["progressToken"] == "w"
    });
    assert!(
        beat["params"]["message"]
            .as_str()
            .unwrap()
            .starts_with("pids "),
        "{beat}"
    );
    let r = p.response(&json!(3));
    assert_eq!(job_of(&r)["state"], "working", "{r}");
    assert!(text(&r).contains("still running"), "{r}");

    std::fs::write(dir.join("release"), "").unwrap();
    p.call(json!(4), "job_wait", json!({"id": "job-1"}), None);
    let r = p.response(&json!(4));
    assert!(r["result"]["isError"].is_null(), "{r}");
    assert!(
        text(&r).contains("released after the wait"),
        "the tool's own result: {r}"
    );
    assert_eq!(r["result"]["structuredContent"]["exitCode"], 0, "{r}");
    assert!(job_of(&r).is_null(), "{r}");
    wait_gone(&pids);

    // The result stays readable; a wrong id is a tool error the model can correct.
    p.call(json!(5), "job_wait", json!({"id": "job-1"}), None);
    assert!(text(&p.response(&json!(5))).contains("released after the wait"));
    p.call(json!(6), "job_wait", json!({"id": "job-9"}), None);
    let r = p.response(&json!(6));
    assert_eq!(r["result"]["isError"], true, "{r}");
    p.finish();
}

#[test]
fn job_cancel_kills_the_tree_but_cancelling_the_call_or_the_wait_does_not() {
    let (mut p, _dir) = serve(&[]);
    let pids = start_job(&mut p);

    // The request was answered: a late cancel of it must not stop the job.
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    p.call(
        json!(2),
        "job_wait",
        json!({"id": "job-1", "seconds": 1}),
        None,
    );
    let r = p.response(&json!(2));
    assert_eq!(job_of(&r)["state"], "working", "{r}");
    assert!(pids.iter().all(|pid| alive(*pid)));

    // Cancelling a job_wait ends the wait only.
    p.call(
        json!(3),
        "job_wait",
        json!({"id": "job-1"}),
        Some(json!("w")),
    );
    p.recv_where("a job_wait heartbeat", |m| {
        m["params"]["progressToken"] == "w"
    });
    p.notify("notifications/cancelled", json!({"requestId": 3}));
    p.call(
        json!(4),
        "job_wait",
        json!({"id": "job-1", "seconds": 1}),
        None,
    );
    let r = p.response(&json!(4));
    assert_eq!(job_of(&r)["state"], "working", "{r}");
    assert!(pids.iter().all(|pid| alive(*pid)));

    p.call(json!(5), "job_cancel", json!({"id": "job-1"}), None);
    let r = p.response(&json!(5));
    assert!(text(&r).contains("is cancelled"), "{r}");
    wait_gone(&pids);
    p.call(json!(6), "job_wait", json!({"id": "job-1"}), None);
    let r = p.response(&json!(6));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text(&r).contains("was cancelled"), "{r}");
    p.call(json!(7), "jobs", json!({}), None);
    let r = p.response(&json!(7));
    assert_eq!(
        r["result"]["structuredContent"]["jobs"][0]["state"],
        "cancelled"
    );

    let (rest, _) = p.finish();
    assert!(
        rest.iter().all(|m| m["id"] != json!(3)),
        "a cancelled job_wait was answered"
    );
}

#[test]
fn jobs_die_with_the_server_at_stdin_eof() {
    let (mut p, _dir) = serve(&[("STDMCP_DRAIN_MS", "100")]);
    let pids = start_job(&mut p);
    p.close_stdin();
    let (_, status) = p.drain_to_exit();
    assert!(status.success(), "{status:?}");
    wait_gone(&pids);
}

#[test]
fn jobs_die_with_the_server_at_sigterm() {
    let (mut p, _dir) = serve(&[("STDMCP_DRAIN_MS", "100")]);
    let pids = start_job(&mut p);
    send_signal(p.pid(), 15);
    let (_, status) = p.drain_to_exit();
    assert!(status.success(), "{status:?}");
    wait_gone(&pids);
}

#[test]
fn jobs_die_with_the_server_at_sigkill() {
    let (mut p, _dir) = serve(&[]);
    let pids = start_job(&mut p);
    send_signal(p.pid(), 9);
    p.wait_exit();
    wait_gone(&pids);
}

#[test]
fn the_job_store_is_capped() {
    let (mut p, _dir) = serve(&[("STDMCP_MAX_JOBS", "1")]);
    let pids = start_job(&mut p);
    // A second long call finds the store full of a working job: it stays a plain call, which
    // a cancel stops as any call.
    p.call(json!(2), "long", json!({}), Some(json!("u")));
    let more = pids_from_progress(&mut p, "u");
    // Heartbeats count the seconds the call has run: past its 2 s delay, it is still a call.
    p.recv_where("a heartbeat after 2.5 s", |m| {
        m["params"]["progressToken"] == "u"
            && m["params"]["progress"].as_f64().unwrap_or(0.0) >= 2.5
    });
    p.call(json!(3), "jobs", json!({}), None);
    let r = p.response(&json!(3));
    assert_eq!(
        r["result"]["structuredContent"]["jobs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    p.notify("notifications/cancelled", json!({"requestId": 2}));
    wait_gone(&more);
    p.call(json!(4), "job_cancel", json!({"id": "job-1"}), None);
    p.response(&json!(4));
    wait_gone(&pids);
    let (rest, _) = p.finish();
    assert!(
        rest.iter().all(|m| m["id"] != json!(2)),
        "request 2 became a job"
    );
}

/// `stdmcp check` on a manifest with these defaults and one tool with these extra keys.
fn check(defaults: Value, tool: Value) -> (i32, String) {
    let mut t = json!({"name": "t", "description": "d", "program": "true"});
    t.as_object_mut()
        .unwrap()
        .extend(tool.as_object().unwrap().clone());
    let m = json!({"name": "c", "defaults": defaults, "tools": [t]});
    let (code, out, err) = stdmcp_check(&temp_dir("jobs-check"), &m);
    (code, out + &err)
}

#[test]
fn check_refuses_bad_background_values() {
    let bad = [
        (json!({"background": {"afterSeconds": 0}}), "tools[0].background.afterSeconds: must be at least 1"),
        (json!({"background": {"afterSeconds": -5}}), "tools[0].background.afterSeconds: must be at least 1"),
        (json!({"background": {"afterSeconds": 1.5}}), "tools[0].background.afterSeconds: must be a whole number of seconds, not 1.5"),
        (json!({"background": {"afterSeconds": "2"}}), "tools[0].background.afterSeconds: must be a whole number of seconds"),
        (json!({"background": {}}), "tools[0].background.afterSeconds: is required"),
        (json!({"background": {"afterSeconds": 2, "every": 1}}), "tools[0].background.every: unknown field"),
        (json!({"background": true}), "tools[0].background: must be an object"),
        (json!({"background": {"afterSeconds": 60}}), "tools[0].background.afterSeconds: it (60 s) must be less than the tool's timeoutSeconds (60 s)"),
        (json!({"timeoutSeconds": 10, "background": {"afterSeconds": 30}}), "must be less than the tool's timeoutSeconds (10 s)"),
        (json!({"name": "jobs", "background": {"afterSeconds": 2}}), "tools[0].name: jobs is the name of a built-in job tool"),
    ];
    for (tool, expected) in bad {
        let (code, out) = check(json!({}), tool.clone());
        assert_ne!(code, 0, "{tool} was accepted");
        assert!(
            out.contains(expected),
            "{tool}: expected {expected:?} in:\n{out}"
        );
    }
    // Inherited from the defaults: the tool's shorter deadline is what is wrong.
    let (code, out) = check(
        json!({"background": {"afterSeconds": 30}}),
        json!({"timeoutSeconds": 5}),
    );
    assert_ne!(code, 0);
    assert!(
        out.contains("tools[0].timeoutSeconds: defaults.background.afterSeconds (30 s) must be less than the tool's timeoutSeconds (5 s)"),
        "{out}"
    );
    let (code, out) = check(json!({"background": {"afterSeconds": 0}}), json!({}));
    assert_ne!(code, 0);
    assert!(
        out.contains("defaults.background.afterSeconds: must be at least 1"),
        "{out}"
    );
    // Good values, and a tool opting out of the defaults' delay.
    for (defaults, tool) in [
        (json!({}), json!({"background": {"afterSeconds": 2}})),
        (json!({"background": {"afterSeconds": 30}}), json!({})),
        (
            json!({"background": {"afterSeconds": 30}}),
            json!({"timeoutSeconds": 5, "background": false}),
        ),
    ] {
        let (code, out) = check(defaults.clone(), tool.clone());
        assert_eq!(code, 0, "{defaults} {tool}: {out}");
        let shown = out.contains("background: a call still running after");
        assert_eq!(shown, tool["background"] != false, "{out}");
    }
}
